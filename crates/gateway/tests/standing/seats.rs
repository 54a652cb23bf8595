//! Where a standing approval may count: one seat of a plan at most, whatever its policy says, so
//! that a plan needing two people always has one who decided it; never a rule of three; never
//! for the person a plan acts for or grants to; and its signer never fills a second seat by hand.

use axum::http::StatusCode;
use countersign_proto::approvals::RiskFlag;
use countersign_proto::statement::Signed as _;
use serde_json::json;

use super::{agent_id, create, listed, policy, send, statement, status, EVERY_PLAN};
use crate::common::{approve_by, assert_error, grant, retention, Gateway, GRANT};

/// A rule of two people, which standing approvals may sit in.
const TWO: &str = r#"package countersign.approval
import rego.v1
rules contains {"id": "two", "count": 2, "standing": true} if count(input.plan.effects) > 0
"#;

/// Two rules of one person each, both taking standing approvals.
const ONE_AND_ONE: &str = r#"package countersign.approval
import rego.v1
rules contains {"id": "first", "count": 1, "standing": true} if count(input.plan.effects) > 0
rules contains {"id": "second", "count": 1, "standing": true} if count(input.plan.effects) > 0
"#;

#[tokio::test]
async fn standing_approvals_of_two_or_three_people_fill_one_seat_and_a_person_decides() {
    for (text, signers) in [(TWO, 2), (TWO, 3), (ONE_AND_ONE, 2)] {
        let gw = Gateway::with_policy(policy(text)).await;
        let agent = agent_id(&gw).await;
        for name in ["Dana", "Lena", "Mo"].into_iter().take(signers) {
            let signer = gw.enroll(name).await;
            create(&gw, &signer, &statement(&gw, &signer, &agent)).await;
        }
        // A reversible change (retention 14 days on prj_184) every standing approval covers.
        let plan = gw.dry_run(retention("prj_184", 14)).await;
        assert!(plan.get("status").is_none(), "{signers}: {plan}");
        let tom = gw.enroll("Tom").await;
        let record = gw
            .record(&tom.token, plan["plan_id"].as_str().unwrap())
            .await;
        assert_eq!(record.body["status"], "pending_approval");
        let received = record.body["approvals"]["received"].as_array().unwrap();
        assert_eq!(received.len(), 1, "{}", record.body);
        assert!(received[0]["standing_id"].is_string());
        let seated: usize = record.body["approvals"]["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["met_by"].as_array().unwrap().len())
            .sum();
        assert_eq!(seated, 1);
        assert_eq!(record.body["eligibility"]["eligible"], true);
        // It runs only once a person decided it.
        assert_error(&gw.execute(&plan).await, "approval_required", 409);
        let decided = approve_by(&gw, &plan, &[&tom]).await;
        assert_eq!(decided.body["status"], "approved", "{}", decided.body);
        assert_eq!(gw.execute(&plan).await.status, StatusCode::OK);
    }
}

#[tokio::test]
async fn it_never_fills_a_rule_of_more_than_two_people() {
    let three = TWO.replace("\"two\", \"count\": 2", "\"three\", \"count\": 3");
    let gw = Gateway::with_policy(policy(&three)).await;
    let dana = gw.enroll("Dana").await;
    let agent = agent_id(&gw).await;
    let s = statement(&gw, &dana, &agent);
    create(&gw, &dana, &s).await;
    let plan = gw.dry_run(retention("prj_184", 14)).await;
    let record = gw
        .record(&dana.token, plan["plan_id"].as_str().unwrap())
        .await;
    assert_eq!(
        record.body["approvals"]["received"],
        json!([]),
        "{}",
        record.body
    );
    assert_eq!(
        listed(&gw, &dana, &s.standing_id).await["covered"],
        json!([])
    );
}

#[tokio::test]
async fn its_signer_fills_no_second_seat_by_hand() {
    let gw = Gateway::with_policy(policy(TWO)).await;
    let dana = gw.enroll("Dana").await;
    let agent = agent_id(&gw).await;
    create(&gw, &dana, &statement(&gw, &dana, &agent)).await;
    let plan = gw.dry_run(retention("prj_184", 14)).await;
    let plan_id = plan["plan_id"].as_str().unwrap();
    let seen = gw.record(&dana.token, plan_id).await;
    assert_eq!(seen.body["eligibility"]["eligible"], false, "{}", seen.body);
    let statement = dana.statement(&gw, &plan);
    dana.refused(&gw, plan_id, &statement, "not_eligible", 403)
        .await;
    assert_eq!(status(&gw, &dana, &plan).await, "pending_approval");
}

#[tokio::test]
async fn it_never_approves_a_grant_to_its_signer() {
    // A grant is irreversible (its invitation email), which the built-in policy keeps from
    // standing approvals: this one lets them cover it.
    let flags = "standing_flags := {\"irreversible\", \"access_change\", \"external\", \"uncertain\", \"money\"}";
    let gw = Gateway::with_policy(policy(&format!("{EVERY_PLAN}\n{flags}\n"))).await;
    let sam = gw.enroll_as("Sam", "usr_92").await;
    let agent = agent_id(&gw).await;
    let mut s = statement(&gw, &sam, &agent);
    s.capability_id = GRANT.into();
    s.constraints.clear();
    s.resources.clear();
    s.risk_flags = vec![
        RiskFlag::Irreversible,
        RiskFlag::AccessChange,
        RiskFlag::External,
        RiskFlag::Uncertain,
        RiskFlag::Money,
    ];
    create(&gw, &sam, &s).await;
    let to_sam = gw
        .preview(GRANT, grant("prj_421", "usr_92", "editor"))
        .await;
    assert!(to_sam.get("status").is_none(), "{to_sam}");
    let to_other = gw
        .preview(GRANT, grant("prj_421", "usr_38", "editor"))
        .await;
    assert_eq!(to_other["status"], "approved", "{to_other}");
}

#[tokio::test]
async fn it_never_approves_a_plan_made_on_its_signers_behalf() {
    let gw = Gateway::new().await;
    // The test agent acts for usr_lead: a standing approval of theirs for it is refused.
    let lead = gw.enroll_as("Lead", "usr_lead").await;
    let agent = agent_id(&gw).await;
    let own = statement(&gw, &lead, &agent);
    let reply = send(&gw, &lead, &own.sign(&lead.key).unwrap()).await;
    assert_error(&reply, "not_eligible", 403);
    // One stored before its agent acted for its signer (as an older store may hold) covers
    // nothing of what the agent now does for them.
    let ana = gw.enroll_as("Ana", "usr_38").await;
    create(&gw, &ana, &statement(&gw, &ana, &agent)).await;
    sqlx::query("UPDATE agents SET on_behalf_of = 'usr_38' WHERE id = $1")
        .bind(&agent)
        .execute(gw.state.store.pool())
        .await
        .unwrap();
    let plan = gw.dry_run(retention("prj_184", 14)).await;
    assert!(plan.get("status").is_none(), "{plan}");
    assert_eq!(plan["caller"]["on_behalf_of"], "usr_38");
}
