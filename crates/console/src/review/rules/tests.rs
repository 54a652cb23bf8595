use serde_json::json;

use super::*;

fn summary(rules: serde_json::Value, received: serde_json::Value) -> PlanSummary {
    serde_json::from_value(json!({
        "plan_id": "plan_1", "plan_digest": "sha256:00", "capability_id": "c", "title": "T",
        "caller": {"agent_id": "agt_ops"}, "created_at": "2026-12-05T10:00:00Z",
        "expires_at": "2026-12-05T10:15:00Z", "status": "pending_approval",
        "estimated_cost": {"amount_min": "0", "amount_max": "0", "currency": "credits"},
        "effect_counts": {"direct": 1, "derived": 0}, "subjects_total": 0,
        "validation_counts": {"error": 0, "warning": 0, "info": 0}, "risk": [],
        "approvals": {"required": 3, "received": received, "rules": rules}
    }))
    .unwrap()
}

fn leads_and_finance() -> serde_json::Value {
    json!([
        {"id": "two_leads", "description": "Two leads", "count": 2, "teams": ["leads"],
         "met_by": ["apr_lena"], "missing": 1, "source": {"file": "p.rego", "line": 7}},
        {"id": "finance", "description": "Finance", "count": 1, "teams": ["finance"],
         "met_by": [], "missing": 1, "exclude_requester": true, "excludes_team": "finance"}
    ])
}

fn lena() -> serde_json::Value {
    json!([{"approver_id": "apr_lena", "display_name": "Lena", "decision": "approve",
            "at": "2026-12-05T10:01:00Z"}])
}

fn person(approver: &str, teams: &[&str]) -> ApproverProfile {
    ApproverProfile {
        approver_id: approver.into(),
        display_name: approver.into(),
        person: format!("usr_{approver}"),
        teams: teams.iter().map(|t| t.to_string()).collect(),
        standing_flags: None,
    }
}

#[test]
fn a_plan_waits_on_those_an_open_rule_asks_for() {
    let plan = summary(leads_and_finance(), lena());
    assert_eq!(turn(&plan, Some(&person("apr_sam", &["leads"]))), Turn::Me);
    assert_eq!(
        turn(&plan, Some(&person("apr_lena", &["leads"]))),
        Turn::Decided
    );
    assert_eq!(
        turn(&plan, Some(&person("apr_max", &["design"]))),
        Turn::Others
    );
    // The finance rule leaves the requesting agent's team (finance) out.
    assert_eq!(
        turn(&plan, Some(&person("apr_fay", &["finance"]))),
        Turn::Others
    );
    assert_eq!(turn(&plan, None), Turn::Me, "who I am is not known yet");
    let mut done = plan.clone();
    done.status = PlanStatus::Approved;
    assert_eq!(
        turn(&done, Some(&person("apr_sam", &["leads"]))),
        Turn::Others
    );
    // A plan from before rules asks anyone while approvals are missing.
    let legacy = summary(json!([]), lena());
    assert_eq!(turn(&legacy, Some(&person("apr_max", &[]))), Turn::Me);
}

#[test]
fn each_rule_reads_as_a_line_with_who_met_it_and_where_it_is_written() {
    let plan = summary(leads_and_finance(), lena());
    let sam = person("apr_sam", &["leads"]);
    let views = views(&plan.approvals, "agt_ops", Some(&sam));
    assert_eq!(views[0].line, "Needs 2 of leads — 1 received (Lena)");
    assert_eq!(views[0].source.as_deref(), Some("p.rego:7"));
    assert!(views[0].asks_me);
    assert_eq!(views[1].line, "Needs 1 of finance — 0 received");
    assert!(!views[1].asks_me);
    assert_eq!(
        views[1].excludes.as_deref(),
        Some("not agt_ops's team (finance)")
    );
}

#[test]
fn approving_plans_like_this_is_refused_where_the_policy_would_refuse_it() {
    let mut me = person("dana", &[]);
    let risk = [RiskFlag::Irreversible, RiskFlag::AccessChange];
    // A gateway that does not say leaves it to the gateway's answer.
    assert_eq!(standing_refused(&risk, Some(&me)), None);
    me.standing_flags = Some(vec![RiskFlag::AccessChange, RiskFlag::Money]);
    assert_eq!(
        standing_refused(&risk, Some(&me)).as_deref(),
        Some("The approval policy lets no standing approval cover irreversible plans.")
    );
    assert_eq!(standing_refused(&[RiskFlag::AccessChange], Some(&me)), None);
    assert_eq!(standing_refused(&risk, None), None);
}

#[test]
fn a_plan_whose_request_i_wrote_does_not_wait_on_me() {
    let mut amended = summary(leads_and_finance(), json!([]));
    let sam = person("sam", &["leads"]);
    assert_eq!(turn(&amended, Some(&sam)), Turn::Me);
    amended.approvals.requested_by = Some("sam".into());
    assert_eq!(turn(&amended, Some(&sam)), Turn::Others);
    let rules = views(&amended.approvals, "agt_ops", Some(&sam));
    assert!(rules.iter().all(|r| !r.asks_me));
    // Anyone else it asks still sees it wait on them.
    assert_eq!(turn(&amended, Some(&person("tom", &["leads"]))), Turn::Me);
}
