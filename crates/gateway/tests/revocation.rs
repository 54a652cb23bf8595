//! Revocation reaches back: approvals given with a key or by an approver later revoked stop
//! counting for every plan not yet executed (a plan approved only with them waits again, with an
//! event, and invoke checks again), an open event stream of a revoked approver ends, and a
//! revoked agent's MCP wait ends.

use std::time::Duration;

use crate::common::sse::Events;
use crate::common::{approve_by, assert_error, retention, Gateway, RETENTION};
use countersign_engine::{approval::revocation, Store};
use serde_json::{json, Value};

const REMOVE: &str = "groups.members.remove";

async fn events_after(gw: &Gateway) -> i64 {
    sqlx::query_scalar("SELECT COALESCE(MAX(revision), 0) FROM plan_events")
        .fetch_one(gw.state.store.pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn a_plan_approved_only_by_a_revoked_approver_waits_again() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let plan = gw
        .approved_by(RETENTION, retention("prj_184", 14), &[&dana])
        .await;
    let plan_id = plan["plan_id"].as_str().unwrap();
    let before = events_after(&gw).await;
    revocation::revoke_approver(&gw.state.store, gw.state.registry, &dana.id)
        .await
        .unwrap();

    let eli = gw.enroll("Eli").await;
    let record = gw.record(&eli.token, plan_id).await.body;
    assert_eq!(record["status"], "pending_approval");
    assert_eq!(record["approvals"]["received"], json!([]));
    let summary: Value = serde_json::from_str(
        &sqlx::query_scalar::<_, String>("SELECT summary FROM plans WHERE id = $1")
            .bind(plan_id)
            .fetch_one(gw.state.store.pool())
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(summary["status"], "pending_approval", "the queue shows it");
    assert!(events_after(&gw).await > before, "consoles hear of it");
    assert_error(&gw.execute(&plan).await, "approval_required", 409);
    // The envelope stays in the audit, marked withdrawn.
    let audit = gw
        .call(
            "GET",
            &format!("/v1/audit?plan_id={plan_id}"),
            Some(&eli.token),
            None,
        )
        .await
        .body;
    assert!(audit["decisions"][0]["withdrawn_at"].is_string(), "{audit}");
}

#[tokio::test]
async fn a_revoked_key_takes_back_one_of_two_approvals() {
    let gw = Gateway::new().await;
    let (dana, eli) = (gw.enroll("Dana").await, gw.enroll("Eli").await);
    let removal = gw
        .preview(
            REMOVE,
            json!({"group": "grp_support",
        "filter": {"employment": "contractor"}}),
        )
        .await;
    let approved = approve_by(&gw, &removal, &[&dana, &eli]).await;
    assert_eq!(approved.body["status"], "approved");
    revocation::revoke_key(&gw.state.store, gw.state.registry, &eli.key_id)
        .await
        .unwrap();
    let record = gw
        .record(&dana.token, removal["plan_id"].as_str().unwrap())
        .await
        .body;
    assert_eq!(record["status"], "pending_approval");
    assert_eq!(record["approvals"]["received"].as_array().unwrap().len(), 1);
    assert_error(&gw.execute(&removal).await, "approval_required", 409);
    // A new approver makes up the quorum again, and the plan runs.
    let fay = gw.enroll("Fay").await;
    assert_eq!(
        approve_by(&gw, &removal, &[&fay]).await.body["status"],
        "approved"
    );
    assert_eq!(gw.execute(&removal).await.status, 200);
}

#[tokio::test]
async fn an_executed_plan_keeps_the_approvals_it_ran_on() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let plan = gw
        .approved_by(RETENTION, retention("prj_184", 14), &[&dana])
        .await;
    assert_eq!(gw.execute(&plan).await.status, 200);
    revocation::revoke_approver(&gw.state.store, gw.state.registry, &dana.id)
        .await
        .unwrap();
    let eli = gw.enroll("Eli").await;
    let record = gw
        .record(&eli.token, plan["plan_id"].as_str().unwrap())
        .await
        .body;
    assert_eq!(record["status"], "executed");
    assert_eq!(record["approvals"]["received"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_revoked_approvers_event_stream_ends() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let stream = Events::open(&gw, &dana.token, None).await;
    revocation::revoke_approver(&gw.state.store, gw.state.registry, &dana.id)
        .await
        .unwrap();
    assert!(stream.ends_within(Duration::from_secs(5)).await);
}

#[tokio::test]
async fn a_stream_ends_when_another_process_revokes_its_approver() {
    let dir = tempfile::tempdir().unwrap();
    let database =
        crate::common::demo_database(&format!("sqlite://{}", dir.path().join("gw.db").display()))
            .await;
    let gw = Gateway::at(&database).await;
    let dana = gw.enroll("Dana").await;
    let stream = Events::open(&gw, &dana.token, None).await;
    // Another process on the same database (the admin command): no commit of this gateway's
    // wakes the stream.
    let admin = Store::open(&database).await.unwrap();
    let mut w = admin.write().await.unwrap();
    sqlx::query("UPDATE approvers SET revoked_at = '2026-12-01T00:00:00Z' WHERE id = $1")
        .bind(&dana.id)
        .execute(&mut *w.tx)
        .await
        .unwrap();
    w.commit().await.unwrap();
    assert!(stream.ends_within(Duration::from_secs(5)).await);
}

#[tokio::test]
async fn a_revoked_agents_wait_ends() {
    let gw = Gateway::new().await;
    let plan = gw.preview(RETENTION, retention("prj_184", 14)).await;
    let waiting = gw.tool(
        &gw.agent,
        "countersign_wait",
        json!({"plan_id": plan["plan_id"], "timeout_seconds": 60}),
    );
    let revoke = async {
        // The wait is open (its slot taken) before the agent is revoked: it is the revocation
        // that ends it, not a refusal at its start.
        while gw.state.waits.open("agt_ops") == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        revocation::revoke_agent(&gw.state.store, "agt_ops")
            .await
            .unwrap();
    };
    let (answer, ()) = tokio::time::timeout(Duration::from_secs(10), async {
        tokio::join!(waiting, revoke)
    })
    .await
    .expect("the wait ends well before its 60 s");
    let result = &answer["result"];
    assert_eq!(result["isError"], true, "{answer}");
    assert_eq!(
        result["structuredContent"]["error"]["code"],
        "unauthenticated"
    );
}
