//! What a plan tells its approver beyond the signed preview, and which plans reach an approver at
//! all (issue 8): no-op plans, distinct subjects, named consequences, the wallet, staleness.

use crate::common::{approve_by, assert_error, grant, retention, Gateway, GRANT, RETENTION};
use axum::http::StatusCode;
use serde_json::{json, Value};

const QUEUE: &str = "/v1/approvals?status=pending";

fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/../../../shared/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

async fn listed(gw: &Gateway, token: &str) -> Vec<Value> {
    let reply = gw.call("GET", QUEUE, Some(token), None).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.body["items"].as_array().unwrap().clone()
}

async fn events_of(gw: &Gateway, plan_id: &str) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM plan_events WHERE plan_id = $1")
        .bind(plan_id)
        .fetch_one(gw.state.store.pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn a_plan_that_changes_nothing_waits_for_nobody_and_never_enters_the_queue() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let unchanged = gw.dry_run(retention("prj_184", 30)).await;
    let granted = gw
        .preview(GRANT, grant("prj_184", "usr_40", "editor"))
        .await;
    let missing = gw.dry_run(retention("prj_missing", 14)).await;
    let real = gw.dry_run(retention("prj_184", 14)).await;

    for (plan, code) in [
        (&unchanged, "no_change"),
        (&granted, "already_granted"),
        (&missing, "project_not_found"),
    ] {
        let plan_id = plan["plan_id"].as_str().unwrap();
        assert_eq!(plan["effects"], json!([]), "{code}");
        assert_eq!(plan["would_require_approval"], false, "{code}");
        assert_eq!(
            plan["validation"][0]["code"], code,
            "the reason stays in the plan"
        );
        let record = gw.record(&dana.token, plan_id).await;
        assert_eq!(record.body["status"], "approved", "{code}");
        assert_eq!(
            record.body["approvals"]["required"], 0,
            "{code}: nobody's approval is awaited"
        );
        assert_eq!(events_of(&gw, plan_id).await, 0, "{code}: no event");
    }
    let queued: Vec<Value> = listed(&gw, &dana.token)
        .await
        .iter()
        .map(|s| s["plan_id"].clone())
        .collect();
    assert_eq!(queued, [real["plan_id"].clone()]);

    // Its invoke runs like any plan that needs nobody: nothing to do, said so.
    let ran = gw.invoke(json!({"plan_id": unchanged["plan_id"]})).await;
    assert_eq!(ran.status, StatusCode::OK, "{}", ran.body);
    assert_eq!(ran.body["metadata"]["effects_applied"], json!([]));
    let ran = gw.execute(&granted).await;
    assert_eq!(ran.status, StatusCode::OK, "{}", ran.body);
    // A blocked one still never runs, and says why.
    let refused = gw.invoke(json!({"plan_id": missing["plan_id"]})).await;
    assert_error(&refused, "validation_error", 422);
    assert_eq!(
        refused.body["error"]["details"]["validation"][0]["code"],
        "project_not_found"
    );
}

#[tokio::test]
async fn the_queue_counts_each_subject_once_across_effects() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let bulk = gw
        .preview(
            "groups.members.remove",
            fixture("plan-bulk.json")["request"]["params"].clone(),
        )
        .await;
    let per_effect: u64 = bulk["effects"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["subjects"]["total"].as_u64())
        .sum();
    assert_eq!(
        per_effect, 84,
        "37 removed, 4 retained, 6 on call, 37 notified"
    );
    let summary = listed(&gw, &dana.token).await.remove(0);
    assert_eq!(summary["plan_id"], bulk["plan_id"]);
    assert_eq!(summary["subjects_total"], 37);

    // Kept with the plan: a decision rewrites the summary and the count stays.
    approve_by(&gw, &bulk, &[&dana]).await;
    let summary = listed(&gw, &dana.token).await.remove(0);
    assert_eq!(summary["approvals"]["received"][0]["display_name"], "Dana");
    assert_eq!(summary["subjects_total"], 37);
}

