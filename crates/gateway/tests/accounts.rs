//! Accounts: revocation, expiring invites that carry their name, the identity key and bound
//! enrollment, as the gateway answers them.

use crate::common::{approve_by, assert_error, retention, Gateway};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use countersign_engine::{accounts, approval::revocation};
use countersign_proto::decision::Statement;
use countersign_proto::dsse::{encode_public_key, Envelope};
use countersign_proto::enrollment::{self, IdentityProof, Invite, Receipt};
use countersign_proto::statement::Signed as _;
use ed25519_dalek::SigningKey;
use serde_json::{json, Value};

fn new_public_key() -> String {
    encode_public_key(&SigningKey::generate(&mut rand::rngs::OsRng).verifying_key())
}

async fn plan(gw: &Gateway, days: u32) -> Value {
    gw.dry_run(json!({"project": "prj_184", "retention_days": days}))
        .await
}

#[tokio::test]
async fn a_revoked_agent_token_is_unauthenticated() {
    let gw = Gateway::new().await;
    let before = gw
        .call("GET", "/v1/capabilities", Some(&gw.agent), None)
        .await;
    assert_eq!(before.status, 200);
    revocation::revoke_agent(&gw.state.store, "agt_ops")
        .await
        .unwrap();
    for (method, uri) in [
        ("GET", "/v1/capabilities"),
        ("GET", "/v1/gateway"),
        ("POST", "/v1/capabilities/projects.settings.update/dry_run"),
    ] {
        let body = (method == "POST")
            .then(|| json!({"params": {"project": "prj_184", "retention_days": 14}}));
        let reply = gw.call(method, uri, Some(&gw.agent), body).await;
        assert_error(&reply, "unauthenticated", 401);
    }
    assert!(
        revocation::revoke_agent(&gw.state.store, "agt_ops")
            .await
            .is_err(),
        "revoked twice"
    );
}

#[tokio::test]
async fn a_revoked_approver_token_is_unauthenticated() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let queue = gw
        .call("GET", "/v1/approvals", Some(&dana.token), None)
        .await;
    assert_eq!(queue.status, 200);
    revocation::revoke_approver(&gw.state.store, gw.state.registry, &dana.id)
        .await
        .unwrap();
    let reply = gw
        .call("GET", "/v1/approvals", Some(&dana.token), None)
        .await;
    assert_error(&reply, "unauthenticated", 401);
    let plan = plan(&gw, 14).await;
    let envelope = dana.sign(&dana.statement(&gw, &plan));
    let reply = dana
        .send(&gw, plan["plan_id"].as_str().unwrap(), &envelope)
        .await;
    assert_error(&reply, "unauthenticated", 401);
}

#[tokio::test]
async fn a_decision_signed_with_a_revoked_key_is_refused_and_older_ones_stay_verifiable() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let first = plan(&gw, 14).await;
    let first_id = first["plan_id"].as_str().unwrap();
    approve_by(&gw, &first, &[&dana]).await;

    let owner = revocation::revoke_key(&gw.state.store, gw.state.registry, &dana.key_id)
        .await
        .unwrap();
    assert_eq!(owner, dana.id);

    let second = gw.dry_run(retention("prj_200", 14)).await;
    dana.refused(
        &gw,
        second["plan_id"].as_str().unwrap(),
        &dana.statement(&gw, &second),
        "bad_signature",
        401,
    )
    .await;

    // The audit still names the revoked key, and the decision it signed verifies with it.
    let audit = gw
        .call(
            "GET",
            &format!("/v1/audit?plan_id={first_id}"),
            Some(&dana.token),
            None,
        )
        .await;
    assert_eq!(audit.status, 200, "{}", audit.body);
    let decision = &audit.body["decisions"][0];
    assert_eq!(decision["key_id"], dana.key_id.as_str());
    assert!(decision["key_revoked_at"].is_string(), "{decision}");
    let key = countersign_proto::dsse::decode_public_key(decision["public_key"].as_str().unwrap())
        .unwrap();
    assert_eq!(key, dana.key.verifying_key());
    let envelope: Envelope = serde_json::from_str(decision["envelope"].as_str().unwrap()).unwrap();
    let statement = Statement::open(&envelope, &key).unwrap();
    assert_eq!(statement.plan_id, first_id);
}

