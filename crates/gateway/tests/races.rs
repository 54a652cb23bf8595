//! Races forced with a barrier rather than left to the scheduler: every contender is ready before
//! any of them sends. Each runs over a SQLite file, so requests take separate pool connections.

use std::sync::Arc;

use crate::common::{at_once, retention, Gateway, RETENTION};
use axum::http::StatusCode;
use countersign_embedded::default_registry;
use countersign_engine::Limits;
use serde_json::{json, Value};

const REMOVE: &str = "groups.members.remove";

/// A gateway on a database of its own that several connections share: a file, or on PostgreSQL a
/// database. Its agent may have as many previews in flight as a race sends at once.
async fn on_file() -> Arc<Gateway> {
    let limits = Limits {
        max_previews_in_flight: 16,
        ..Limits::default()
    };
    Arc::new(Gateway::serving_apart(limits, default_registry()).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_invokes_of_one_approved_plan_execute_it_once() {
    let gw = on_file().await;
    let dana = gw.enroll("Dana").await;
    let plan = gw
        .approved_by(RETENTION, retention("prj_184", 14), &[&dana])
        .await;
    let plan_id = plan["plan_id"].as_str().unwrap().to_owned();

    let replies = at_once(16, |i| {
        let (gw, plan_id) = (gw.clone(), plan_id.clone());
        async move {
            // Half with an idempotency key each, half without: neither path may run twice.
            let body = if i % 2 == 0 {
                json!({"plan_id": plan_id})
            } else {
                json!({"plan_id": plan_id, "idempotency_key": format!("k{i}")})
            };
            gw.invoke_as(&gw.agent, RETENTION, body).await
        }
    })
    .await;
    gw.assert_ran_once(&replies, &plan_id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_preview_key_sent_eight_times_at_once_makes_one_plan() {
    let gw = on_file().await;
    let uri = format!("/v1/capabilities/{RETENTION}/dry_run");
    let body =
        json!({"params": {"project": "prj_200", "retention_days": 30}, "idempotency_key": "same"});
    let replies = at_once(8, |_| {
        let (gw, uri, body) = (gw.clone(), uri.clone(), body.clone());
        async move { gw.call("POST", &uri, Some(&gw.agent), Some(body)).await }
    })
    .await;
    let first: &Value = &replies[0].body;
    for reply in &replies {
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        assert_eq!(reply.body["plan_id"], first["plan_id"], "one plan for all");
        assert_eq!(reply.body["plan_digest"], first["plan_digest"]);
    }
    let repeats = replies.iter().filter(|r| r.body.get("status").is_some());
    assert_eq!(repeats.count(), 7, "seven senders get the first one's plan");
    let plans: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM plans")
        .fetch_one(gw.state.store.pool())
        .await
        .unwrap();
    assert_eq!(plans, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_approvers_racing_to_a_quorum_of_two_both_count() {
    let gw = on_file().await;
    let plan = gw
        .preview(
            REMOVE,
            json!({"group": "grp_support", "filter": {"employment": "contractor"}}),
        )
        .await;
    assert_eq!(plan["would_require_approval"], true);
    let plan_id = plan["plan_id"].as_str().unwrap().to_owned();
    let approvers = Arc::new([gw.enroll("Dana").await, gw.enroll("Eli").await]);

    let replies = at_once(2, |i| {
        let (gw, plan, plan_id, approvers) =
            (gw.clone(), plan.clone(), plan_id.clone(), approvers.clone());
        async move {
            let approver = &approvers[i];
            let envelope = approver.sign(&approver.statement(&gw, &plan));
            approver.send(&gw, &plan_id, &envelope).await
        }
    })
    .await;
    for reply in &replies {
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    }
    let mut received: Vec<usize> = replies
        .iter()
        .map(|r| r.body["approvals"]["received"].as_array().unwrap().len())
        .collect();
    received.sort();
    assert_eq!(
        received,
        [1, 2],
        "each answer counts the other's approval or not, never both"
    );
    let record = gw.record(&approvers[0].token, &plan_id).await;
    assert_eq!(record.body["status"], "approved");
    let decisions = gw
        .count(
            "SELECT COUNT(*) FROM decisions WHERE plan_id = $1",
            &plan_id,
        )
        .await;
    assert_eq!(decisions, 2);
}
