//! Signed decisions and execution: each refusal with its code, nothing executes twice.

use crate::common::{assert_error, grant, retention, Gateway, GRANT};
use axum::http::StatusCode;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use countersign_proto::decision::{Decision, Statement};
use countersign_proto::statement::Signed as _;
use ed25519_dalek::SigningKey;
use serde_json::json;

#[tokio::test]
async fn refusals_follow_the_check_order() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let plan = gw.dry_run(retention("prj_184", 14)).await;
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
    dana.refused(&gw, plan_id, &wrong, "audience_mismatch", 422)
        .await;

    let mut wrong = dana.statement(&gw, &plan);
    wrong.plan_id = "plan_missing".into();
    assert_error(
        &dana.send(&gw, "plan_missing", &dana.sign(&wrong)).await,
        "not_found",
        404,
    );

    let mut wrong = dana.statement(&gw, &plan);
    wrong.plan_digest = format!("sha256:{}", "0".repeat(64));
    dana.refused(&gw, plan_id, &wrong, "digest_mismatch", 422)
        .await;

    let mut wrong = dana.statement(&gw, &plan);
    wrong.issued_at -= chrono::Duration::minutes(20);
    wrong.expires_at = wrong.issued_at + chrono::Duration::minutes(5);
    dana.refused(&gw, plan_id, &wrong, "statement_expired", 422)
        .await;

    let mut wrong = dana.statement(&gw, &plan);
    wrong.issued_at += chrono::Duration::minutes(5);
    dana.refused(&gw, plan_id, &wrong, "statement_expired", 422)
        .await;

    let mut wrong = dana.statement(&gw, &plan);
    wrong.issued_at += chrono::Duration::minutes(30);
    wrong.expires_at = wrong.issued_at + chrono::Duration::minutes(1);
    dana.refused(&gw, plan_id, &wrong, "statement_expired", 422)
        .await;

    let mut wrong = dana.statement(&gw, &plan);
    wrong.kind = "countersign.decision/v2".into();
    dana.refused(&gw, plan_id, &wrong, "validation_error", 422)
        .await;

    let mut wrong = dana.statement(&gw, &plan);
    wrong.nonce = "not-hex".into();
    dana.refused(&gw, plan_id, &wrong, "validation_error", 422)
        .await;

    let mut reject = dana.statement(&gw, &plan);
    reject.decision = Decision::Reject;
    dana.refused(&gw, plan_id, &reject, "validation_error", 422)
        .await;

    // Nothing above counted.
    let record = gw.record(&dana.token, plan_id).await;
    assert_eq!(record.body["status"], "pending_approval");
    assert_eq!(record.body["approvals"]["received"], json!([]));
}

/// Two faults in one decision: the check that comes first in the order answers, each pair
/// chosen so that the later check alone would answer otherwise.
#[tokio::test]
async fn of_two_faults_the_earlier_check_answers() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let plan = gw.dry_run(retention("prj_184", 14)).await;
    let plan_id = plan["plan_id"].as_str().unwrap();
    let elsewhere = |mut s: Statement| {
        s.audience = "gw_elsewhere".into();
        s
    };

    // Two signatures (shape) before a wrong audience.
    let mut envelope = dana.sign(&elsewhere(dana.statement(&gw, &plan)));
    envelope.signatures.push(envelope.signatures[0].clone());
    assert_error(
        &dana.send(&gw, plan_id, &envelope).await,
        "validation_error",
        422,
    );

    // A signature that does not verify before a wrong audience.
    let mut envelope = dana.sign(&elsewhere(dana.statement(&gw, &plan)));
    let mut sig = STANDARD.decode(&envelope.signatures[0].sig).unwrap();
    sig[3] ^= 1;
    envelope.signatures[0].sig = STANDARD.encode(sig);
    assert_error(
        &dana.send(&gw, plan_id, &envelope).await,
        "bad_signature",
        401,
    );

    // S + L: the same signature in a non-canonical form does not verify either.
    let mut envelope = dana.sign(&dana.statement(&gw, &plan));
    let mut sig = STANDARD.decode(&envelope.signatures[0].sig).unwrap();
    let l: [u8; 32] = [
        0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde,
        0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
    ];
    let mut carry = 0u16;
    for (s, l) in sig[32..].iter_mut().zip(l) {
        let sum = *s as u16 + l as u16 + carry;
        *s = sum as u8;
        carry = sum >> 8;
    }
    envelope.signatures[0].sig = STANDARD.encode(sig);
    assert_error(
        &dana.send(&gw, plan_id, &envelope).await,
        "bad_signature",
        401,
    );

    // A wrong audience before a wrong digest.
    let mut both = elsewhere(dana.statement(&gw, &plan));
    both.plan_digest = format!("sha256:{}", "0".repeat(64));
    dana.refused(&gw, plan_id, &both, "audience_mismatch", 422)
        .await;

    // A wrong digest before an expired statement.
    let mut both = dana.statement(&gw, &plan);
    both.plan_digest = format!("sha256:{}", "0".repeat(64));
    both.issued_at -= chrono::Duration::minutes(20);
    both.expires_at = both.issued_at + chrono::Duration::minutes(5);
    dana.refused(&gw, plan_id, &both, "digest_mismatch", 422)
        .await;

    let record = gw.record(&dana.token, plan_id).await;
    assert_eq!(record.body["approvals"]["received"], json!([]));
}

