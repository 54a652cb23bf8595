//! Re-derivation at execution: a state that moved under a plan without any read revision saying
//! so still stops it, names what differs, and leaves the plan stale for its approvers.

use crate::common::{approve_by, assert_error, Gateway};
use axum::http::StatusCode;
use serde_json::json;

const REMOVE: &str = "groups.members.remove";

#[tokio::test]
async fn effects_that_drift_without_a_moved_revision_make_the_plan_stale() {
    let gw = Gateway::new().await;
    let (dana, eli) = (gw.enroll("Dana").await, gw.enroll("Eli").await);
    let plan = gw
        .preview(
            REMOVE,
            json!({"group": "grp_support", "filter": {"employment": "contractor"}}),
        )
        .await;
    let plan_id = plan["plan_id"].as_str().unwrap();
    approve_by(&gw, &plan, &[&dana, &eli]).await;

    // One contractor leaves the group by a raw write that bypasses the revisions (a change to
    // the person would move the group: migration 0014): no revision the plan read moves.
    let pool = gw.state.store.pool();
    let revisions_before: Vec<(String, i64)> =
        sqlx::query_as("SELECT id, revision FROM groups ORDER BY id")
            .fetch_all(pool)
            .await
            .unwrap();
    sqlx::query(
        "DELETE FROM group_members WHERE group_id = 'grp_support' AND user_id = (
             SELECT u.id FROM users u JOIN group_members m ON m.user_id = u.id
             WHERE m.group_id = 'grp_support' AND u.employment = 'contractor'
             ORDER BY u.id LIMIT 1)",
    )
    .execute(pool)
    .await
    .unwrap();
    let revisions_after: Vec<(String, i64)> =
        sqlx::query_as("SELECT id, revision FROM groups ORDER BY id")
            .fetch_all(pool)
            .await
            .unwrap();
    assert_eq!(revisions_after, revisions_before);
    let before = gw.snapshot().await;

    let reply = gw
        .invoke_as(&gw.agent, REMOVE, json!({"plan_id": plan_id}))
        .await;
    assert_error(&reply, "plan_stale", 409);
    let details = &reply.body["error"]["details"];
    assert_eq!(details["moved"], json!([]));
    let drifted = details["drifted"].as_array().unwrap();
    assert!(!drifted.is_empty(), "{details}");
    let first = &drifted[0];
    assert_eq!(first["effect"], "eff_1");
    assert_ne!(
        first["planned"]["subjects"]["total"], first["current"]["subjects"]["total"],
        "{first}"
    );
    let message = reply.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("eff_1"), "{message}");
    assert_eq!(gw.snapshot().await, before, "nothing ran");

    // The approvers see it stale, and it runs no more.
    let record = gw.record(&dana.token, plan_id).await;
    assert_eq!(record.status, StatusCode::OK);
    assert_eq!(record.body["status"], "stale");
    let again = gw
        .invoke_as(&gw.agent, REMOVE, json!({"plan_id": plan_id}))
        .await;
    assert_error(&again, "approval_required", 409);
    // Nor does a new approval bring it back: only a refresh does.
    let fay = gw.enroll("Fay").await;
    let decision = fay
        .send(&gw, plan_id, &fay.sign(&fay.statement(&gw, &plan)))
        .await;
    assert_error(&decision, "plan_stale", 409);
    let refreshed = gw.refresh(&dana.token, plan_id).await;
    assert_eq!(refreshed.status, StatusCode::OK, "{}", refreshed.body);
}
