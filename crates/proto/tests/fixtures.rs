//! The independent implementation's fixtures, reproduced byte for byte.

use std::path::PathBuf;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use countersign_proto::approvals::RiskFlag;
use countersign_proto::decision::Statement;
use countersign_proto::digest::{plan_digest, request_digest, subjects_digest};
use countersign_proto::dsse::{decode_public_key, encode_public_key, pae, Envelope};
use countersign_proto::plan::Preview;
use countersign_proto::risk::{default_high_cost_threshold, risk_flags};
use countersign_proto::statement::Signed as _;
use ed25519_dalek::SigningKey;
use serde_json::{json, Value};

fn fixture(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures")
        .join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn vector() -> Value {
    fixture("decision-vector.json")
}

fn signing_key() -> SigningKey {
    let seed: [u8; 32] = hex::decode(vector()["ed25519_seed_hex"].as_str().unwrap())
        .unwrap()
        .try_into()
        .unwrap();
    SigningKey::from_bytes(&seed)
}

fn statement() -> Statement {
    serde_json::from_value(vector()["statement"].clone()).unwrap()
}

fn envelope() -> Envelope {
    serde_json::from_value(vector()["envelope"].clone()).unwrap()
}

#[test]
fn plan_digests_match_both_fixtures() {
    for name in ["plan-small.json", "plan-bulk.json"] {
        let plan = fixture(name);
        assert_eq!(
            plan_digest(&plan).unwrap(),
            plan["plan_digest"].as_str().unwrap(),
            "{name}"
        );
    }
}

#[test]
fn typed_round_trip_keeps_the_digest() {
    for name in ["plan-small.json", "plan-bulk.json"] {
        let raw = fixture(name);
        let typed: Preview = serde_json::from_value(raw.clone()).unwrap();
        let again = serde_json::to_value(&typed).unwrap();
        assert_eq!(plan_digest(&again).unwrap(), typed.plan_digest, "{name}");
        assert_eq!(again, raw, "{name}");
    }
}

#[test]
fn request_digests_match_both_fixtures() {
    for name in ["plan-small.json", "plan-bulk.json"] {
        let plan = fixture(name);
        let digest = request_digest(
            plan["capability_id"].as_str().unwrap(),
            &plan["request"]["params"],
        )
        .unwrap();
        assert_eq!(digest, plan["request_digest"].as_str().unwrap(), "{name}");
    }
}

#[test]
fn subject_digests_match_the_bulk_fixture() {
    let plan = fixture("plan-bulk.json");
    let all: Vec<String> = (1..=37).map(|i| format!("usr_{i:02}")).collect();
    let sets: [(usize, Vec<String>); 4] = [
        (0, all.clone()),
        (
            1,
            ["usr_08", "usr_19", "usr_31", "usr_34"]
                .map(String::from)
                .to_vec(),
        ),
        (
            2,
            ["usr_35", "usr_02", "usr_07", "usr_11", "usr_24", "usr_29"]
                .map(String::from)
                .to_vec(),
        ),
        (3, all.into_iter().rev().collect()),
    ];
    for (index, ids) in sets {
        assert_eq!(
            subjects_digest(&ids),
            plan["effects"][index]["subjects"]["digest"]
                .as_str()
                .unwrap(),
            "effect {index}"
        );
    }
}

#[test]
fn subject_digest_matches_the_small_fixture() {
    let plan = fixture("plan-small.json");
    let ids: Vec<String> = (1..=18).map(|i| format!("itm_{i:02}")).collect();
    assert_eq!(
        subjects_digest(&ids),
        plan["effects"][1]["subjects"]["digest"].as_str().unwrap()
    );
}

#[test]
fn statement_jcs_pae_and_signature_match() {
    let v = vector();
    let statement = statement();
    let jcs = statement.canonical_bytes().unwrap();
    assert_eq!(
        String::from_utf8(jcs.clone()).unwrap(),
        v["statement_jcs"].as_str().unwrap()
    );
    let expected_pae = hex::decode(v["pae_hex"].as_str().unwrap()).unwrap();
    assert_eq!(
        pae("application/vnd.countersign.decision+json", &jcs),
        expected_pae
    );
    let key = signing_key();
    assert_eq!(
        encode_public_key(&key.verifying_key()),
        v["public_key_b64url"].as_str().unwrap()
    );
    let signed = statement.sign(&key).unwrap();
    assert_eq!(signed, envelope());
    assert_eq!(
        serde_json::to_value(&signed).unwrap(),
        v["envelope"],
        "envelope JSON"
    );
}

#[test]
fn the_fixture_envelope_verifies_and_binds_the_bulk_plan() {
    let v = vector();
    let public = decode_public_key(v["public_key_b64url"].as_str().unwrap()).unwrap();
    let opened = Statement::open(&envelope(), &public).unwrap();
    assert_eq!(opened, statement());
    let plan = fixture(v["plan_fixture"].as_str().unwrap());
    assert_eq!(opened.plan_digest, plan_digest(&plan).unwrap());
    assert_eq!(opened.plan_id, plan["plan_id"].as_str().unwrap());
}

/// Every member of the statement, changed on its own, breaks verification of the original signature.
#[test]
fn any_changed_statement_field_fails_verification() {
    let public = signing_key().verifying_key();
    let original = envelope();
    let sig = original.signatures.clone();
    let base = vector()["statement"].clone();
    for member in base.as_object().unwrap().keys() {
        let mut changed = base.clone();
        let replacement = match member.as_str() {
            "decision" => Value::from("reject"),
            "issued_at" | "expires_at" => Value::from("2026-11-30T10:02:00Z"),
            _ => Value::from(format!("{}x", base[member].as_str().unwrap())),
        };
        changed[member] = replacement;
        let statement: Statement = serde_json::from_value(changed).unwrap();
        let forged = Envelope {
            payload: STANDARD.encode(statement.canonical_bytes().unwrap()),
            signatures: sig.clone(),
            ..original.clone()
        };
        assert!(
            Statement::open(&forged, &public).is_err(),
            "changing {member} still verifies"
        );
    }
    let mut without_reason = statement();
    without_reason.reason = None;
    let forged = Envelope {
        payload: STANDARD.encode(without_reason.canonical_bytes().unwrap()),
        signatures: sig,
        ..original
    };
    assert!(Statement::open(&forged, &public).is_err());
}

#[test]
fn changed_payload_type_fails_verification() {
    let public = signing_key().verifying_key();
    let forged = Envelope {
        payload_type: "application/json".into(),
        ..envelope()
    };
    assert!(Statement::open(&forged, &public).is_err());
}

#[test]
fn any_flipped_signature_byte_fails_verification() {
    let public = signing_key().verifying_key();
    let original = envelope();
    let sig = STANDARD.decode(&original.signatures[0].sig).unwrap();
    for index in 0..sig.len() {
        let mut bad = sig.clone();
        bad[index] ^= 0x01;
        let mut forged = original.clone();
        forged.signatures[0].sig = STANDARD.encode(&bad);
        assert!(
            Statement::open(&forged, &public).is_err(),
            "byte {index} flipped still verifies"
        );
    }
}

#[test]
fn a_non_canonical_payload_is_refused_even_when_signed() {
    let key = signing_key();
    let pretty = serde_json::to_vec_pretty(&statement()).unwrap();
    let envelope = countersign_proto::dsse::sign(
        &key,
        "key_dana1",
        "application/vnd.countersign.decision+json",
        &pretty,
    );
    assert!(Statement::open(&envelope, &key.verifying_key()).is_err());
}

#[test]
fn risk_flags_of_the_bulk_fixture() {
    let plan: Preview = serde_json::from_value(fixture("plan-bulk.json")).unwrap();
    assert_eq!(
        risk_flags(&plan, default_high_cost_threshold()),
        vec![
            RiskFlag::Irreversible,
            RiskFlag::AccessChange,
            // The queued notifications carry a cost: money, though the plan's class is flat.
            RiskFlag::Money,
            RiskFlag::External,
            RiskFlag::Bulk,
            RiskFlag::Uncertain
        ]
    );
    let small: Preview = serde_json::from_value(fixture("plan-small.json")).unwrap();
    assert!(risk_flags(&small, default_high_cost_threshold()).is_empty());
}

#[test]
fn deletions_and_archivals_are_irreversible_whatever_the_effect_claims() {
    for kind in ["delete", "archive"] {
        let mut raw = fixture("plan-small.json");
        raw["effects"][0]["kind"] = json!(kind);
        raw["effects"][0]["reversible"] = json!(true);
        let plan: Preview = serde_json::from_value(raw).unwrap();
        assert_eq!(
            risk_flags(&plan, default_high_cost_threshold()),
            vec![RiskFlag::Irreversible],
            "{kind}"
        );
    }
}

#[test]
fn a_cost_on_any_effect_raises_money() {
    let mut raw = fixture("plan-small.json");
    let last = raw["effects"].as_array().unwrap().len() - 1;
    raw["effects"][last]["cost"] = json!({"amount": "0.01", "currency": "credits"});
    let plan: Preview = serde_json::from_value(raw).unwrap();
    assert_eq!(
        risk_flags(&plan, default_high_cost_threshold()),
        vec![RiskFlag::Money]
    );
}

#[test]
fn malformed_nonce_or_digest_is_refused_even_when_signed() {
    let key = signing_key();
    for (field, value) in [
        ("nonce", "short"),
        ("nonce", "00112233445566778899AABBCCDDEEFF"),
        ("plan_digest", "sha256:abc"),
    ] {
        let mut changed = vector()["statement"].clone();
        changed[field] = Value::from(value);
        let statement: Statement = serde_json::from_value(changed).unwrap();
        let envelope = statement.sign(&key).unwrap();
        assert!(
            Statement::open(&envelope, &key.verifying_key()).is_err(),
            "{field} = {value} accepted"
        );
    }
}

#[test]
fn enrollment_secrets_stay_out_of_debug_output() {
    let request = countersign_proto::approvals::EnrollRequest {
        enrollment_code: "cse_secret".into(),
        display_name: Some("Dana".into()),
        public_key: "pk".into(),
    };
    assert!(!format!("{request:?}").contains("cse_secret"));
}