#[tokio::test]
async fn the_retention_preview_names_each_item_with_its_expiry_before_and_after() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let plan = gw.dry_run(retention("prj_184", 14)).await;
    let plan_id = plan["plan_id"].as_str().unwrap();
    let page = gw
        .call(
            "GET",
            &format!("/v1/plans/{plan_id}/effects/eff_2/subjects"),
            Some(&dana.token),
            None,
        )
        .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let items = page.body["items"].as_array().unwrap();
    assert_eq!(items.len(), 18);
    let pool = gw.state.store.pool();
    for item in items {
        let (title, expires_at, recalculated): (String, String, String) = sqlx::query_as(&format!(
            "SELECT title, expires_at, {} FROM project_items WHERE id = $1",
            gw.state.store.dialect().days_after("created_at", "14")
        ))
        .bind(item["id"].as_str().unwrap())
        .fetch_one(pool)
        .await
        .unwrap();
        assert_eq!(item["label"], title.as_str());
        assert_eq!(item["detail"]["expires_before"], expires_at.as_str());
        assert_eq!(item["detail"]["expires_after"], recalculated.as_str());
    }

    // The held items by name, beside the warning that counts them.
    let record = gw.record(&dana.token, plan_id).await;
    let named = &record.body["validation_subjects"];
    assert_eq!(named[0]["code"], "legal_hold_items_skipped");
    assert_eq!(named[0]["total"], 2);
    let held: Vec<(&str, &str)> = named[0]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["id"].as_str().unwrap(), i["label"].as_str().unwrap()))
        .collect();
    let expected: Vec<(String, String)> = sqlx::query_as(
        "SELECT id, title FROM project_items WHERE project_id = 'prj_184' AND legal_hold = 1
         ORDER BY id",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    let expected: Vec<(&str, &str)> = expected
        .iter()
        .map(|(id, title)| (id.as_str(), title.as_str()))
        .collect();
    assert_eq!(held, expected);
    assert_eq!(held[0].0, "itm_19");

    // What the preview said is what execution wrote.
    approve_by(&gw, &plan, &[&dana]).await;
    let ran = gw.invoke(json!({"plan_id": plan_id})).await;
    assert_eq!(ran.status, StatusCode::OK, "{}", ran.body);
    for item in items {
        let now: String = sqlx::query_scalar("SELECT expires_at FROM project_items WHERE id = $1")
            .bind(item["id"].as_str().unwrap())
            .fetch_one(pool)
            .await
            .unwrap();
        assert_eq!(item["detail"]["expires_after"], now.as_str());
    }
}

#[tokio::test]
async fn the_plan_record_carries_its_title_and_the_agents_wallet() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let ada = gw.enroll("Ada").await;
    let bulk = gw
        .preview(
            "groups.members.remove",
            fixture("plan-bulk.json")["request"]["params"].clone(),
        )
        .await;
    let plan_id = bulk["plan_id"].as_str().unwrap();
    let record = gw.record(&dana.token, plan_id).await;
    assert_eq!(record.body["title"], "Remove members from a group");
    assert_eq!(
        record.body["wallet"],
        json!({"agent_id": "agt_ops", "remaining_credits": "50.00", "limit_credits": "50.00"})
    );
    approve_by(&gw, &bulk, &[&dana, &ada]).await;
    let ran = gw
        .invoke_as(
            &gw.agent,
            "groups.members.remove",
            json!({ "plan_id": plan_id }),
        )
        .await;
    assert_eq!(ran.status, StatusCode::OK, "{}", ran.body);
    let record = gw.record(&dana.token, plan_id).await;
    assert_eq!(record.body["wallet"]["remaining_credits"], "49.63");
}

#[tokio::test]
async fn a_bulk_plan_the_wallet_cannot_pay_says_so_and_cannot_be_approved() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let plan = gw
        .preview(
            "groups.members.remove",
            json!({"group": "grp_all_staff", "filter": {"employment": "employee"}}),
        )
        .await;
    assert_eq!(plan["estimated_cost"]["amount_max"], "1000.00");
    assert_eq!(plan["executable"], false);
    let blocker = &plan["validation"][0];
    assert_eq!(blocker["code"], "insufficient_budget");
    assert_eq!(blocker["severity"], "error");
    assert_eq!(blocker["blocks_execution"], true);
    assert_eq!(blocker["path"], "/estimated_cost/amount_max");
    let message = blocker["message"].as_str().unwrap();
    assert!(
        message.contains("1000.00") && message.contains("50.00") && message.contains("agt_ops"),
        "{message}"
    );
    assert!(blocker["repair"].as_str().unwrap().contains("50.00"));

    // It never reaches a person: not listed, no event for the live queues; opened by its id, it
    // says it is blocked, and nobody can sign it.
    let plan_id = plan["plan_id"].as_str().unwrap();
    assert!(listed(&gw, &dana.token).await.is_empty());
    assert_eq!(events_of(&gw, plan_id).await, 0);
    let opened = gw.record(&dana.token, plan_id).await;
    assert_eq!(opened.status, StatusCode::OK, "{}", opened.body);
    assert_eq!(opened.body["plan"]["executable"], false);
    let approve = dana.sign(&dana.statement(&gw, &plan));
    assert_error(
        &dana.send(&gw, plan_id, &approve).await,
        "plan_not_pending",
        409,
    );

    // Its agent refreshes it; the successor, blocked as well, stays with the agent too.
    let refreshed = gw.refresh(&gw.agent, plan_id).await;
    assert_eq!(refreshed.status, StatusCode::OK, "{}", refreshed.body);
    assert_eq!(refreshed.body["plan"]["executable"], false);
    assert!(listed(&gw, &dana.token).await.is_empty());
    let successor = refreshed.body["plan"]["plan_id"].as_str().unwrap();
    assert_eq!(events_of(&gw, successor).await, 0);

    // A plan the wallet pays carries no such entry.
    let small = gw
        .preview(
            "groups.members.remove",
            fixture("plan-bulk.json")["request"]["params"].clone(),
        )
        .await;
    assert_eq!(small["executable"], true);
}