#[tokio::test]
async fn approval_replay_nonce_and_eligibility() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let ada = gw.enroll("Ada").await;
    let plan = gw.dry_run(retention("prj_184", 14)).await;
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

    let other_plan = gw.dry_run(retention("prj_200", 14)).await;
    let mut reused = dana.statement(&gw, &other_plan);
    reused.nonce = statement.nonce.clone();
    let other_id = other_plan["plan_id"].as_str().unwrap();
    dana.refused(&gw, other_id, &reused, "nonce_reused", 409)
        .await;

    let late = ada.sign(&ada.statement(&gw, &plan));
    assert_error(
        &ada.send(&gw, plan_id, &late).await,
        "plan_not_pending",
        409,
    );

    let stored: String = sqlx::query_scalar("SELECT envelope FROM decisions WHERE plan_id = $1")
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
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let plan = gw.dry_run(retention("prj_184", 14)).await;
    let plan_id = plan["plan_id"].as_str().unwrap();

    assert_error(
        &gw.invoke(json!({"plan_id": plan_id})).await,
        "approval_required",
        409,
    );
    let both = json!({"plan_id": plan_id, "params": {"project": "prj_184", "retention_days": 14}});
    assert_error(&gw.invoke(both).await, "validation_error", 422);
    let inline = json!({"params": {"project": "prj_184", "retention_days": 14}});
    assert_error(&gw.invoke(inline).await, "dry_run_required", 428);
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
    let recalculated: i64 = sqlx::query_scalar(&format!(
        "SELECT COUNT(*) FROM project_items WHERE project_id = 'prj_184' AND legal_hold = 0
         AND expires_at = {}",
        gw.state.store.dialect().days_after("created_at", "14")
    ))
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!(recalculated, 18);
    let executions: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM execution_audit")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(executions, 1, "the replay executed nothing");

    let other = gw.dry_run(retention("prj_200", 30)).await;
    let conflict = json!({"plan_id": other["plan_id"], "idempotency_key": "k1"});
    assert_error(&gw.invoke(conflict).await, "idempotency_conflict", 409);
}

#[tokio::test]
async fn a_plan_whose_read_moved_is_stale_for_decisions_and_execution() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let first = gw.dry_run(retention("prj_184", 14)).await;
    let second = gw.dry_run(retention("prj_184", 21)).await;
    let third = gw.dry_run(retention("prj_184", 60)).await;
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
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let ada = gw.enroll("Ada").await;
    // usr_40 is an editor there: a second role is a blocking conflict, the grant still planned.
    let plan = gw.preview(GRANT, grant("prj_184", "usr_40", "admin")).await;
    assert_eq!(plan["executable"], false);
    assert_eq!(plan["validation"][0]["code"], "role_conflict");
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
        &gw.invoke_as(&gw.agent, GRANT, json!({ "plan_id": plan_id }))
            .await,
        "plan_not_pending",
        409,
    );
}

/// Re-encodes the signed payload with one member changed, keeping the original signature.
fn tampered(
    envelope: &countersign_proto::dsse::Envelope,
    member: &str,
    value: serde_json::Value,
) -> countersign_proto::dsse::Envelope {
    let mut statement: serde_json::Value =
        serde_json::from_slice(&envelope.payload_bytes().unwrap()).unwrap();
    statement[member] = value;
    let bytes = countersign_proto::digest::jcs(&statement).unwrap();
    let mut out = envelope.clone();
    out.payload = STANDARD.encode(bytes);
    out
}