#[tokio::test]
async fn a_rotation_signed_with_a_revoked_key_is_refused() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    revocation::revoke_key(&gw.state.store, gw.state.registry, &dana.key_id)
        .await
        .unwrap();
    let next = SigningKey::generate(&mut rand::rngs::OsRng);
    let now = chrono::SubsecRound::trunc_subsecs(chrono::Utc::now(), 0);
    let proof = countersign_proto::keys::KeyRotation::new(
        &dana.id,
        &next.verifying_key(),
        &gw.state.gateway_id,
        now,
    )
    .sign(&dana.key, &dana.key_id)
    .unwrap();
    let reply = gw
        .call(
            "POST",
            "/v1/approvers/keys",
            Some(&dana.token),
            Some(serde_json::to_value(proof).unwrap()),
        )
        .await;
    assert_error(&reply, "bad_signature", 401);
}

#[tokio::test]
async fn an_expired_enrollment_code_is_refused() {
    let gw = Gateway::new().await;
    let code = accounts::invite_approver(&gw.state.store, "Dana", None)
        .await
        .unwrap();
    let mut w = gw.state.store.write().await.unwrap();
    sqlx::query("UPDATE enrollment_codes SET expires_at = '2020-01-01T00:00:00Z'")
        .execute(&mut *w.tx)
        .await
        .unwrap();
    w.commit().await.unwrap();
    let reply = gw
        .call(
            "POST",
            "/v1/approvers/enroll",
            None,
            Some(json!({"enrollment_code": code, "public_key": new_public_key()})),
        )
        .await;
    assert_error(&reply, "unauthenticated", 401);
    assert_eq!(reply.body["error"]["details"]["reason"], "code_expired");
    let approvers: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM approvers")
        .fetch_one(gw.state.store.pool())
        .await
        .unwrap();
    assert_eq!(approvers, 0, "nothing half-written");
}

#[tokio::test]
async fn invites_expire_after_the_hours_they_were_given() {
    let gw = Gateway::new().await;
    accounts::invite_approver(&gw.state.store, "Dana", None)
        .await
        .unwrap();
    accounts::invite_approver_for(&gw.state.store, "Eli", None, chrono::Duration::hours(2))
        .await
        .unwrap();
    let lifetimes: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT display_name, created_at, expires_at FROM enrollment_codes ORDER BY display_name",
    )
    .fetch_all(gw.state.store.pool())
    .await
    .unwrap();
    let hours = |(_, from, to): &(String, String, String)| {
        let at = |t: &str| chrono::DateTime::parse_from_rfc3339(t).unwrap();
        (at(to) - at(from)).num_hours()
    };
    assert_eq!(hours(&lifetimes[0]), 72, "{lifetimes:?}");
    assert_eq!(hours(&lifetimes[1]), 2, "{lifetimes:?}");
    for never in [chrono::Duration::zero(), chrono::Duration::days(400)] {
        assert!(
            accounts::invite_approver_for(&gw.state.store, "Fay", None, never)
                .await
                .is_err()
        );
    }
}

#[tokio::test]
async fn the_enrollee_keeps_the_invited_name() {
    let gw = Gateway::new().await;
    let enroll = |code: String, name: Option<&str>| {
        let mut body = json!({"enrollment_code": code, "public_key": new_public_key()});
        if let Some(name) = name {
            body["display_name"] = json!(name);
        }
        gw.call("POST", "/v1/approvers/enroll", None, Some(body))
    };
    let code = accounts::invite_approver(&gw.state.store, "Dana", None)
        .await
        .unwrap();
    let reply = enroll(code.clone(), Some("Mallory")).await;
    assert_error(&reply, "validation_error", 422);
    assert_eq!(
        reply.body["error"]["details"]["violations"][0]["schema_pointer"],
        "/display_name"
    );
    // Refused without spending: the same code still enrolls, under the invited name.
    let reply = enroll(code, None).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let code = accounts::invite_approver(&gw.state.store, "Eli", None)
        .await
        .unwrap();
    let reply = enroll(code, Some(" Eli ")).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let names: Vec<String> =
        sqlx::query_scalar("SELECT display_name FROM approvers ORDER BY display_name")
            .fetch_all(gw.state.store.pool())
            .await
            .unwrap();
    assert_eq!(names, ["Dana", "Eli"]);
}

