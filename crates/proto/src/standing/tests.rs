use chrono::TimeZone as _;
use ed25519_dalek::SigningKey;
use serde_json::json;

use super::*;
use crate::dsse::DsseError;

/// One change made to a statement that would otherwise pass.
type Change = Box<dyn Fn(&mut StandingStatement)>;

fn fixture(name: &str) -> Preview {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures")
        .join(name);
    serde_json::from_slice(&std::fs::read(path).expect("the fixture is beside the project"))
        .expect("a preview")
}

/// Covers the small fixture: agt_ops updating prj_184's retention to 14 days.
fn statement() -> StandingStatement {
    let issued_at = Utc.with_ymd_and_hms(2026, 12, 1, 9, 0, 0).unwrap();
    StandingStatement {
        kind: STANDING_STATEMENT_TYPE.to_owned(),
        standing_id: "sa_0123456789abcdef".to_owned(),
        approver_id: "apr_dana".to_owned(),
        key_id: "key_1".to_owned(),
        audience: "gw_test".to_owned(),
        agent_id: "agt_ops".to_owned(),
        capability_id: "projects.settings.update".to_owned(),
        constraints: vec![
            Constraint {
                param: "/project".to_owned(),
                one_of: Some(vec![json!("prj_184")]),
                at_least: None,
                at_most: None,
            },
            Constraint {
                param: "/retention_days".to_owned(),
                one_of: None,
                at_least: Some(7.0),
                at_most: None,
            },
        ],
        resources: vec!["projects/prj_184*".to_owned()],
        risk_flags: vec![],
        max_cost_per_plan: Credits::cents(100),
        max_cost_total: Credits::cents(1000),
        max_plans: 10,
        reason: "Retention tuning this week".to_owned(),
        nonce: "00112233445566778899aabbccddeeff".to_owned(),
        issued_at,
        expires_at: issued_at + Duration::days(7),
    }
}

#[test]
fn a_plan_within_every_constraint_is_covered() {
    let plan = fixture("plan-small.json");
    assert_eq!(statement().refuses(&plan, &DEFAULT_COVERABLE), None);
}

#[test]
fn each_constraint_refuses_a_plan_outside_it() {
    let plan = fixture("plan-small.json");
    let cases: Vec<(Change, &str)> = vec![
        (
            Box::new(|s| s.agent_id = "agt_other".into()),
            "not agt_other's",
        ),
        (
            Box::new(|s| s.capability_id = "groups.members.remove".into()),
            "not groups.members.remove",
        ),
        (
            Box::new(|s| s.constraints[0].one_of = Some(vec![json!("prj_9")])),
            "project is \"prj_184\", not prj_9",
        ),
        (
            Box::new(|s| s.constraints[1].at_least = Some(30.0)),
            "retention_days is 14, below 30",
        ),
        (
            Box::new(|s| {
                s.constraints[1] = Constraint {
                    param: "/retention_days".into(),
                    one_of: None,
                    at_least: None,
                    at_most: Some(10.0),
                }
            }),
            "retention_days is 14, above 10",
        ),
        (
            Box::new(|s| s.constraints[0].param = "/owner".into()),
            "the request has no owner",
        ),
        (
            Box::new(|s| s.resources = vec!["projects/prj_9".into()]),
            "acts on projects/prj_184",
        ),
    ];
    for (change, why) in cases {
        let mut s = statement();
        change(&mut s);
        let refusal = s.refuses(&plan, &DEFAULT_COVERABLE).expect(why);
        assert!(refusal.contains(why), "{refusal:?} should say {why:?}");
    }
}

#[test]
fn risk_flags_and_cost_bound_what_is_covered() {
    let mut plan = fixture("plan-bulk.json");
    let mut s = statement();
    s.capability_id = plan.capability_id.clone();
    s.constraints.clear();
    s.resources.clear();
    // The bulk removal is irreversible, an access change, money, external, bulk and uncertain.
    let refusal = s.refuses(&plan, &DEFAULT_COVERABLE).unwrap();
    assert!(
        refusal.contains("irreversible, which it does not cover"),
        "{refusal}"
    );
    s.risk_flags = vec![
        RiskFlag::Irreversible,
        RiskFlag::AccessChange,
        RiskFlag::Money,
        RiskFlag::External,
        RiskFlag::Bulk,
        RiskFlag::Uncertain,
    ];
    let refusal = s.refuses(&plan, &DEFAULT_COVERABLE).unwrap();
    assert!(
        refusal.contains("which the approval policy lets no standing approval cover"),
        "{refusal}"
    );
    let everything = [
        RiskFlag::Irreversible,
        RiskFlag::AccessChange,
        RiskFlag::Money,
        RiskFlag::External,
        RiskFlag::Bulk,
        RiskFlag::Uncertain,
    ];
    assert_eq!(s.refuses(&plan, &everything), None);
    s.max_cost_per_plan = Credits::cents(30);
    let refusal = s.refuses(&plan, &everything).unwrap();
    assert!(
        refusal.contains("may cost 0.37 credits, over its 0.30 per plan"),
        "{refusal}"
    );
    plan.caller.agent_id = "agt_other".into();
    assert!(s.refuses(&plan, &everything).unwrap().contains("agt_other"));
}

