//! Plan decisions after the first: an approver may withdraw an approval by rejecting before the
//! plan runs, and an approver's refresh never replaces a current, approved plan.

use crate::common::{approve_by, assert_error, retention, Gateway, RETENTION};
use axum::http::StatusCode;
use countersign_proto::decision::{new_nonce, Decision};
use serde_json::{json, Value};

const REMOVE: &str = "groups.members.remove";

fn reject(statement: &mut countersign_proto::decision::Statement) {
    statement.decision = Decision::Reject;
    statement.reason = Some("Changed my mind: the legal hold needs a second look.".to_owned());
    statement.nonce = new_nonce();
}

fn plan_id(plan: &Value) -> &str {
    plan["plan_id"].as_str().unwrap()
}

#[tokio::test]
async fn an_approver_withdraws_an_approval_by_rejecting_an_approved_plan() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let plan = gw.preview(RETENTION, retention("prj_184", 14)).await;
    let approved = approve_by(&gw, &plan, &[&dana]).await;
    assert_eq!(approved.body["status"], "approved");

    let mut statement = dana.statement(&gw, &plan);
    reject(&mut statement);
    let reply = dana.send(&gw, plan_id(&plan), &dana.sign(&statement)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["status"], "rejected");
    let received = reply.body["approvals"]["received"].as_array().unwrap();
    assert_eq!(received.len(), 1, "the approval is withdrawn, not counted");
    assert_eq!(received[0]["decision"], "reject");

    let execution = gw.execute(&plan).await;
    assert_error(&execution, "plan_not_pending", 409);
    let audit = gw
        .call(
            "GET",
            &format!("/v1/audit?plan_id={}", plan_id(&plan)),
            Some(&dana.token),
            None,
        )
        .await;
    let decisions = audit.body["decisions"].as_array().unwrap();
    assert_eq!(decisions.len(), 2, "both envelopes stay on file");
    assert_eq!(decisions[0]["decision"], "approve");
    assert!(decisions[0]["withdrawn_at"].is_string());
    assert!(decisions[1]["withdrawn_at"].is_null());

    // The rejection sent again counts once; a second change of mind is refused.
    let again = dana.send(&gw, plan_id(&plan), &dana.sign(&statement)).await;
    assert_eq!(again.body["status"], "rejected");
    let mut approve_again = dana.statement(&gw, &plan);
    approve_again.nonce = new_nonce();
    dana.refused(&gw, plan_id(&plan), &approve_again, "not_eligible", 403)
        .await;
}

#[tokio::test]
async fn one_withdrawn_approval_rejects_a_plan_still_waiting_for_a_second() {
    let gw = Gateway::new().await;
    let (dana, eli) = (gw.enroll("Dana").await, gw.enroll("Eli").await);
    let plan = gw
        .preview(
            REMOVE,
            json!({"group": "grp_support", "filter": {"employment": "contractor"}}),
        )
        .await;
    let half = approve_by(&gw, &plan, &[&dana]).await;
    assert_eq!(half.body["status"], "pending_approval");
    let mut statement = dana.statement(&gw, &plan);
    reject(&mut statement);
    let reply = dana.send(&gw, plan_id(&plan), &dana.sign(&statement)).await;
    assert_eq!(reply.body["status"], "rejected", "{}", reply.body);
    eli.refused(
        &gw,
        plan_id(&plan),
        &eli.statement(&gw, &plan),
        "plan_not_pending",
        409,
    )
    .await;
}

#[tokio::test]
async fn an_executed_plan_cannot_be_withdrawn() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let plan = gw
        .approved_by(RETENTION, retention("prj_200", 60), &[&dana])
        .await;
    let done = gw.execute(&plan).await;
    assert_eq!(done.status, StatusCode::OK, "{}", done.body);
    let mut statement = dana.statement(&gw, &plan);
    reject(&mut statement);
    dana.refused(&gw, plan_id(&plan), &statement, "plan_not_pending", 409)
        .await;
    let record = gw.record(&dana.token, plan_id(&plan)).await;
    assert_eq!(record.body["status"], "executed");
}

#[tokio::test]
async fn an_approver_refreshes_pending_and_stale_plans_but_not_a_current_approved_one() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let pending = gw.preview(RETENTION, retention("prj_311", 7)).await;
    let fresh = gw.refresh(&dana.token, plan_id(&pending)).await;
    assert_eq!(fresh.status, StatusCode::OK, "{}", fresh.body);
    assert_eq!(fresh.body["supersedes"], plan_id(&pending));

    let approved = gw
        .approved_by(RETENTION, retention("prj_184", 14), &[&dana])
        .await;
    let refused = gw.refresh(&dana.token, plan_id(&approved)).await;
    assert_error(&refused, "plan_not_pending", 409);
    let still = gw.record(&dana.token, plan_id(&approved)).await;
    assert_eq!(still.body["status"], "approved");
    assert!(still.body["superseded_by"].is_null());

    // Once what it read has moved, the approved plan is stale and the approver may refresh it.
    sqlx::query("UPDATE projects SET revision = revision + 1 WHERE id = 'prj_184'")
        .execute(gw.state.store.pool())
        .await
        .unwrap();
    let stale = gw.refresh(&dana.token, plan_id(&approved)).await;
    assert_eq!(stale.status, StatusCode::OK, "{}", stale.body);
    assert_eq!(stale.body["supersedes"], plan_id(&approved));
}

#[tokio::test]
async fn the_owning_agent_may_refresh_its_current_approved_plan() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let approved = gw
        .approved_by(RETENTION, retention("prj_184", 14), &[&dana])
        .await;
    let own = gw.refresh(&gw.agent, plan_id(&approved)).await;
    assert_eq!(own.status, StatusCode::OK, "{}", own.body);
    assert_eq!(own.body["status"], "pending_approval");
}
