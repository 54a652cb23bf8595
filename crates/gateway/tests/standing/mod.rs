//! Standing approvals (docs/standing.md): a matching plan is approved as it is stored and runs;
//! each constraint, cap, expiry, revocation and the policy bound what they cover; forged and
//! replayed statements are refused. Their uses, taken as plans run, are in `uses`; the seats
//! they may fill, and whose approval they may not be, in `seats`.

mod seats;
mod uses;

use std::time::Duration;

use crate::common::{assert_error, on_disk, retention, Approver, Gateway, Reply};
use axum::http::StatusCode;
use countersign_embedded::{seed_demo, state_with_policy};
use countersign_engine::approval::revocation;
use countersign_engine::approval::standing::{self, Revoker};
use countersign_engine::Store;
use countersign_policy::{Policy, Sources};
use countersign_proto::approvals::RiskFlag;
use countersign_proto::decision::new_nonce;
use countersign_proto::dsse::{decode_public_key, Envelope};
use countersign_proto::receipt::{envelope_digest, Accepted, Receipt};
use countersign_proto::standing::{
    new_standing_id, Constraint, StandingStatement, STANDING_STATEMENT_TYPE,
};
use countersign_proto::statement::Signed as _;
use countersign_proto::Credits;
use ed25519_dalek::VerifyingKey;
use serde_json::{json, Value};

pub(crate) const SETTINGS: &str = "projects.settings.update";
pub(crate) const UPLOAD: &str = "documents.document.upload";

/// Every plan waits for one approver, whom a standing approval may be.
pub(crate) const EVERY_PLAN: &str = r#"package countersign.approval
import rego.v1
rules contains {"id": "one", "count": 1, "standing": true} if count(input.plan.effects) > 0
"#;

pub(crate) fn policy(text: &str) -> Policy {
    let sources = Sources {
        modules: vec![("p.rego".to_owned(), text.to_owned())],
        data: None,
    };
    Policy::from_sources(sources, "test").unwrap()
}

/// The test agent's id, as its plans name it.
pub(crate) async fn agent_id(gw: &Gateway) -> String {
    let plan = gw.dry_run(retention("prj_184", 9)).await;
    plan["caller"]["agent_id"].as_str().unwrap().to_owned()
}

/// A standing approval by `approver` of the test agent's retention changes on prj_184 of at least
/// 7 days, 10 plans, 1 credit each, 10 in all, for a week.
pub(crate) fn statement(gw: &Gateway, approver: &Approver, agent: &str) -> StandingStatement {
    let now = chrono::SubsecRound::trunc_subsecs(chrono::Utc::now(), 0);
    StandingStatement {
        kind: STANDING_STATEMENT_TYPE.to_owned(),
        standing_id: new_standing_id(),
        approver_id: approver.id.clone(),
        key_id: approver.key_id.clone(),
        audience: gw.state.gateway_id.clone(),
        agent_id: agent.to_owned(),
        capability_id: SETTINGS.to_owned(),
        constraints: vec![
            Constraint {
                param: "/project".into(),
                one_of: Some(vec![json!("prj_184")]),
                at_least: None,
                at_most: None,
            },
            Constraint {
                param: "/retention_days".into(),
                one_of: None,
                at_least: Some(7.0),
                at_most: None,
            },
        ],
        resources: vec!["projects/prj_184*".into()],
        risk_flags: vec![],
        max_cost_per_plan: Credits::cents(100),
        max_cost_total: Credits::cents(1000),
        max_plans: 10,
        reason: "Retention tuning this week".into(),
        nonce: new_nonce(),
        issued_at: now,
        expires_at: now + chrono::Duration::days(7),
    }
}

pub(crate) async fn send(gw: &Gateway, approver: &Approver, envelope: &Envelope) -> Reply {
    gw.call(
        "POST",
        "/v1/standing",
        Some(&approver.token),
        Some(serde_json::to_value(envelope).unwrap()),
    )
    .await
}

pub(crate) async fn create(
    gw: &Gateway,
    approver: &Approver,
    statement: &StandingStatement,
) -> Value {
    let reply = send(gw, approver, &statement.sign(&approver.key).unwrap()).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    reply.body
}

pub(crate) async fn listed(gw: &Gateway, approver: &Approver, id: &str) -> Value {
    let reply = gw
        .call("GET", "/v1/standing", Some(&approver.token), None)
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["standing_id"] == id)
        .cloned()
        .unwrap()
}