#[tokio::test]
async fn a_weak_or_non_canonical_key_is_not_enrolled() {
    let gw = Gateway::new().await;
    let code = accounts::invite_approver(&gw.state.store, "Dana", None)
        .await
        .unwrap();
    let mut identity = [0u8; 32];
    identity[0] = 1;
    // y = p + 3: a sound point written in a second, non-canonical way.
    let mut non_canonical = [0xffu8; 32];
    non_canonical[0] = 0xf0;
    non_canonical[31] = 0x7f;
    for key in [identity, non_canonical] {
        let body = json!({"enrollment_code": code, "public_key": URL_SAFE_NO_PAD.encode(key)});
        let reply = gw
            .call("POST", "/v1/approvers/enroll", None, Some(body))
            .await;
        assert_error(&reply, "validation_error", 422);
        let message = reply.body["error"]["message"].as_str().unwrap();
        assert!(message.contains("weak or non-canonical"), "{message}");
    }
    // Refused without spending the code.
    let body = json!({"enrollment_code": code, "public_key": new_public_key()});
    let reply = gw
        .call("POST", "/v1/approvers/enroll", None, Some(body))
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
}

#[tokio::test]
async fn invite_names_are_printable_and_bounded() {
    let gw = Gateway::new().await;
    for bad in [
        "",
        "Dana\u{202E}evE",
        "Da\u{200B}na",
        "Dana\u{1b}[31m",
        "Dana\nEve",
    ] {
        let refused = accounts::invite_approver(&gw.state.store, bad, None).await;
        assert!(refused.is_err(), "{bad:?} accepted");
    }
    let long = "D".repeat(81);
    assert!(accounts::invite_approver(&gw.state.store, &long, None)
        .await
        .is_err());
    let codes: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM enrollment_codes")
        .fetch_one(gw.state.store.pool())
        .await
        .unwrap();
    assert_eq!(codes, 0);
}

#[tokio::test]
async fn the_gateway_proves_its_identity_over_the_callers_nonce() {
    let gw = Gateway::new().await;
    let invite = Invite::parse(
        &accounts::invite_approver(&gw.state.store, "Dana", None)
            .await
            .unwrap(),
    )
    .expect("the invite carries the fingerprint");
    let nonce = enrollment::new_nonce();
    let reply = gw
        .call(
            "POST",
            "/v1/gateway/identity",
            None,
            Some(json!({ "nonce": nonce })),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let proof: IdentityProof = serde_json::from_value(reply.body).unwrap();
    assert_eq!(proof.gateway_id, gw.state.gateway_id);
    assert!(proof.verify(&invite.fingerprint, &nonce).is_some());
    assert!(proof
        .verify(&invite.fingerprint, "another-nonce-entirely")
        .is_none());
    let reply = gw
        .call(
            "POST",
            "/v1/gateway/identity",
            None,
            Some(json!({"nonce": "short"})),
        )
        .await;
    assert_error(&reply, "validation_error", 422);
}

#[tokio::test]
async fn bound_enrollment_needs_the_proof_for_the_key_it_registers() {
    let gw = Gateway::new().await;
    let invite = Invite::parse(
        &accounts::invite_approver(&gw.state.store, "Dana", None)
            .await
            .unwrap(),
    )
    .unwrap();
    let nonce = enrollment::new_nonce();
    let public_key = new_public_key();
    let proof =
        enrollment::enrollment_proof(&enrollment::code_hash(&invite.code), &public_key, &nonce);
    let request = |key: &str| {
        json!({"code_id": enrollment::code_id(&invite.code), "nonce": nonce,
               "public_key": key, "proof": proof})
    };
    // A relay that swaps in its own key cannot reuse the proof.
    let reply = gw
        .call(
            "POST",
            "/v1/approvers/enroll/bound",
            None,
            Some(request(&new_public_key())),
        )
        .await;
    assert_error(&reply, "unauthenticated", 401);

    let reply = gw
        .call(
            "POST",
            "/v1/approvers/enroll/bound",
            None,
            Some(request(&public_key)),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let body = &reply.body;
    assert_eq!(body["display_name"], "Dana");
    let receipt = Receipt::new(
        &gw.state.gateway_id,
        body["approver_id"].as_str().unwrap(),
        body["key_id"].as_str().unwrap(),
        "Dana",
        &public_key,
        &nonce,
    );
    let identity = gw.state.identity.verifying_key();
    assert!(receipt.verify(&identity, body["receipt"].as_str().unwrap()));
    let other_key = new_public_key();
    let swapped = Receipt::new(
        &gw.state.gateway_id,
        body["approver_id"].as_str().unwrap(),
        body["key_id"].as_str().unwrap(),
        "Dana",
        &other_key,
        &nonce,
    );
    assert!(!swapped.verify(&identity, body["receipt"].as_str().unwrap()));

    let again = gw
        .call(
            "POST",
            "/v1/approvers/enroll/bound",
            None,
            Some(request(&public_key)),
        )
        .await;
    assert_error(&again, "unauthenticated", 401);
}