#[tokio::test]
async fn every_statement_member_is_covered_by_the_signature() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let plan = gw.dry_run(retention("prj_184", 14)).await;
    let plan_id = plan["plan_id"].as_str().unwrap();
    let statement = dana.statement(&gw, &plan);
    let envelope = dana.sign(&statement);
    let later = (statement.issued_at + chrono::Duration::seconds(1))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    for (member, value) in [
        ("type", json!("countersign.decision/v2")),
        ("plan_id", json!("plan_other")),
        ("plan_digest", json!(format!("sha256:{}", "2".repeat(64)))),
        ("decision", json!("reject")),
        ("reason", json!("Added later.")),
        ("approver_id", json!("apr_someone")),
        ("key_id", json!("key_other")),
        ("audience", json!("gw_other")),
        ("nonce", json!("0".repeat(32))),
        ("issued_at", json!(later)),
        ("expires_at", json!(later)),
    ] {
        let reply = dana
            .send(&gw, plan_id, &tampered(&envelope, member, value))
            .await;
        assert_error(&reply, "bad_signature", 401);
    }
    let record = gw.record(&dana.token, plan_id).await;
    assert_eq!(record.body["approvals"]["received"], json!([]));
    assert_eq!(
        dana.send(&gw, plan_id, &envelope).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn keys_tokens_and_people_must_belong_together() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let eli = gw.enroll("Eli").await;
    let plan = gw.dry_run(retention("prj_184", 14)).await;
    let plan_id = plan["plan_id"].as_str().unwrap();

    // Eli's own valid envelope, sent with Dana's token.
    let elis = eli.sign(&eli.statement(&gw, &plan));
    assert_error(&dana.send(&gw, plan_id, &elis).await, "bad_signature", 401);
    // Dana's statement signed with Eli's key under Eli's key id.
    let mut borrowed = dana.statement(&gw, &plan);
    borrowed.key_id = eli.key_id.clone();
    assert_error(
        &dana.send(&gw, plan_id, &eli.sign(&borrowed)).await,
        "bad_signature",
        401,
    );
    // A statement naming Eli, signed by Dana with Dana's key.
    let mut impersonating = dana.statement(&gw, &plan);
    impersonating.approver_id = eli.id.clone();
    dana.refused(&gw, plan_id, &impersonating, "validation_error", 422)
        .await;

    // The person the agent acts for may not decide its plans.
    let code =
        countersign_engine::accounts::invite_approver(&gw.state.store, "Lena", Some("usr_lead"))
            .await
            .unwrap();
    let lena = gw.enroll_with_code("Lena", &code).await;
    let own = lena.sign(&lena.statement(&gw, &plan));
    assert_error(&lena.send(&gw, plan_id, &own).await, "not_eligible", 403);
    let mut rejection = lena.statement(&gw, &plan);
    rejection.decision = Decision::Reject;
    rejection.reason = Some("Mine.".into());
    lena.refused(&gw, plan_id, &rejection, "not_eligible", 403)
        .await;
}

#[tokio::test]
async fn an_expired_plan_takes_no_decision_and_never_executes() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let eli = gw.enroll("Eli").await;
    let plan = gw
        .preview(
            "groups.members.remove",
            json!({"group": "grp_support", "filter": {"employment": "contractor"}}),
        )
        .await;
    let plan_id = plan["plan_id"].as_str().unwrap();
    crate::common::approve_by(&gw, &plan, &[&dana]).await;
    let expired = gw.expire(plan_id).await;
    // Issued while the plan was current, sent after it expired.
    let mut statement = eli.statement(&gw, &expired);
    statement.issued_at -= chrono::Duration::minutes(6);
    eli.refused(&gw, plan_id, &statement, "plan_expired", 409)
        .await;
    // Issued after the plan expired.
    assert_error(
        &eli.send(&gw, plan_id, &eli.sign(&eli.statement(&gw, &expired)))
            .await,
        "statement_expired",
        422,
    );
    let reply = gw
        .invoke_as(
            &gw.agent,
            "groups.members.remove",
            json!({"plan_id": plan_id}),
        )
        .await;
    assert_error(&reply, "plan_expired", 409);
    let record = gw.record(&dana.token, plan_id).await;
    assert_eq!(record.body["status"], "expired");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_decisions_and_invokes_execute_once_and_only_with_quorum() {
    let dir = tempfile::tempdir().unwrap();
    let url =
        crate::common::demo_database(&format!("sqlite://{}", dir.path().join("gw.db").display()))
            .await;
    let gw = std::sync::Arc::new(Gateway::at(&url).await);
    let approvers = [
        gw.enroll("Dana").await,
        gw.enroll("Eli").await,
        gw.enroll("Fay").await,
    ];
    let plan = gw
        .preview(
            "groups.members.remove",
            json!({"group": "grp_support", "filter": {"employment": "contractor"}}),
        )
        .await;
    let plan_id = plan["plan_id"].as_str().unwrap().to_owned();

    let mut tasks = tokio::task::JoinSet::new();
    for approver in approvers {
        let (gw, plan, plan_id) = (gw.clone(), plan.clone(), plan_id.clone());
        tasks.spawn(async move {
            let envelope = approver.sign(&approver.statement(&gw, &plan));
            let reply = approver.send(&gw, &plan_id, &envelope).await;
            ("decision", reply.status.as_u16(), reply.body)
        });
    }
    for n in 0..12 {
        let (gw, plan_id) = (gw.clone(), plan_id.clone());
        tasks.spawn(async move {
            let body = if n % 2 == 0 {
                json!({"plan_id": plan_id})
            } else {
                json!({"plan_id": plan_id, "idempotency_key": format!("k{n}")})
            };
            let reply = gw.invoke_as(&gw.agent, "groups.members.remove", body).await;
            ("invoke", reply.status.as_u16(), reply.body)
        });
    }
    let mut executed = 0;
    let mut accepted = 0;
    while let Some(result) = tasks.join_next().await {
        let (kind, status, body) = result.unwrap();
        match (kind, status) {
            ("invoke", 200) => executed += 1,
            ("decision", 200) => accepted += 1,
            ("invoke", 409) => assert!(
                ["approval_required", "plan_already_executed"]
                    .contains(&body["error"]["code"].as_str().unwrap()),
                "{body}"
            ),
            ("decision", 409) => assert_eq!(body["error"]["code"], "plan_not_pending"),
            other => panic!("unexpected {other:?}: {body}"),
        }
    }
    assert!(
        accepted >= 2,
        "two approvals reach quorum, a third may come too late"
    );
    let pool = gw.state.store.pool();
    if executed == 0 {
        let reply = gw
            .invoke_as(
                &gw.agent,
                "groups.members.remove",
                json!({"plan_id": plan_id}),
            )
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    } else {
        assert_eq!(executed, 1);
    }
    let runs: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM execution_audit")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(runs, 1);
    let mails: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM email_outbox")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(mails, 37, "notifications written once");
    let approvals: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM decisions WHERE plan_id = $1 AND decision = 'approve'",
    )
    .bind(&plan_id)
    .fetch_one(pool)
    .await
    .unwrap();
    assert!(approvals >= 2);
}