pub(crate) async fn queued(gw: &Gateway, approver: &Approver) -> Vec<String> {
    let reply = gw
        .call("GET", "/v1/approvals", Some(&approver.token), None)
        .await;
    reply.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["plan_id"].as_str().unwrap().to_owned())
        .collect()
}

pub(crate) async fn status(gw: &Gateway, approver: &Approver, plan: &Value) -> String {
    let plan_id = plan["plan_id"].as_str().unwrap();
    let reply = gw.record(&approver.token, plan_id).await;
    reply.body["status"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_matching_plan_is_approved_as_it_is_stored_and_runs() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let agent = agent_id(&gw).await;
    let s = statement(&gw, &dana, &agent);
    let created = create(&gw, &dana, &s).await;
    assert_eq!(created["state"], "active");
    assert_eq!(created["statement"]["reason"], "Retention tuning this week");

    let plan = gw.dry_run(retention("prj_184", 14)).await;
    assert_eq!(plan["status"], "approved", "{plan}");
    let received = &plan["approvals"]["received"][0];
    assert_eq!(received["approver_id"], dana.id.as_str());
    assert_eq!(received["standing_id"], s.standing_id.as_str());
    // Never in anyone's queue; the record names the standing approval used.
    assert!(!queued(&gw, &dana)
        .await
        .contains(&plan["plan_id"].as_str().unwrap().to_owned()));
    let record = gw
        .record(&dana.token, plan["plan_id"].as_str().unwrap())
        .await;
    assert_eq!(
        record.body["approvals"]["received"][0]["standing_id"],
        s.standing_id.as_str()
    );
    // Approved, not yet run: covered, and nothing of it used.
    let covering = listed(&gw, &dana, &s.standing_id).await;
    assert_eq!(covering["plans_used"], 0);
    assert_eq!(covering["covered"][0]["plan_id"], plan["plan_id"]);
    assert_eq!(covering["uses"], json!([]));
    let ran = gw.execute(&plan).await;
    assert_eq!(ran.status, StatusCode::OK, "{}", ran.body);

    let used = listed(&gw, &dana, &s.standing_id).await;
    assert_eq!(used["plans_used"], 1);
    assert_eq!(used["covered"], json!([]));
    assert_eq!(used["uses"][0]["number"], 1);
    assert_eq!(used["uses"][0]["plan_id"], plan["plan_id"]);
    assert_eq!(used["uses"][0]["plan_digest"], plan["plan_digest"]);
    // The audit names it, with the standing approval's envelope as the approval's.
    let plan_id = plan["plan_id"].as_str().unwrap();
    let uri = format!("/v1/audit?plan_id={plan_id}");
    let audit = gw.call("GET", &uri, Some(&dana.token), None).await;
    let decision = &audit.body["decisions"][0];
    assert_eq!(
        decision["standing_id"],
        s.standing_id.as_str(),
        "{}",
        audit.body
    );
    let envelope: Envelope = serde_json::from_str(decision["envelope"].as_str().unwrap()).unwrap();
    assert_eq!(envelope, s.sign(&dana.key).unwrap());
}

#[tokio::test]
async fn a_plan_outside_its_constraints_waits_for_people() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let agent = agent_id(&gw).await;
    let s = statement(&gw, &dana, &agent);
    create(&gw, &dana, &s).await;
    for params in [retention("prj_184", 3), retention("prj_200", 14)] {
        let plan = gw.dry_run(params.clone()).await;
        assert!(plan.get("status").is_none(), "{params}: {plan}");
        assert_eq!(status(&gw, &dana, &plan).await, "pending_approval");
    }
    assert_eq!(listed(&gw, &dana, &s.standing_id).await["plans_used"], 0);
}

pub(crate) fn upload(n: usize) -> Value {
    json!({"project": "prj_184", "filename": format!("notes-{n}.txt"), "mime_type": "text/plain",
           "size_bytes": 1000})
}

#[tokio::test]
async fn an_expired_standing_approval_covers_nothing() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let agent = agent_id(&gw).await;
    let mut s = statement(&gw, &dana, &agent);
    s.expires_at = s.issued_at + chrono::Duration::seconds(2);
    create(&gw, &dana, &s).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let plan = gw.dry_run(retention("prj_184", 14)).await;
    assert!(plan.get("status").is_none(), "{plan}");
    assert_eq!(listed(&gw, &dana, &s.standing_id).await["state"], "expired");
}

