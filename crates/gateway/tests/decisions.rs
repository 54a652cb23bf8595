//! Signed decisions and execution: each refusal with its code, nothing executes twice.

mod common;

use axum::http::StatusCode;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use common::{assert_error, Gateway};
use countersign_proto::decision::{Decision, Statement};
use ed25519_dalek::SigningKey;
use serde_json::json;

#[tokio::test]
async fn refusals_follow_the_check_order() {
    let gw = Gateway::new().await;
    let dana = gw.enroll("Dana").await;
    let plan = gw
        .dry_run(json!({"project": "prj_184", "retention_days": 14}))
        .await;
    let plan_id = plan["plan_id"].as_str().unwrap();

    let mut envelope = dana.sign(&dana.statement(&gw, &plan));
    envelope.signatures.clear();
    assert_error(
        &dana.send(&gw, plan_id, &envelope).await,
        "validation_error",
        422,
    );

    let mut envelope = dana.sign(&dana.statement(&gw, &plan));
    envelope.signatures[0].sig = "not base64!".into();
    assert_error(
        &dana.send(&gw, plan_id, &envelope).await,
        "validation_error",
        422,
    );

    let mut envelope = dana.sign(&dana.statement(&gw, &plan));
    envelope.payload_type = "application/json".into();
    assert_error(
        &dana.send(&gw, plan_id, &envelope).await,
        "validation_error",
        422,
    );

    let mut other = dana.statement(&gw, &plan);
    other.key_id = "key_unknown".into();
    let envelope = dana.sign(&other);
    assert_error(
        &dana.send(&gw, plan_id, &envelope).await,
        "bad_signature",
        401,
    );

    let stranger = SigningKey::from_bytes(&[7u8; 32]);
    let envelope = dana.statement(&gw, &plan).sign(&stranger).unwrap();
    assert_error(
        &dana.send(&gw, plan_id, &envelope).await,
        "bad_signature",
        401,
    );

    let mut envelope = dana.sign(&dana.statement(&gw, &plan));
    let mut sig = STANDARD.decode(&envelope.signatures[0].sig).unwrap();
    sig[10] ^= 1;
    envelope.signatures[0].sig = STANDARD.encode(sig);
    assert_error(
        &dana.send(&gw, plan_id, &envelope).await,
        "bad_signature",
        401,
    );

    let mut wrong = dana.statement(&gw, &plan);
    wrong.audience = "gw_elsewhere".into();
    assert_error(
        &dana.send(&gw, plan_id, &dana.sign(&wrong)).await,
        "audience_mismatch",
        422,
    );

    let mut wrong = dana.statement(&gw, &plan);
    wrong.plan_id = "plan_missing".into();
    assert_error(
        &dana.send(&gw, "plan_missing", &dana.sign(&wrong)).await,
        "not_found",
        404,
    );

    let mut wrong = dana.statement(&gw, &plan);
    wrong.plan_digest = format!("sha256:{}", "0".repeat(64));
    assert_error(
        &dana.send(&gw, plan_id, &dana.sign(&wrong)).await,
        "digest_mismatch",
        422,
    );

    let mut wrong = dana.statement(&gw, &plan);
    wrong.issued_at -= chrono::Duration::minutes(20);
    wrong.expires_at = wrong.issued_at + chrono::Duration::minutes(5);
    assert_error(
        &dana.send(&gw, plan_id, &dana.sign(&wrong)).await,
        "statement_expired",
        422,
    );

    let mut wrong = dana.statement(&gw, &plan);
    wrong.expires_at += chrono::Duration::hours(1);
    assert_error(
        &dana.send(&gw, plan_id, &dana.sign(&wrong)).await,
        "statement_expired",
        422,
    );

    let mut reject = dana.statement(&gw, &plan);
    reject.decision = Decision::Reject;
    assert_error(
        &dana.send(&gw, plan_id, &dana.sign(&reject)).await,
        "validation_error",
        422,
    );

    // Nothing above counted.
    let record = gw.record(&dana.token, plan_id).await;
    assert_eq!(record.body["status"], "pending_approval");
    assert_eq!(record.body["approvals"]["received"], json!([]));
}

