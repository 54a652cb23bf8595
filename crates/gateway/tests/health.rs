//! `/healthz` and `/readyz`: answered without a token or a rate limit, and each part of
//! readiness seen down in turn (a policy that does not load stops `serve` before it listens:
//! `cli::a_failing_policy_test_fails_the_command_and_a_bad_file_stops_serve_with_its_line`).

use std::num::NonZeroU32;

use axum::http::StatusCode;
use countersign_engine::accounts::limits::Rate;
use countersign_engine::Limits;
use serde_json::{json, Value};

use crate::common::{on_disk, Gateway};

async fn readiness(gw: &Gateway) -> (StatusCode, Value) {
    let reply = gw.call("GET", "/readyz", None, None).await;
    (reply.status, reply.body)
}

fn part<'a>(body: &'a Value, name: &str) -> &'a Value {
    body["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["part"] == name)
        .unwrap_or_else(|| panic!("no part {name} in {body}"))
}

#[tokio::test]
async fn a_serving_gateway_is_live_and_ready_in_every_part() {
    let gw = Gateway::new().await;
    let live = gw.call("GET", "/healthz", None, None).await;
    assert_eq!(live.status, StatusCode::OK);
    assert_eq!(live.body, json!("ok\n"));
    let (status, body) = readiness(&gw).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["ready"], true);
    for name in ["store", "migrations", "policy"] {
        assert_eq!(part(&body, name)["ready"], true, "{body}");
    }
    let policy = part(&body, "policy")["detail"].as_str().unwrap();
    assert!(policy.starts_with("built-in, sha256:"), "{policy}");
}

#[tokio::test]
async fn probes_are_answered_while_callers_without_a_token_are_held_to_their_rate() {
    let one = NonZeroU32::new(1).unwrap();
    let gw = Gateway::limited(Limits {
        rate: Some(Rate {
            per_second: one,
            burst: one,
        }),
        ..Limits::default()
    })
    .await;
    let first = gw.call("GET", "/v1/openapi.json", None, None).await;
    assert_eq!(first.status, StatusCode::OK);
    let second = gw.call("GET", "/v1/openapi.json", None, None).await;
    assert_eq!(second.status, StatusCode::TOO_MANY_REQUESTS);
    for _ in 0..20 {
        assert_eq!(readiness(&gw).await.0, StatusCode::OK);
        let live = gw.call("GET", "/healthz", None, None).await;
        assert_eq!(live.status, StatusCode::OK);
    }
}

#[tokio::test]
async fn a_store_missing_a_migration_is_not_ready_and_says_which() {
    let database = on_disk(true).await;
    let gw = Gateway::at(&database).await;
    let latest: i64 = sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations")
        .fetch_one(gw.state.store.pool())
        .await
        .unwrap();
    let mut w = gw.state.store.write().await.unwrap();
    sqlx::query("DELETE FROM _sqlx_migrations WHERE version = $1")
        .bind(latest)
        .execute(&mut *w.tx)
        .await
        .unwrap();
    w.commit().await.unwrap();
    let (status, body) = readiness(&gw).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["ready"], false);
    assert_eq!(part(&body, "store")["ready"], true);
    let migrations = part(&body, "migrations");
    assert_eq!(migrations["ready"], false);
    assert_eq!(migrations["detail"], format!("not applied: [{latest}]"));
    assert_eq!(part(&body, "policy")["ready"], true);
}

#[tokio::test]
async fn a_store_that_does_not_answer_is_not_ready_and_the_process_still_live() {
    let gw = Gateway::new().await;
    gw.state.store.close().await;
    let (status, body) = readiness(&gw).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(part(&body, "store")["ready"], false);
    assert_eq!(part(&body, "store")["detail"], "does not answer");
    assert_eq!(part(&body, "migrations")["ready"], false);
    let live = gw.call("GET", "/healthz", None, None).await;
    assert_eq!(live.status, StatusCode::OK);
}