#[tokio::test]
async fn revoked_by_its_signer_its_unrun_approvals_stop_counting() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let lena = gw.enroll("Lena").await;
    let agent = agent_id(&gw).await;
    let s = statement(&gw, &dana, &agent);
    create(&gw, &dana, &s).await;
    let plan = gw.dry_run(retention("prj_184", 14)).await;
    assert_eq!(plan["status"], "approved");
    let uri = format!("/v1/standing/{}/revoke", s.standing_id);
    let other = gw.call("POST", &uri, Some(&lena.token), None).await;
    assert_error(&other, "forbidden", 403);
    let revoked = gw.call("POST", &uri, Some(&dana.token), None).await;
    assert_eq!(revoked.status, StatusCode::OK, "{}", revoked.body);
    assert_eq!(revoked.body["state"], "revoked");
    // The plan it approved and that has not run waits for people again, in the queue.
    assert_eq!(status(&gw, &dana, &plan).await, "pending_approval");
    assert!(queued(&gw, &dana)
        .await
        .contains(&plan["plan_id"].as_str().unwrap().to_owned()));
    let next = gw.dry_run(retention("prj_184", 15)).await;
    assert!(next.get("status").is_none(), "{next}");
}

#[tokio::test]
async fn an_admin_revokes_it_and_a_revoked_key_or_approver_ends_it() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let agent = agent_id(&gw).await;
    let by_admin = statement(&gw, &dana, &agent);
    create(&gw, &dana, &by_admin).await;
    let revoked = standing::revoke(
        (&gw.state.store, gw.state.registry),
        (&**gw.state).into(),
        Revoker::Admin,
        &by_admin.standing_id,
    )
    .await
    .unwrap();
    assert_eq!(
        revoked
            .state_reason
            .as_deref()
            .map(|r| r.starts_with("revoked by an admin")),
        Some(true)
    );

    let with_key = statement(&gw, &dana, &agent);
    create(&gw, &dana, &with_key).await;
    let plan = gw.dry_run(retention("prj_184", 14)).await;
    assert_eq!(plan["status"], "approved");
    revocation::revoke_key(&gw.state.store, gw.state.registry, &dana.key_id)
        .await
        .unwrap();
    let ended = listed(&gw, &gw.enroll("Lena").await, &with_key.standing_id).await;
    assert_eq!(ended["state"], "revoked");
    assert_eq!(ended["state_reason"], "the key that signed it was revoked");
    assert_eq!(
        status(&gw, &gw.enroll("Mo").await, &plan).await,
        "pending_approval"
    );
    let next = gw.dry_run(retention("prj_184", 15)).await;
    assert!(next.get("status").is_none(), "{next}");
    // A revoked approver's standing approvals end as well.
    let ana = gw.enroll("Ana").await;
    let by_ana = statement(&gw, &ana, &agent);
    create(&gw, &ana, &by_ana).await;
    let covered = gw.dry_run(retention("prj_184", 16)).await;
    assert_eq!(covered["status"], "approved");
    revocation::revoke_approver(&gw.state.store, gw.state.registry, &ana.id)
        .await
        .unwrap();
    let lee = gw.enroll("Lee").await;
    let ended = listed(&gw, &lee, &by_ana.standing_id).await;
    assert_eq!(ended["state_reason"], "its approver was revoked");
    assert_eq!(status(&gw, &lee, &covered).await, "pending_approval");
    let after = gw.dry_run(retention("prj_184", 17)).await;
    assert!(after.get("status").is_none(), "{after}");
}

#[tokio::test]
async fn the_policy_bounds_what_it_may_cover_and_a_change_suspends_it() {
    // The built-in policy lets no standing approval cover bulk plans.
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let agent = agent_id(&gw).await;
    let mut bulk = statement(&gw, &dana, &agent);
    bulk.risk_flags = vec![RiskFlag::Bulk];
    let reply = send(&gw, &dana, &bulk.sign(&dana.key).unwrap()).await;
    assert_error(&reply, "policy_denied", 403);

    // A policy that lets it; then the built-in one again on the same store suspends it.
    let allowing = format!("{EVERY_PLAN}\nstanding_flags := {{\"bulk\", \"money\"}}\n");
    let database = on_disk(true).await;
    let store = Store::open(&database).await.unwrap();
    seed_demo(&store).await.unwrap();
    let registry = countersign_embedded::default_registry();
    let before = state_with_policy(
        store,
        "Test",
        Default::default(),
        registry,
        policy(&allowing),
    );
    let gw = Gateway::from_state(before.await.unwrap()).await;
    let dana = gw.enroll("Dana").await;
    let agent = agent_id(&gw).await;
    let mut bulk = statement(&gw, &dana, &agent);
    bulk.risk_flags = vec![RiskFlag::Bulk];
    assert_eq!(create(&gw, &dana, &bulk).await["state"], "active");
    let token = gw.agent.clone();
    drop(gw);
    let store = Store::open(&database).await.unwrap();
    let after = state_with_policy(
        store,
        "Test",
        Default::default(),
        registry,
        Policy::builtin(),
    );
    let gw = Gateway::acting_as(after.await.unwrap(), token);
    let suspended = listed(&gw, &dana, &bulk.standing_id).await;
    assert_eq!(suspended["state"], "suspended");
    assert!(
        suspended["state_reason"].as_str().unwrap().contains("bulk"),
        "{suspended}"
    );
}