#[test]
fn a_signed_statement_opens_and_a_flipped_byte_does_not() {
    let key = SigningKey::from_bytes(&[7; 32]);
    let s = statement();
    let envelope = s.sign(&key).unwrap();
    assert_eq!(
        StandingStatement::open(&envelope, &key.verifying_key()).unwrap(),
        s
    );
    let mut payload = envelope.payload_bytes().unwrap();
    let at = payload.iter().position(|b| *b == b'7').unwrap();
    payload[at] = b'8';
    let forged = Envelope {
        payload: base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &payload),
        ..envelope.clone()
    };
    assert!(matches!(
        StandingStatement::open(&forged, &key.verifying_key()),
        Err(StatementError::Dsse(DsseError::BadSignature))
    ));
    let other = SigningKey::from_bytes(&[8; 32]);
    assert!(StandingStatement::open(&envelope, &other.verifying_key()).is_err());
}

#[test]
fn ill_formed_statements_are_refused() {
    let cases: Vec<(Change, &str)> = vec![
        (
            Box::new(|s| s.expires_at = s.issued_at + Duration::days(31)),
            "at most 30 days",
        ),
        (Box::new(|s| s.max_plans = 0), "max_plans"),
        (
            Box::new(|s| s.max_cost_per_plan = Credits::cents(2000)),
            "per-plan cap",
        ),
        (Box::new(|s| s.reason = " ".into()), "needs a reason"),
        (
            Box::new(|s| s.constraints[0].at_least = Some(1.0)),
            "exactly one of",
        ),
        (Box::new(|s| s.resources = vec!["*".into()]), "lone *"),
        (
            Box::new(|s| s.risk_flags = vec![RiskFlag::Money, RiskFlag::Money]),
            "once",
        ),
        (Box::new(|s| s.standing_id = "sa_x".into()), "standing_id"),
    ];
    for (change, why) in cases {
        let mut s = statement();
        change(&mut s);
        let bytes = s.canonical_bytes().unwrap();
        match StandingStatement::from_payload(&bytes) {
            Err(StatementError::BadField(message)) => assert!(message.contains(why), "{message}"),
            other => panic!("{why}: {other:?}"),
        }
    }
    // Not canonical: the same statement with its members in another order.
    let mut value = serde_json::to_value(statement()).unwrap();
    let reason = value.as_object_mut().unwrap().remove("reason").unwrap();
    let mut text = serde_json::to_string(&value).unwrap();
    text.insert_str(1, &format!("\"reason\":{reason},"));
    assert!(matches!(
        StandingStatement::from_payload(text.as_bytes()),
        Err(StatementError::NotCanonical)
    ));
}

#[test]
fn allows_says_what_runs_without_asking() {
    let text = statement().allows();
    assert!(text.starts_with("Approves plans of agt_ops for projects.settings.update without asking, when project is prj_184; retention_days ≥ 7; acting only on projects/prj_184*; carrying no risk flag: up to 10 plans, 1.00 credits each and 10.00 credits in all, until 2026-12-08 09:00Z."), "{text}");
}

#[test]
fn bounds_compare_exactly_never_through_f64() {
    let mut plan = fixture("plan-small.json");
    let mut s = statement();
    s.constraints[1] = Constraint {
        param: "/retention_days".into(),
        one_of: None,
        at_least: None,
        at_most: Some(1e18),
    };
    // 10^18 + 1 rounds to 10^18 as an f64, and would pass a bound of 10^18 there.
    plan.request.params["retention_days"] = json!(1_000_000_000_000_000_001_u64);
    let refusal = s
        .refuses(&plan, &DEFAULT_COVERABLE)
        .expect("above its bound");
    assert!(refusal.contains("above 1000000000000000000"), "{refusal}");
    plan.request.params["retention_days"] = json!(1_000_000_000_000_000_000_u64);
    assert_eq!(s.refuses(&plan, &DEFAULT_COVERABLE), None);
    // A fraction just past a fractional bound.
    s.constraints[1].at_most = Some(0.3);
    plan.request.params["retention_days"] = json!(0.30000000000000004);
    assert!(s.refuses(&plan, &DEFAULT_COVERABLE).is_some());
    plan.request.params["retention_days"] = json!(0.3);
    assert_eq!(s.refuses(&plan, &DEFAULT_COVERABLE), None);
    // Too large for an exact decimal: not covered, rather than guessed.
    plan.request.params["retention_days"] = json!(1e300);
    let refusal = s.refuses(&plan, &DEFAULT_COVERABLE).unwrap();
    assert!(
        refusal.contains("too large to compare exactly"),
        "{refusal}"
    );
}