#[tokio::test]
async fn a_mismatched_expected_revision_blocks_the_plan_and_keeps_it_from_approvers() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let params = retention("prj_311", 21);
    let first = gw.preview(RETENTION, params.clone()).await;
    let read = &first["read_revisions"][0];
    let (resource, revision) = (read["resource"].as_str().unwrap(), &read["revision"]);
    let path = format!("/v1/capabilities/{RETENTION}/dry_run");
    let dry_run = |expected: Value| {
        let body = json!({"params": params, "expected_revisions": expected});
        gw.call("POST", &path, Some(&gw.agent), Some(body))
    };

    // The revision the agent saw is the current one: nothing blocks.
    let current = dry_run(json!({ resource: revision })).await;
    assert_eq!(current.status, StatusCode::OK, "{}", current.body);
    assert_eq!(current.body["executable"], true);

    // An older one: the plan says so, blocking, and it reaches no approver.
    let moved = dry_run(json!({ resource: "1" })).await;
    assert_eq!(moved.status, StatusCode::OK, "{}", moved.body);
    assert_eq!(moved.body["executable"], false);
    let conflict = moved.body["validation"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["code"] == "version_conflict")
        .unwrap_or_else(|| panic!("no version_conflict in {}", moved.body));
    assert_eq!(conflict["blocks_execution"], true);
    assert_eq!(conflict["path"], "/expected_revisions");
    assert!(conflict["message"].as_str().unwrap().contains(resource));
    let queued: Vec<Value> = listed(&gw, &dana.token).await;
    let ids: Vec<&Value> = queued.iter().map(|s| &s["plan_id"]).collect();
    assert!(ids.contains(&&current.body["plan_id"]), "{ids:?}");
    assert!(!ids.contains(&&moved.body["plan_id"]), "{ids:?}");
}

#[tokio::test]
async fn an_executed_plan_reports_no_staleness_from_its_own_writes() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let granted = gw
        .approved_by(GRANT, grant("prj_421", "usr_92", "viewer"), &[&dana])
        .await;
    let ran = gw.execute(&granted).await;
    assert_eq!(ran.status, StatusCode::OK, "{}", ran.body);
    let record = gw
        .record(&dana.token, granted["plan_id"].as_str().unwrap())
        .await;
    assert_eq!(record.body["status"], "executed");
    assert_eq!(record.body["stale"], Value::Null, "{}", record.body);

    // A waiting plan whose read moved says what moved; once expired it is over, not stale.
    let waiting = gw.dry_run(retention("prj_421", 30)).await;
    let other = gw
        .approved_by(GRANT, grant("prj_421", "usr_42", "viewer"), &[&dana])
        .await;
    let ran = gw.execute(&other).await;
    assert_eq!(ran.status, StatusCode::OK, "{}", ran.body);
    let waiting_id = waiting["plan_id"].as_str().unwrap();
    let record = gw.record(&dana.token, waiting_id).await;
    assert_eq!(record.body["status"], "stale");
    assert_eq!(
        record.body["stale"]["moved"][0]["resource"],
        "projects/prj_421"
    );
    gw.expire(waiting_id).await;
    let record = gw.record(&dana.token, waiting_id).await;
    assert_eq!(record.body["status"], "expired");
    assert_eq!(record.body["stale"], Value::Null, "{}", record.body);
}