#[tokio::test]
async fn forged_replayed_and_misaddressed_statements_are_refused() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let lena = gw.enroll("Lena").await;
    let agent = agent_id(&gw).await;
    let s = statement(&gw, &dana, &agent);
    let envelope = s.sign(&dana.key).unwrap();

    // One flipped byte of the payload: 19 credits in all instead of 10.
    let mut payload = envelope.payload_bytes().unwrap();
    let text = String::from_utf8(payload.clone()).unwrap();
    let at = text.find("\"10.00\"").unwrap() + 1;
    payload[at + 1] = b'9';
    let forged = Envelope {
        payload: base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &payload),
        ..envelope.clone()
    };
    assert_error(&send(&gw, &dana, &forged).await, "bad_signature", 401);
    // Dana's statement sent with Lena's token.
    assert_error(&send(&gw, &lena, &envelope).await, "bad_signature", 401);
    let mut elsewhere = s.clone();
    elsewhere.audience = "gw_other".into();
    let reply = send(&gw, &dana, &elsewhere.sign(&dana.key).unwrap()).await;
    assert_error(&reply, "audience_mismatch", 422);

    assert_eq!(
        send(&gw, &dana, &envelope).await.status,
        StatusCode::CREATED
    );
    assert_error(&send(&gw, &dana, &envelope).await, "nonce_reused", 409);
    let mut again = s.clone();
    again.standing_id = new_standing_id();
    let reply = send(&gw, &dana, &again.sign(&dana.key).unwrap()).await;
    assert_error(&reply, "nonce_reused", 409);
    let rows = "SELECT COUNT(*) FROM standing_approvals WHERE approver_id = $1";
    assert_eq!(gw.count(rows, &dana.id).await, 1);
}

#[tokio::test]
async fn over_mcp_a_covered_plan_is_approved_and_wait_returns_at_once() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let agent = agent_id(&gw).await;
    let s = statement(&gw, &dana, &agent);
    create(&gw, &dana, &s).await;
    let answer = gw.tool(&gw.agent, SETTINGS, retention("prj_184", 21)).await;
    let result = &answer["result"];
    assert_eq!(
        result["structuredContent"]["status"], "approved",
        "{answer}"
    );
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("Approved at once by Dana (standing approval sa_"),
        "{text}"
    );
    let plan_id = result["structuredContent"]["plan_id"].as_str().unwrap();
    let waited = gw
        .tool(
            &gw.agent,
            "countersign_wait",
            json!({"plan_id": plan_id, "timeout_seconds": 30}),
        )
        .await;
    assert_eq!(
        waited["result"]["structuredContent"]["status"], "approved",
        "{waited}"
    );
    assert_eq!(waited["result"]["structuredContent"]["timed_out"], false);
}

/// The gateway's identity key, as `GET /v1/approvers/keys` names it.
pub(crate) async fn gateway_key(gw: &Gateway, approver: &Approver) -> VerifyingKey {
    let keys = gw
        .call("GET", "/v1/approvers/keys", Some(&approver.token), None)
        .await;
    let key = &keys.body["gateway_key"];
    assert_eq!(
        key["fingerprint"],
        countersign_proto::enrollment::fingerprint(&gw.state.identity.verifying_key())
    );
    decode_public_key(key["public_key"].as_str().unwrap()).unwrap()
}

/// The receipt in `value`, opened under `key`.
pub(crate) fn receipt(value: &Value, key: &VerifyingKey) -> Receipt {
    let envelope: Envelope = serde_json::from_value(value.clone()).unwrap();
    Receipt::open(&envelope, key).unwrap()
}