#[tokio::test]
async fn approval_replay_nonce_and_eligibility() {
    let gw = Gateway::new().await;
    let dana = gw.enroll("Dana").await;
    let ada = gw.enroll("Ada").await;
    let plan = gw
        .dry_run(json!({"project": "prj_184", "retention_days": 14}))
        .await;
    let plan_id = plan["plan_id"].as_str().unwrap();

    let statement = dana.statement(&gw, &plan);
    let envelope = dana.sign(&statement);
    let first = dana.send(&gw, plan_id, &envelope).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    assert_eq!(first.body["status"], "approved");
    let again = dana.send(&gw, plan_id, &envelope).await;
    assert_eq!(again.status, StatusCode::OK);
    assert_eq!(again.body, first.body, "an identical envelope counts once");

    let second_try = dana.sign(&dana.statement(&gw, &plan));
    assert_error(
        &dana.send(&gw, plan_id, &second_try).await,
        "not_eligible",
        403,
    );

    let other_plan = gw
        .dry_run(json!({"project": "prj_200", "retention_days": 14}))
        .await;
    let mut reused = dana.statement(&gw, &other_plan);
    reused.nonce = statement.nonce.clone();
    let other_id = other_plan["plan_id"].as_str().unwrap();
    assert_error(
        &dana.send(&gw, other_id, &dana.sign(&reused)).await,
        "nonce_reused",
        409,
    );

    let late = ada.sign(&ada.statement(&gw, &plan));
    assert_error(
        &ada.send(&gw, plan_id, &late).await,
        "plan_not_pending",
        409,
    );

    let stored: String = sqlx::query_scalar("SELECT envelope FROM decisions WHERE plan_id = ?")
        .bind(plan_id)
        .fetch_one(gw.state.store.pool())
        .await
        .unwrap();
    let sent = serde_json::to_value(&envelope).unwrap().to_string();
    assert_eq!(stored, sent, "stored as received");
    let reopened: countersign_proto::dsse::Envelope = serde_json::from_str(&stored).unwrap();
    let again = Statement::open(&reopened, &dana.key.verifying_key()).unwrap();
    assert_eq!(again, statement, "the audit re-verifies offline");
}

