//! Seed 004's promise, per capability: a preview writes nothing, and executing the plan does
//! exactly what it said. Each test previews, checks the world is as it was (so executing now is
//! executing against the previewed state), executes, and holds the execution journal and the
//! changed tables against the preview's effects.

use std::collections::BTreeSet;

use crate::common::{approve_by, grant, journal_rows, retention, world_diff, Gateway, GRANT};
use axum::http::StatusCode;
use serde_json::{json, Value};

/// Previews, executes with the approvals the plan needs, and compares journal and world.
async fn paired(gw: &Gateway, capability: &str, params: Value) -> (Value, Value) {
    let before = gw.snapshot().await;
    let plan = gw.preview(capability, params).await;
    assert_eq!(
        gw.snapshot().await,
        before,
        "the preview of {capability} wrote"
    );
    assert_eq!(plan["executable"], true, "{plan}");

    let approvers = [gw.enroll("Dana").await, gw.enroll("Eli").await];
    if plan["would_require_approval"] == true {
        let needed = if capability == "groups.members.remove" {
            2
        } else {
            1
        };
        let refs: Vec<_> = approvers.iter().take(needed).collect();
        approve_by(gw, &plan, &refs).await;
    }
    let world_before = world_diff::rows(gw.state.store.pool()).await;
    let reply = gw
        .invoke_as(&gw.agent, capability, json!({"plan_id": plan["plan_id"]}))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let world_after = world_diff::rows(gw.state.store.pool()).await;
    assert_eq!(
        reply.body["metadata"]["charged"]["amount"],
        plan["estimated_cost"]["amount_max"]
    );

    let plan_id = plan["plan_id"].as_str().unwrap();
    let audit = gw
        .call(
            "GET",
            &format!("/v1/audit?plan_id={plan_id}"),
            Some(&approvers[0].token),
            None,
        )
        .await;
    let journal = audit.body["executions"][0]["journal"].clone();
    let journal = journal.as_array().unwrap();
    let effects = plan["effects"].as_array().unwrap();
    assert_eq!(journal.len(), effects.len(), "{journal:?}");
    for (entry, effect) in journal.iter().zip(effects) {
        for member in ["type", "resource"] {
            assert_eq!(entry[member], effect[member]);
        }
        assert_eq!(entry["effect_id"], effect["id"]);
        let planned: Vec<String> = match effect["subjects"]["total"].as_u64() {
            Some(_) => {
                let id = effect["id"].as_str().unwrap();
                gw.all_subjects(&approvers[0].token, plan_id, id, 1000)
                    .await
            }
            None => vec![],
        };
        let done: Vec<String> =
            serde_json::from_value(entry["subjects"].clone()).unwrap_or_default();
        assert_eq!(done, planned, "subjects of {}", effect["id"]);
        let changes = if effect["changes"].is_null() {
            json!(null)
        } else {
            effect["changes"].clone()
        };
        let journaled = if entry["changes"].is_null() {
            json!(null)
        } else {
            entry["changes"].clone()
        };
        assert_eq!(journaled, changes, "changes of {}", effect["id"]);
    }
    // Nothing else: the whole world's difference is the journal's, row for row, value for value.
    let charged = reply.body["metadata"]["charged"]["amount"]
        .as_str()
        .unwrap();
    journal_rows::assert_nothing_else(&plan, journal, &world_before, &world_after, charged);
    let notified: Vec<String> =
        sqlx::query_scalar("SELECT user_id FROM email_outbox WHERE plan_id = $1 ORDER BY user_id")
            .bind(plan_id)
            .fetch_all(gw.state.store.pool())
            .await
            .unwrap();
    let mut to_notify = BTreeSet::new();
    for effect in effects.iter().filter(|e| e["kind"] == "notify") {
        let id = effect["id"].as_str().unwrap();
        to_notify.extend(
            gw.all_subjects(&approvers[0].token, plan_id, id, 1000)
                .await,
        );
    }
    assert_eq!(notified, to_notify.into_iter().collect::<Vec<_>>());
    (plan, reply.body)
}