#[tokio::test]
async fn the_gateway_countersigns_a_standing_approval_and_each_use() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let agent = agent_id(&gw).await;
    let s = statement(&gw, &dana, &agent);
    let created = create(&gw, &dana, &s).await;
    let key = gateway_key(&gw, &dana).await;
    let accepted = receipt(&created["receipt"], &key);
    let envelope = s.sign(&dana.key).unwrap();
    assert_eq!(accepted.accepted, Accepted::Standing);
    assert_eq!(accepted.gateway_id, gw.state.gateway_id);
    assert_eq!(
        accepted.standing_id.as_deref(),
        Some(s.standing_id.as_str())
    );
    assert_eq!(
        accepted.envelope_digest,
        envelope_digest(&envelope).unwrap()
    );
    let age = chrono::Utc::now() - accepted.accepted_at;
    assert!(age >= chrono::Duration::zero() && age < chrono::Duration::minutes(1));
    for days in [14, 15] {
        let plan = gw
            .dry_run(json!({"project": "prj_184", "retention_days": days}))
            .await;
        assert_eq!(gw.execute(&plan).await.status, StatusCode::OK);
    }
    let used = listed(&gw, &dana, &s.standing_id).await;
    // Newest first: the second plan that ran is use 2.
    for (i, number) in [(0, 2), (1, 1)] {
        let entry = &used["uses"][i];
        let taken = receipt(&entry["receipt"], &key);
        assert_eq!(taken.accepted, Accepted::StandingUse);
        assert_eq!(taken.use_number, Some(number));
        assert_eq!(taken.plan_id.as_deref(), entry["plan_id"].as_str());
        assert_eq!(taken.plan_digest.as_deref(), entry["plan_digest"].as_str());
        assert_eq!(taken.envelope_digest, accepted.envelope_digest);
    }
}

#[tokio::test]
async fn an_approver_holds_at_most_a_hundred_active_standing_approvals() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let agent = agent_id(&gw).await;
    for _ in 0..standing::MAX_ACTIVE {
        create(&gw, &dana, &statement(&gw, &dana, &agent)).await;
    }
    let over = statement(&gw, &dana, &agent);
    let reply = send(&gw, &dana, &over.sign(&dana.key).unwrap()).await;
    assert_error(&reply, "validation_error", 422);
    let message = reply.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("at most 100 active"), "{message}");
    // Another approver is not held to Dana's, and a revoked one makes room.
    let lena = gw.enroll("Lena").await;
    create(&gw, &lena, &statement(&gw, &lena, &agent)).await;
    let mine = "SELECT id FROM standing_approvals WHERE approver_id = $1 LIMIT 1";
    let id: String = sqlx::query_scalar(mine)
        .bind(&dana.id)
        .fetch_one(gw.state.store.pool())
        .await
        .unwrap();
    let uri = format!("/v1/standing/{id}/revoke");
    let revoked = gw.call("POST", &uri, Some(&dana.token), None).await;
    assert_eq!(revoked.status, StatusCode::OK, "{}", revoked.body);
    create(&gw, &dana, &over).await;
}

#[tokio::test]
async fn the_list_comes_in_pages_newest_first() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let agent = agent_id(&gw).await;
    let mut made = Vec::new();
    for _ in 0..5 {
        let s = statement(&gw, &dana, &agent);
        create(&gw, &dana, &s).await;
        made.push(s.standing_id);
    }
    let mut seen = Vec::new();
    let mut uri = "/v1/standing?limit=2".to_owned();
    let mut pages = 0;
    loop {
        let page = gw.call("GET", &uri, Some(&dana.token), None).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.body);
        let items = page.body["items"].as_array().unwrap();
        assert!(items.len() <= 2);
        seen.extend(
            items
                .iter()
                .map(|i| i["standing_id"].as_str().unwrap().to_owned()),
        );
        pages += 1;
        match page.body["next_cursor"].as_str() {
            Some(cursor) => uri = format!("/v1/standing?limit=2&cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    made.sort();
    let mut sorted = seen.clone();
    sorted.sort();
    assert_eq!(sorted, made, "each once: {seen:?}");
    for bad in [
        "/v1/standing?limit=0",
        "/v1/standing?limit=101",
        "/v1/standing?cursor=x",
    ] {
        let reply = gw.call("GET", bad, Some(&dana.token), None).await;
        assert_error(&reply, "validation_error", 422);
    }
}