#[tokio::test]
async fn execution_is_refused_until_approved_and_happens_once() {
    let gw = Gateway::new().await;
    let dana = gw.enroll("Dana").await;
    let plan = gw
        .dry_run(json!({"project": "prj_184", "retention_days": 14}))
        .await;
    let plan_id = plan["plan_id"].as_str().unwrap();

    assert_error(
        &gw.invoke(json!({"plan_id": plan_id})).await,
        "approval_required",
        409,
    );
    let both = json!({"plan_id": plan_id, "params": {"project": "prj_184", "retention_days": 14}});
    assert_error(&gw.invoke(both).await, "validation_error", 422);
    let inline = json!({"params": {"project": "prj_184", "retention_days": 14}});
    assert_error(&gw.invoke(inline).await, "approval_required", 409);
    assert_error(
        &gw.invoke(json!({"plan_id": "plan_missing"})).await,
        "not_found",
        404,
    );

    dana.send(&gw, plan_id, &dana.sign(&dana.statement(&gw, &plan)))
        .await;
    let done = gw
        .invoke(json!({"plan_id": plan_id, "idempotency_key": "k1"}))
        .await;
    assert_eq!(done.status, StatusCode::OK, "{}", done.body);
    assert_eq!(done.body["success"], true);
    assert_eq!(done.body["provider"], "countersign");
    assert_eq!(done.body["metadata"]["plan_id"], plan_id);
    assert_eq!(
        done.body["metadata"]["effects_applied"],
        json!(["eff_1", "eff_2"])
    );
    assert_eq!(
        done.body["metadata"]["trace_id"],
        done.headers["x-trace-id"].to_str().unwrap()
    );
    for member in ["images", "files", "videos"] {
        assert_eq!(done.body[member], json!([]));
    }

    let replay = gw
        .invoke(json!({"plan_id": plan_id, "idempotency_key": "k1"}))
        .await;
    assert_eq!(replay.status, StatusCode::OK);
    assert_eq!(replay.body, done.body, "same key, stored response");
    assert_error(
        &gw.invoke(json!({"plan_id": plan_id})).await,
        "plan_already_executed",
        409,
    );

    let pool = gw.state.store.pool();
    let (days, note, revision): (i64, String, i64) = sqlx::query_as(
        "SELECT retention_days, retention_note, revision FROM projects WHERE id = 'prj_184'",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!((days, revision), (14, 74));
    assert!(note.starts_with("Keep artifacts for two weeks."));
    let recalculated: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM project_items WHERE project_id = 'prj_184' AND legal_hold = 0
         AND expires_at = strftime('%Y-%m-%dT%H:%M:%SZ', created_at, '+14 days')",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!(recalculated, 18);
    let executions: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM execution_audit")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(executions, 1, "the replay executed nothing");

    let other = gw
        .dry_run(json!({"project": "prj_200", "retention_days": 30}))
        .await;
    let conflict = json!({"plan_id": other["plan_id"], "idempotency_key": "k1"});
    assert_error(&gw.invoke(conflict).await, "idempotency_conflict", 409);
}

#[tokio::test]
async fn a_plan_whose_read_moved_is_stale_for_decisions_and_execution() {
    let gw = Gateway::new().await;
    let dana = gw.enroll("Dana").await;
    let first = gw
        .dry_run(json!({"project": "prj_184", "retention_days": 14}))
        .await;
    let second = gw
        .dry_run(json!({"project": "prj_184", "retention_days": 21}))
        .await;
    let third = gw
        .dry_run(json!({"project": "prj_184", "retention_days": 60}))
        .await;
    for plan in [&first, &second] {
        let id = plan["plan_id"].as_str().unwrap();
        let reply = dana
            .send(&gw, id, &dana.sign(&dana.statement(&gw, plan)))
            .await;
        assert_eq!(reply.status, StatusCode::OK);
    }
    let done = gw.invoke(json!({"plan_id": first["plan_id"]})).await;
    assert_eq!(done.status, StatusCode::OK);

    let stale = gw.invoke(json!({"plan_id": second["plan_id"]})).await;
    assert_error(&stale, "plan_stale", 409);
    assert_eq!(
        stale.body["error"]["details"]["moved"],
        json!([{"resource": "projects/prj_184", "planned": "73", "current": "74"}])
    );
    let third_id = third["plan_id"].as_str().unwrap();
    let reply = dana
        .send(&gw, third_id, &dana.sign(&dana.statement(&gw, &third)))
        .await;
    assert_error(&reply, "plan_stale", 409);
    let record = gw.record(&dana.token, third_id).await;
    assert_eq!(record.body["status"], "stale");
    assert_eq!(record.body["stale"]["moved"][0]["current"], "74");
}

#[tokio::test]
async fn a_blocked_plan_can_be_rejected_but_never_approved() {
    let gw = Gateway::new().await;
    let dana = gw.enroll("Dana").await;
    let ada = gw.enroll("Ada").await;
    let plan = gw
        .dry_run(json!({"project": "prj_missing", "retention_days": 14}))
        .await;
    assert_eq!(plan["executable"], false);
    assert_eq!(plan["validation"][0]["code"], "project_not_found");
    let plan_id = plan["plan_id"].as_str().unwrap();

    let approve = dana.sign(&dana.statement(&gw, &plan));
    assert_error(
        &dana.send(&gw, plan_id, &approve).await,
        "plan_not_pending",
        409,
    );
    let mut reject = ada.statement(&gw, &plan);
    reject.decision = Decision::Reject;
    reject.reason = Some("The project does not exist.".into());
    let reply = ada.send(&gw, plan_id, &ada.sign(&reject)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["status"], "rejected");
    assert_error(
        &gw.invoke(json!({"plan_id": plan_id})).await,
        "plan_not_pending",
        409,
    );
}
