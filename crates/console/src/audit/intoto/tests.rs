use chrono::{Duration, TimeZone as _};
use countersign_proto::approvals::GatewayKey;
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

/// The test gateway's identity key.
fn gateway() -> SigningKey {
    SigningKey::from_bytes(&[9; 32])
}

/// When the test gateway accepted what it signed for.
fn accepted_at() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 5, 10, 0, 30).unwrap()
}

/// The test gateway's receipt for `envelope`, as `fill` completes it.
fn receipt_by(
    identity: &SigningKey,
    gateway_id: &str,
    (accepted, envelope): (Accepted, &Envelope),
    fill: impl FnOnce(&mut Receipt),
) -> Envelope {
    let mut receipt = Receipt::of(gateway_id, accepted, envelope, accepted_at()).unwrap();
    fill(&mut receipt);
    receipt.sign(identity).unwrap()
}

fn receipt(accepted: Accepted, envelope: &Envelope, fill: impl FnOnce(&mut Receipt)) -> Envelope {
    receipt_by(&gateway(), "gw_test", (accepted, envelope), fill)
}

fn keys(revoked_at: Option<DateTime<Utc>>) -> ApproverKeys {
    let identity = gateway().verifying_key();
    ApproverKeys {
        gateway_id: "gw_test".into(),
        gateway_key: Some(GatewayKey {
            fingerprint: fingerprint(&identity),
            public_key: encode_public_key(&identity),
        }),
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
    decision_line_issued(Utc.with_ymd_and_hms(2026, 12, 5, 10, 0, 0).unwrap())
}

/// A rejection of the small fixture issued at `issued_at`, with the gateway's receipt.
fn decision_line_issued(issued_at: DateTime<Utc>) -> String {
    let plan = fixture_plan();
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
    let receipt = receipt(Accepted::Decision, &envelope, |r| {
        r.plan_id = Some(signed.plan_id.clone());
        r.plan_digest = Some(signed.plan_digest.clone());
    });
    serde_json::to_string(&decision(&envelope, "Dana", &receipt).unwrap()).unwrap()
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
    let envelope = signed.sign(&key()).unwrap();
    let standing_id = signed.standing_id.clone();
    StandingApproval {
        standing_id: signed.standing_id.clone(),
        display_name: "Dana".into(),
        receipt: receipt(Accepted::Standing, &envelope, |r| {
            r.standing_id = Some(standing_id)
        }),
        envelope,
        statement: signed,
        plans_used: 1,
        credits_used: Credits::ZERO,
        state: StandingState::Active,
        state_reason: None,
        uses: Vec::new(),
        covered: Vec::new(),
    }
}

/// Use `number` of `standing`: the fixture plan ran under it.
fn use_of_fixture(standing: &StandingApproval, number: u32) -> StandingUse {
    let plan = fixture_plan();
    let (plan_id, digest) = (
        plan["plan_id"].as_str().unwrap().to_owned(),
        plan["plan_digest"].as_str().unwrap().to_owned(),
    );
    StandingUse {
        number,
        receipt: receipt(Accepted::StandingUse, &standing.envelope, |r| {
            r.standing_id = Some(standing.standing_id.clone());
            r.use_number = Some(number);
            r.plan_id = Some(plan_id.clone());
            r.plan_digest = Some(digest.clone());
        }),
        plan_id,
        plan_digest: digest,
        credits: Credits::ZERO,
        at: accepted_at(),
    }
}

fn use_line(standing: &StandingApproval) -> String {
    let used = use_of_fixture(standing, 1);
    serde_json::to_string(&standing_use(standing, &used, &fixture_plan()).unwrap()).unwrap()
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

    let used = standing_use(&standing, &use_of_fixture(&standing, 1), &fixture_plan()).unwrap();
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
        what.contains("ran under standing approval sa_0123456789abcdef of Dana (its use 1"),
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
    let line = use_line(&standing);
    let why = verify(&line, &keys(None)).unwrap_err();
    assert!(why.contains("does not cover"), "{why}");

    let line = decision_line();
    let mut elsewhere = keys(None);
    elsewhere.gateway_id = "gw_other".into();
    let why = verify(&line, &elsewhere).unwrap_err();
    assert!(why.contains("from gateway gw_test, not gw_other"), "{why}");
    let revoked = keys(Some(Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap()));
    assert!(verify(&line, &revoked)
        .unwrap_err()
        .contains("revoked before the gateway accepted it"));
    let mut stranger = keys(None);
    stranger.keys[0].public_key =
        encode_public_key(&SigningKey::from_bytes(&[6; 32]).verifying_key());
    assert!(verify(&line, &stranger).is_err());
}

/// Revoked at 10:00:10, between a statement's own time (10:00) and the gateway's acceptance
/// (10:00:30): a stolen key's backdated statement.
fn revoked_between() -> ApproverKeys {
    keys(Some(Utc.with_ymd_and_hms(2026, 12, 5, 10, 0, 10).unwrap()))
}

#[test]
fn revocation_is_judged_by_when_the_gateway_accepted_it_not_the_signers_own_time() {
    // Issued "before" the revocation by the statement's own word, accepted after it.
    let backdated = decision_line();
    let why = verify(&backdated, &revoked_between()).unwrap_err();
    assert!(
        why.contains("revoked before the gateway accepted it"),
        "{why}"
    );
    // The same key, revoked after the gateway accepted it: that decision stands.
    let later = keys(Some(Utc.with_ymd_and_hms(2026, 12, 5, 11, 0, 0).unwrap()));
    assert!(verify(&backdated, &later).is_ok());
}

#[test]
fn a_line_without_the_gateways_receipt_for_it_does_not_verify() {
    let line = decision_line();
    let entry: InTotoStatement = serde_json::from_str(&line).unwrap();
    let keys = keys(None);

    // No receipt at all.
    let mut bare: Value = serde_json::from_str(&line).unwrap();
    bare["predicate"].as_object_mut().unwrap().remove("receipt");
    assert!(verify(&bare.to_string(), &keys)
        .unwrap_err()
        .contains("not an exported entry"));

    // A receipt moved from another line: the standing approval's.
    let standing = standing_approval();
    let mut moved = entry.clone();
    moved.predicate.receipt = standing.receipt.clone();
    let why = verify(&serde_json::to_string(&moved).unwrap(), &keys).unwrap_err();
    assert!(why.contains("another envelope"), "{why}");

    // A receipt signed by another gateway, in this gateway's name or its own.
    for gateway_id in ["gw_test", "gw_other"] {
        let other = receipt_by(
            &SigningKey::from_bytes(&[10; 32]),
            gateway_id,
            (Accepted::Decision, &entry.predicate.envelope),
            |r| {
                r.plan_id = Some(fixture_plan()["plan_id"].as_str().unwrap().into());
                r.plan_digest = Some(fixture_plan()["plan_digest"].as_str().unwrap().into());
            },
        );
        let mut foreign = entry.clone();
        foreign.predicate.receipt = other;
        let why = verify(&serde_json::to_string(&foreign).unwrap(), &keys).unwrap_err();
        assert!(why.contains("its receipt does not verify"), "{why}");
    }

    // A keys file from before receipts names no gateway key: nothing verifies against it.
    let mut old = keys.clone();
    old.gateway_key = None;
    assert!(verify(&line, &old).unwrap_err().contains("no gateway key"));
}

#[test]
fn a_use_line_written_from_the_public_list_does_not_verify() {
    // Anyone can read a standing approval and a plan, and write a line saying the plan ran
    // under it; only the gateway's receipt for that use makes it one.
    let standing = standing_approval();
    let mut forged = use_of_fixture(&standing, 1);
    forged.receipt = standing.receipt.clone();
    let line =
        serde_json::to_string(&standing_use(&standing, &forged, &fixture_plan()).unwrap()).unwrap();
    let why = verify(&line, &keys(None)).unwrap_err();
    assert!(why.contains("Standing, not a StandingUse"), "{why}");
    // A use receipt for another plan.
    let mut elsewhere = use_of_fixture(&standing, 1);
    elsewhere.receipt = receipt(Accepted::StandingUse, &standing.envelope, |r| {
        r.standing_id = Some(standing.standing_id.clone());
        r.use_number = Some(2);
        r.plan_id = Some("plan_other".into());
        r.plan_digest = Some(fixture_plan()["plan_digest"].as_str().unwrap().into());
    });
    let line =
        serde_json::to_string(&standing_use(&standing, &elsewhere, &fixture_plan()).unwrap())
            .unwrap();
    let why = verify(&line, &keys(None)).unwrap_err();
    assert!(why.contains("another plan"), "{why}");
    // Its own receipt verifies, and every flipped byte of it fails.
    let line = use_line(&standing);
    assert!(verify(&line, &keys(None)).is_ok());
    every_flip_fails(&line);
}
