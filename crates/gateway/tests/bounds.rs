//! Strings an agent writes reach approvers (plans, validation messages, the preview audit), so the
//! gateway bounds their length and count: `validation_error` with a pointer, and nothing stored.

use crate::common::{assert_error, retention, Gateway, Reply, RETENTION};
use axum::http::StatusCode;
use serde_json::{json, Map, Value};

const UPLOAD: &str = "documents.document.upload";

async fn dry_run(gw: &Gateway, capability: &str, body: Value) -> Reply {
    gw.call(
        "POST",
        &format!("/v1/capabilities/{capability}/dry_run"),
        Some(&gw.agent),
        Some(body),
    )
    .await
}

fn pointer(reply: &Reply) -> &str {
    reply.body["error"]["details"]["violations"][0]["schema_pointer"]
        .as_str()
        .unwrap()
}

async fn stored(gw: &Gateway) -> (i64, i64) {
    let pool = gw.state.store.pool();
    let plans = sqlx::query_scalar("SELECT COUNT(*) FROM plans")
        .fetch_one(pool)
        .await
        .unwrap();
    let audits = sqlx::query_scalar("SELECT COUNT(*) FROM preview_audit")
        .fetch_one(pool)
        .await
        .unwrap();
    (plans, audits)
}

fn settings() -> Value {
    retention("prj_184", 14)
}

#[tokio::test]
async fn expected_revisions_are_bounded_in_count_and_length() {
    let gw = Gateway::new().await;
    let before = stored(&gw).await;
    let many: Map<String, Value> = (0..51)
        .map(|n| (format!("projects/prj_{n}"), json!("1")))
        .collect();
    let reply = dry_run(
        &gw,
        RETENTION,
        json!({"params": settings(), "expected_revisions": many}),
    )
    .await;
    assert_error(&reply, "validation_error", 422);
    assert_eq!(pointer(&reply), "/expected_revisions");

    let long_key = format!("projects/{}", "x".repeat(300));
    let reply = dry_run(
        &gw,
        RETENTION,
        json!({"params": settings(), "expected_revisions": {long_key: "73"}}),
    )
    .await;
    assert_error(&reply, "validation_error", 422);
    assert!(pointer(&reply).starts_with("/expected_revisions/projects~1xxx"));
    assert!(
        reply.body.to_string().len() < 2000,
        "the key is not echoed whole"
    );

    let long_revision = json!({"projects/prj_184": "7".repeat(101)});
    let reply = dry_run(
        &gw,
        RETENTION,
        json!({"params": settings(), "expected_revisions": long_revision}),
    )
    .await;
    assert_eq!(pointer(&reply), "/expected_revisions/projects~1prj_184");
    assert_eq!(stored(&gw).await, before, "nothing stored, no audit row");

    let fine = dry_run(
        &gw,
        RETENTION,
        json!({"params": settings(), "expected_revisions": {"projects/prj_184": "73"}}),
    )
    .await;
    assert_eq!(fine.status, StatusCode::OK, "{}", fine.body);
}

#[tokio::test]
async fn long_file_names_are_refused_on_preview_and_invoke() {
    let gw = Gateway::new().await;
    let before = stored(&gw).await;
    let params = json!({"project": "prj_421", "filename": "r".repeat(1001),
                        "mime_type": "application/pdf", "size_bytes": 10});
    let reply = dry_run(&gw, UPLOAD, json!({ "params": params })).await;
    assert_error(&reply, "validation_error", 422);
    assert_eq!(pointer(&reply), "/params/filename");
    assert!(
        reply.body.to_string().len() < 2000,
        "the name is not echoed"
    );
    let invoked = gw
        .invoke_as(&gw.agent, UPLOAD, json!({ "params": params }))
        .await;
    assert_error(&invoked, "validation_error", 422);
    assert_eq!(stored(&gw).await, before);
}

#[tokio::test]
async fn long_params_and_idempotency_keys_are_refused_before_the_audit() {
    let gw = Gateway::new().await;
    let before = stored(&gw).await;
    let padded = json!({"params": {"project": "prj_184", "retention_days": 14,
                                   "note": "x".repeat(5000)}});
    let reply = dry_run(&gw, RETENTION, padded).await;
    assert_error(&reply, "validation_error", 422);
    assert_eq!(pointer(&reply), "/params/note");
    let keyed = json!({"params": settings(), "idempotency_key": "k".repeat(101)});
    let reply = dry_run(&gw, RETENTION, keyed).await;
    assert_eq!(pointer(&reply), "/idempotency_key");
    let invoked = gw
        .invoke_as(&gw.agent, RETENTION, json!({"plan_id": "p".repeat(500)}))
        .await;
    assert_error(&invoked, "validation_error", 422);
    assert_eq!(pointer(&invoked), "/plan_id");
    assert_eq!(
        stored(&gw).await,
        before,
        "the 5,000 characters never reach the audit"
    );
}