#[tokio::test]
async fn a_rotation_retires_the_old_key_and_can_be_resent() {
    use countersign_proto::keys::KeyRotation;
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let plan = gw.dry_run(retention("prj_184", 14)).await;
    let plan_id = plan["plan_id"].as_str().unwrap();
    let accepted = dana.sign(&dana.statement(&gw, &plan));
    assert_eq!(
        dana.send(&gw, plan_id, &accepted).await.status,
        StatusCode::OK
    );

    let next = SigningKey::from_bytes(&[5u8; 32]);
    let now = chrono::SubsecRound::trunc_subsecs(chrono::Utc::now(), 0);
    let proof = KeyRotation::new(&dana.id, &next.verifying_key(), &gw.state.gateway_id, now)
        .sign(&dana.key, &dana.key_id)
        .unwrap();
    let rotate = |proof: &countersign_proto::dsse::Envelope| {
        gw.call(
            "POST",
            "/v1/approvers/keys",
            Some(&dana.token),
            Some(serde_json::to_value(proof).unwrap()),
        )
    };
    let first = rotate(&proof).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    let again = rotate(&proof).await;
    assert_eq!(
        again.body, first.body,
        "a resent rotation answers the same key"
    );

    // The old key signs nothing new, but its accepted envelope, resent, still gets its answer.
    let other = gw.dry_run(retention("prj_200", 14)).await;
    let other_id = other["plan_id"].as_str().unwrap();
    assert_error(
        &dana
            .send(&gw, other_id, &dana.sign(&dana.statement(&gw, &other)))
            .await,
        "bad_signature",
        401,
    );
    assert_eq!(
        dana.send(&gw, plan_id, &accepted).await.status,
        StatusCode::OK
    );

    let rotated = crate::common::Approver {
        id: dana.id.clone(),
        key_id: first.body["key_id"].as_str().unwrap().to_owned(),
        token: dana.token.clone(),
        key: next,
    };
    let reply = rotated
        .send(
            &gw,
            other_id,
            &rotated.sign(&rotated.statement(&gw, &other)),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);

    // A proof from a stranger's key, or for another gateway, changes nothing.
    let stranger = SigningKey::from_bytes(&[6u8; 32]);
    let forged = KeyRotation::new(
        &dana.id,
        &stranger.verifying_key(),
        &gw.state.gateway_id,
        now,
    )
    .sign(&stranger, &rotated.key_id)
    .unwrap();
    assert_error(&rotate(&forged).await, "bad_signature", 401);
    let elsewhere = KeyRotation::new(&dana.id, &stranger.verifying_key(), "gw_other", now)
        .sign(&rotated.key, &rotated.key_id)
        .unwrap();
    assert_error(&rotate(&elsewhere).await, "audience_mismatch", 422);
}
