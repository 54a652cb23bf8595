use chrono::{Duration, TimeZone as _};
use countersign_proto::decision::STATEMENT_TYPE as DECISION_TYPE;
use countersign_proto::dsse::encode_public_key;
use countersign_proto::standing::{Constraint, StandingState, STANDING_STATEMENT_TYPE};
use countersign_proto::Credits;
use ed25519_dalek::SigningKey;
use serde_json::json;

use super::*;

fn key() -> SigningKey {
    SigningKey::from_bytes(&[5; 32])
}

fn keys(revoked_at: Option<DateTime<Utc>>) -> ApproverKeys {
    ApproverKeys {
        gateway_id: "gw_test".into(),
        keys: vec![ApproverKey {
            approver_id: "apr_dana".into(),
            display_name: "Dana".into(),
            key_id: "key_1".into(),
            public_key: encode_public_key(&key().verifying_key()),
            created_at: Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap(),
            revoked_at,
        }],
    }
}

fn fixture_plan() -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/plan-small.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn decision_line() -> String {
    let plan = fixture_plan();
    let issued_at = Utc.with_ymd_and_hms(2026, 12, 5, 10, 0, 0).unwrap();
    let signed = Statement {
        kind: DECISION_TYPE.into(),
        plan_id: plan["plan_id"].as_str().unwrap().into(),
        plan_digest: plan["plan_digest"].as_str().unwrap().into(),
        decision: Decision::Reject,
        reason: Some("Not this week".into()),
        approver_id: "apr_dana".into(),
        key_id: "key_1".into(),
        audience: "gw_test".into(),
        nonce: "00112233445566778899aabbccddeeff".into(),
        issued_at,
        expires_at: issued_at + Duration::minutes(15),
    };
    let envelope = signed.sign(&key()).unwrap();
    serde_json::to_string(&decision(&envelope, "Dana").unwrap()).unwrap()
}

fn standing_approval() -> StandingApproval {
    let plan = fixture_plan();
    let created: DateTime<Utc> = serde_json::from_value(plan["created_at"].clone()).unwrap();
    let issued_at = created - Duration::days(1);
    let signed = StandingStatement {
        kind: STANDING_STATEMENT_TYPE.into(),
        standing_id: "sa_0123456789abcdef".into(),
        approver_id: "apr_dana".into(),
        key_id: "key_1".into(),
        audience: "gw_test".into(),
        agent_id: "agt_ops".into(),
        capability_id: "projects.settings.update".into(),
        constraints: vec![Constraint {
            param: "/project".into(),
            one_of: Some(vec![json!("prj_184")]),
            at_least: None,
            at_most: None,
        }],
        resources: vec!["projects/prj_184*".into()],
        risk_flags: vec![],
        max_cost_per_plan: Credits::cents(100),
        max_cost_total: Credits::cents(1000),
        max_plans: 10,
        reason: "Retention tuning".into(),
        nonce: "ffeeddccbbaa99887766554433221100".into(),
        issued_at,
        expires_at: issued_at + Duration::days(7),
    };
    StandingApproval {
        standing_id: signed.standing_id.clone(),
        display_name: "Dana".into(),
        envelope: signed.sign(&key()).unwrap(),
        statement: signed,
        plans_used: 1,
        credits_used: Credits::ZERO,
        state: StandingState::Active,
        state_reason: None,
        covered: Vec::new(),
    }
}

/// Every single-byte change of `line` (each byte's lowest bit flipped) fails to verify.
fn every_flip_fails(line: &str) {
    let keys = keys(None);
    for at in 0..line.len() {
        let mut bytes = line.as_bytes().to_vec();
        bytes[at] ^= 1;
        let Ok(flipped) = String::from_utf8(bytes) else {
            continue;
        };
        assert!(
            verify(&flipped, &keys).is_err(),
            "a flip at byte {at} verified: …{}…",
            &flipped[at.saturating_sub(20)..(at + 20).min(flipped.len())]
        );
    }
}

#[test]
fn a_decision_verifies_and_a_single_flipped_byte_does_not() {
    let line = decision_line();
    let what = verify(&line, &keys(None)).unwrap();
    assert!(what.starts_with("rejection of plan_"), "{what}");
    assert!(line.contains("\"result\":\"fail\""), "{line}");
    every_flip_fails(&line);
}

#[test]
fn a_standing_approval_and_a_plan_it_covered_verify_and_flipped_bytes_do_not() {
    let standing = standing_approval();
    let line = serde_json::to_string(&super::standing(&standing).unwrap()).unwrap();
    assert!(verify(&line, &keys(None))
        .unwrap()
        .starts_with("standing approval sa_0123456789abcdef by Dana"));
    every_flip_fails(&line);

    let used = standing_use(&standing, &fixture_plan()).unwrap();
    assert_eq!(
        used.subject[0].digest["sha256"],
        fixture_plan()["plan_digest"]
            .as_str()
            .unwrap()
            .trim_start_matches("sha256:")
    );
    let line = serde_json::to_string(&used).unwrap();
    let what = verify(&line, &keys(None)).unwrap();
    assert!(
        what.contains("covered by standing approval sa_0123456789abcdef"),
        "{what}"
    );
    every_flip_fails(&line);
}

#[test]
fn a_plan_outside_the_standing_terms_or_a_foreign_key_does_not_verify() {
    let mut standing = standing_approval();
    let mut other = standing.statement.clone();
    other.constraints[0].one_of = Some(vec![json!("prj_9")]);
    standing.envelope = other.sign(&key()).unwrap();
    standing.statement = other;
    let line = serde_json::to_string(&standing_use(&standing, &fixture_plan()).unwrap()).unwrap();
    let why = verify(&line, &keys(None)).unwrap_err();
    assert!(why.contains("does not cover"), "{why}");

    let line = decision_line();
    let mut elsewhere = keys(None);
    elsewhere.gateway_id = "gw_other".into();
    assert!(verify(&line, &elsewhere)
        .unwrap_err()
        .contains("not gateway gw_other"));
    let revoked = keys(Some(Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap()));
    assert!(verify(&line, &revoked)
        .unwrap_err()
        .contains("after it was revoked"));
    let mut stranger = keys(None);
    stranger.keys[0].public_key =
        encode_public_key(&SigningKey::from_bytes(&[6; 32]).verifying_key());
    assert!(verify(&line, &stranger).is_err());
}