async fn column(gw: &Gateway, sql: &str) -> Vec<String> {
    sqlx::query_scalar(sql)
        .fetch_all(gw.state.store.pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn settings_update_does_what_it_previewed() {
    let gw = Gateway::new().await;
    let held = column(&gw, "SELECT expires_at FROM project_items WHERE legal_hold = 1 AND project_id = 'prj_184' ORDER BY id").await;
    let (plan, _) = paired(&gw, "projects.settings.update", retention("prj_184", 14)).await;
    assert_eq!(plan["effects"][1]["subjects"]["total"], 18);
    let days = column(
        &gw,
        "SELECT CAST(retention_days AS TEXT) FROM projects WHERE id = 'prj_184'",
    )
    .await;
    assert_eq!(days, ["14"]);
    let still_held = column(&gw, "SELECT expires_at FROM project_items WHERE legal_hold = 1 AND project_id = 'prj_184' ORDER BY id").await;
    assert_eq!(still_held, held, "items under legal hold keep their expiry");
}

#[tokio::test]
async fn bulk_removal_does_what_it_previewed() {
    let gw = Gateway::new().await;
    let on_call_before = column(
        &gw,
        "SELECT user_id FROM entitlement_holders WHERE entitlement_id = 'on_call' ORDER BY 1",
    )
    .await;
    let (plan, _) = paired(
        &gw,
        "groups.members.remove",
        json!({"group": "grp_support", "filter": {"employment": "contractor"}}),
    )
    .await;
    let left = column(
        &gw,
        "SELECT m.user_id FROM group_members m WHERE m.group_id = 'grp_support' ORDER BY 1",
    )
    .await;
    assert!(left
        .iter()
        .all(|u| !("usr_01"..="usr_37").contains(&u.as_str())));
    assert_eq!(left.len(), 8, "the employees stay");
    let on_call_after = column(
        &gw,
        "SELECT user_id FROM entitlement_holders WHERE entitlement_id = 'on_call' ORDER BY 1",
    )
    .await;
    let lost: Vec<&String> = on_call_before
        .iter()
        .filter(|u| !on_call_after.contains(u))
        .collect();
    assert_eq!(
        lost,
        plan["effects"][2]["subjects"]["sample"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect::<Vec<_>>()
    );
    let revision = column(
        &gw,
        "SELECT CAST(revision AS TEXT) FROM groups WHERE id = 'grp_support'",
    )
    .await;
    assert_eq!(revision, ["42"]);
}

#[tokio::test]
async fn grant_does_what_it_previewed() {
    let gw = Gateway::new().await;
    paired(&gw, GRANT, grant("prj_184", "usr_92", "admin")).await;
    let role = column(
        &gw,
        "SELECT role FROM project_members WHERE project_id = 'prj_184' AND user_id = 'usr_92'",
    )
    .await;
    assert_eq!(role, ["admin"]);
    let used = column(&gw, "SELECT CAST(used AS TEXT) FROM seat_pools").await;
    assert_eq!(used, ["5"]);
}

#[tokio::test]
async fn quota_update_does_what_it_previewed() {
    let gw = Gateway::new().await;
    paired(
        &gw,
        "storage.quota.update",
        json!({"quota": "sq_product", "quota_bytes": 80_000_000}),
    )
    .await;
    let blocked = column(
        &gw,
        "SELECT id FROM projects WHERE uploads_blocked = 1 ORDER BY id",
    )
    .await;
    assert_eq!(blocked, ["prj_184", "prj_311", "prj_420"]);
    paired(
        &gw,
        "storage.quota.update",
        json!({"quota": "sq_product", "quota_bytes": 125_000_000}),
    )
    .await;
    let blocked = column(
        &gw,
        "SELECT id FROM projects WHERE uploads_blocked = 1 ORDER BY id",
    )
    .await;
    assert_eq!(blocked, ["prj_420"]);
}

#[tokio::test]
async fn upload_does_what_it_previewed() {
    let gw = Gateway::new().await;
    let (_, reply) = paired(
        &gw,
        "documents.document.upload",
        json!({"project": "prj_421", "filename": "brief.md", "mime_type": "text/markdown", "size_bytes": 2048}),
    )
    .await;
    let id = reply["metadata"]["document_id"].as_str().unwrap();
    let stored = column(
        &gw,
        &format!("SELECT filename FROM documents WHERE id = '{id}'"),
    )
    .await;
    assert_eq!(stored, ["brief.md"]);
    let spent = column(
        &gw,
        "SELECT spent_credits FROM wallets WHERE agent_id = 'agt_ops'",
    )
    .await;
    assert_eq!(spent, ["0.09"]);
}

#[tokio::test]
async fn no_preview_of_any_capability_changes_the_world() {
    let gw = Gateway::new().await;
    let before = gw.snapshot().await;
    let requests = [
        ("projects.settings.update", retention("prj_184", 7)),
        ("projects.settings.update", retention("prj_nope", 7)),
        (
            "groups.members.remove",
            json!({"group": "grp_support", "filter": {"employment": "contractor"}}),
        ),
        (
            "groups.members.remove",
            json!({"group": "grp_all_staff", "filter": {"employment": "contractor"}}),
        ),
        (GRANT, grant("prj_184", "usr_92", "admin")),
        (GRANT, grant("prj_184", "usr_40", "admin")),
        (
            "storage.quota.update",
            json!({"quota": "sq_product", "quota_bytes": 1}),
        ),
        (
            "documents.document.upload",
            json!({"project": "prj_184", "filename": "a.pdf", "mime_type": "application/pdf", "size_bytes": 5}),
        ),
        (
            "documents.document.upload",
            json!({"project": "prj_184", "filename": "a.pdf", "mime_type": "video/mp4", "size_bytes": -5}),
        ),
    ];
    for (capability, params) in requests {
        let reply = gw.try_preview(capability, params).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    }
    assert_eq!(gw.snapshot().await, before);
    let audited: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM preview_audit")
        .fetch_one(gw.state.store.pool())
        .await
        .unwrap();
    assert_eq!(
        audited, 9,
        "every preview is in the preview audit, and only there"
    );
    let executions: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM execution_audit")
        .fetch_one(gw.state.store.pool())
        .await
        .unwrap();
    assert_eq!(executions, 0);
}
