//! Signed statements made here with fixed test keys: the seeds of the standing-approval and
//! in-toto targets, and the keys an in-toto line is checked against. Made, not kept as files, so
//! that they follow the statements' shapes as those change.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use chrono::{DateTime, Duration, TimeZone, Utc};
use countersign_console::audit::intoto;
use countersign_proto::approvals::{ApproverKey, ApproverKeys, GatewayKey};
use countersign_proto::decision::{Decision, Statement, STATEMENT_TYPE};
use countersign_proto::dsse::{encode_public_key, Envelope};
use countersign_proto::enrollment::fingerprint;
use countersign_proto::receipt::{Accepted, Receipt};
use countersign_proto::standing::{
    Constraint, StandingApproval, StandingState, StandingStatement, StandingUse,
    STANDING_STATEMENT_TYPE,
};
use countersign_proto::statement::Signed as _;
use countersign_proto::Credits;
use ed25519_dalek::SigningKey;
use serde_json::{json, Value};

pub const GATEWAY_ID: &str = "gw_fuzz";

pub fn approver_key() -> SigningKey {
    SigningKey::from_bytes(&[5; 32])
}

fn gateway_key() -> SigningKey {
    SigningKey::from_bytes(&[9; 32])
}

/// The approver's and the gateway's keys, as `countersign-cli keys` writes them.
pub fn keys() -> ApproverKeys {
    let identity = gateway_key().verifying_key();
    ApproverKeys {
        gateway_id: GATEWAY_ID.into(),
        gateway_key: Some(GatewayKey {
            fingerprint: fingerprint(&identity),
            public_key: encode_public_key(&identity),
        }),
        keys: vec![ApproverKey {
            approver_id: "apr_fuzz".into(),
            display_name: "Fuzz".into(),
            key_id: "key_fuzz".into(),
            public_key: encode_public_key(&approver_key().verifying_key()),
            created_at: at(0),
            revoked_at: None,
        }],
    }
}

fn at(minutes: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 30, 9, 0, 0).unwrap() + Duration::minutes(minutes)
}

/// The small fixture plan (`../shared/fixtures`): what a decision and a standing approval's use
/// sign.
fn fixture() -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/plan-small.json");
    serde_json::from_slice(&std::fs::read(path).expect("the fixtures beside the project"))
        .expect("a plan")
}

fn receipt(accepted: Accepted, envelope: &Envelope, fill: impl FnOnce(&mut Receipt)) -> Envelope {
    let mut receipt = Receipt::of(GATEWAY_ID, accepted, envelope, at(90)).unwrap();
    fill(&mut receipt);
    receipt.sign(&gateway_key()).unwrap()
}

/// A standing approval of the fixture plan's agent and capability, signed.
fn standing_approval() -> StandingApproval {
    let plan = fixture();
    let created: DateTime<Utc> = serde_json::from_value(plan["created_at"].clone()).unwrap();
    let issued_at = created - Duration::days(1);
    let statement = StandingStatement {
        kind: STANDING_STATEMENT_TYPE.into(),
        standing_id: "sa_00112233aabbccdd".into(),
        approver_id: "apr_fuzz".into(),
        key_id: "key_fuzz".into(),
        audience: GATEWAY_ID.into(),
        agent_id: plan["caller"]["agent_id"].as_str().unwrap().into(),
        capability_id: plan["capability_id"].as_str().unwrap().into(),
        constraints: vec![Constraint {
            param: "/retention_days".into(),
            one_of: None,
            at_least: Some(7.0),
            at_most: None,
        }],
        resources: vec![],
        risk_flags: vec![],
        max_cost_per_plan: Credits::cents(100),
        max_cost_total: Credits::cents(1000),
        max_plans: 10,
        reason: "Fuzz".into(),
        nonce: "0123456789abcdef0123456789abcdef".into(),
        issued_at,
        expires_at: issued_at + Duration::days(7),
    };
    let envelope = statement.sign(&approver_key()).unwrap();
    StandingApproval {
        standing_id: statement.standing_id.clone(),
        display_name: "Fuzz".into(),
        receipt: receipt(Accepted::Standing, &envelope, |r| {
            r.standing_id = Some(statement.standing_id.clone())
        }),
        envelope,
        statement,
        plans_used: 1,
        credits_used: Credits::ZERO,
        state: StandingState::Active,
        state_reason: None,
        uses: Vec::new(),
        covered: Vec::new(),
    }
}

/// The made seeds of `target`, by name.
pub fn seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    let line = |entry: intoto::InTotoStatement| serde_json::to_vec(&entry).unwrap();
    match target {
        "standing" => {
            let standing = standing_approval();
            let pair = json!({
                "public_key": URL_SAFE_NO_PAD.encode(approver_key().verifying_key().as_bytes()),
                "envelope": standing.envelope,
            });
            vec![("with-key.json".into(), pair.to_string().into_bytes())]
        }
        "intoto" => {
            let plan = fixture();
            let signed = Statement {
                kind: STATEMENT_TYPE.into(),
                plan_id: plan["plan_id"].as_str().unwrap().into(),
                plan_digest: plan["plan_digest"].as_str().unwrap().into(),
                decision: Decision::Approve,
                reason: Some("Looked".into()),
                approver_id: "apr_fuzz".into(),
                key_id: "key_fuzz".into(),
                audience: GATEWAY_ID.into(),
                nonce: "ffeeddccbbaa99887766554433221100".into(),
                issued_at: at(60),
                expires_at: at(75),
            };
            let envelope = signed.sign(&approver_key()).unwrap();
            let accepted = receipt(Accepted::Decision, &envelope, |r| {
                r.plan_id = Some(signed.plan_id.clone());
                r.plan_digest = Some(signed.plan_digest.clone());
            });
            let standing = standing_approval();
            let used = StandingUse {
                number: 1,
                plan_id: signed.plan_id.clone(),
                plan_digest: signed.plan_digest.clone(),
                credits: Credits::ZERO,
                at: at(90),
                receipt: receipt(Accepted::StandingUse, &standing.envelope, |r| {
                    r.standing_id = Some(standing.standing_id.clone());
                    r.use_number = Some(1);
                    r.plan_id = Some(signed.plan_id.clone());
                    r.plan_digest = Some(signed.plan_digest.clone());
                }),
            };
            vec![
                (
                    "decision.json".into(),
                    line(intoto::decision(&envelope, "Fuzz", &accepted).unwrap()),
                ),
                (
                    "standing.json".into(),
                    line(intoto::standing(&standing).unwrap()),
                ),
                (
                    "use.json".into(),
                    line(intoto::standing_use(&standing, &used, &plan).unwrap()),
                ),
            ]
        }
        _ => Vec::new(),
    }
}
