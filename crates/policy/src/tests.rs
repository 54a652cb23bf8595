use chrono::{TimeZone, Utc};
use countersign_proto::approvals::RiskFlag;
use serde_json::json;

use super::*;

fn input(rule: &'static str, above: Option<&str>, risk: &[RiskFlag], amount_max: &str) -> Input {
    Input {
        plan: json!({
            "capability_id": "groups.members.remove",
            "effects": [{"id": "eff_1", "kind": "revoke"}],
            "estimated_cost": {"amount_min": "0", "amount_max": amount_max, "currency": "credits"},
        }),
        risk: risk.to_vec(),
        capability: CapabilityInput {
            id: "groups.members.remove".into(),
            title: "Remove members from a group".into(),
            approval: DefaultApproval {
                rule,
                above: above.map(str::to_owned),
                required_approvals: 2,
            },
            facts: Default::default(),
        },
        agent: AgentInput {
            id: "agt_ops".into(),
            on_behalf_of: Some("usr_lead".into()),
            team: None,
            scopes: vec![],
        },
        directory: Directory::of([("leads".to_owned(), "usr_lena".to_owned())]),
        now: Utc.with_ymd_and_hms(2026, 12, 5, 12, 0, 0).unwrap(),
    }
}

fn policy(text: &str) -> Result<Policy, LoadError> {
    Policy::from_sources(
        Sources {
            modules: vec![("p.rego".to_owned(), text.to_owned())],
            data: None,
        },
        "test",
    )
}

fn ids(verdict: &Verdict) -> Vec<(&str, u32)> {
    verdict
        .rules
        .iter()
        .map(|r| (r.id.as_str(), r.count))
        .collect()
}

#[test]
fn the_builtin_policy_is_each_capabilitys_own_rule() {
    let builtin = Policy::builtin();
    let always = builtin.evaluate(&input("always", None, &[], "0")).unwrap();
    assert_eq!(ids(&always), [("capability_default", 2)]);
    assert!(always.deny.is_empty());
    let source = always.rules[0].source.clone().unwrap();
    assert_eq!(source.file, "builtin.rego");

    let calm = input("when_risky", None, &[RiskFlag::Blocked], "0");
    assert_eq!(ids(&builtin.evaluate(&calm).unwrap()), []);
    let risky = input("when_risky", None, &[RiskFlag::Bulk], "0");
    assert_eq!(
        ids(&builtin.evaluate(&risky).unwrap()),
        [("capability_default", 2)]
    );

    let cheap = input("above_cost", Some("5.00"), &[RiskFlag::External], "5.00");
    assert_eq!(ids(&builtin.evaluate(&cheap).unwrap()), []);
    let dear = input("above_cost", Some("5.00"), &[], "5.01");
    assert_eq!(
        ids(&builtin.evaluate(&dear).unwrap()),
        [("capability_default", 2)]
    );

    let mut nothing = input("always", None, &[], "0");
    nothing.plan["effects"] = json!([]);
    assert_eq!(ids(&builtin.evaluate(&nothing).unwrap()), []);
}

const TEAMS: &str = r#"
package countersign.approval

import rego.v1

rules contains {"id": "leads_for_bulk", "description": "Bulk removals need two leads",
    "count": 2, "teams": ["leads"], "exclude_requester": true,
    "escalate": {"after_seconds": 300, "teams": ["oncall"]}} if {
	"bulk" in input.risk
}

deny contains sprintf("No removals at %d o'clock", [hour]) if {
	hour := time.clock([time.parse_rfc3339_ns(input.now), "UTC"])[0]
	hour < 7
}

test_bulk_needs_leads if {
	count(rules) == 1 with input as {"risk": ["bulk"], "now": "2026-12-05T12:00:00Z"}
}

test_quiet_hours if {
	count(deny) == 0 with input as {"risk": [], "now": "2026-12-05T03:00:00Z"}
}
"#;

#[test]
fn a_policy_names_teams_escalation_deny_and_where_each_rule_is_written() {
    let policy = policy(TEAMS).unwrap();
    let bulk = policy
        .evaluate(&input("always", None, &[RiskFlag::Bulk], "0"))
        .unwrap();
    let rule = &bulk.rules[0];
    assert_eq!(rule.teams, ["leads"]);
    assert!(rule.exclude_requester);
    assert_eq!(rule.escalate.as_ref().unwrap().teams, ["oncall"]);
    assert_eq!(
        rule.source,
        Some(RuleSource {
            file: "p.rego".into(),
            line: 6
        })
    );
    let mut night = input("always", None, &[], "0");
    night.now = Utc.with_ymd_and_hms(2026, 12, 5, 3, 0, 0).unwrap();
    assert_eq!(
        policy.evaluate(&night).unwrap().deny,
        ["No removals at 3 o'clock"]
    );
}

#[test]
fn tests_in_the_policy_run_and_a_false_one_fails() {
    let outcomes = policy(TEAMS).unwrap().run_tests();
    let results: Vec<(&str, bool)> = outcomes
        .iter()
        .map(|o| (o.name.as_str(), o.passed))
        .collect();
    assert_eq!(
        results,
        [
            ("countersign.approval.test_bulk_needs_leads", true),
            ("countersign.approval.test_quiet_hours", false),
        ]
    );
}

#[test]
fn a_bad_file_is_refused_with_its_line() {
    let err =
        policy("package countersign.approval\n\nrules contains r if {\n  r :=\n}\n").unwrap_err();
    match err {
        LoadError::Syntax { file, line, .. } => assert_eq!((file.as_str(), line), ("p.rego", 4)),
        other => panic!("{other}"),
    }
    let other = policy("package elsewhere\n\nrules := []\n").unwrap_err();
    assert!(
        other.to_string().contains("countersign.approval"),
        "{other}"
    );
}

#[test]
fn an_answer_out_of_shape_is_an_error_never_an_open_door() {
    let cases = [
        (
            r#"rules contains {"id": "x", "count": 1, "teems": ["leads"]}"#,
            "unknown field",
        ),
        (r#"rules contains {"id": "x", "count": 0}"#, "1 to 20"),
        (r#"rules contains {"id": "x y", "count": 1}"#, "letters"),
        (
            r#"rules := [{"id": "x", "count": 1}, {"id": "x", "count": 2}]"#,
            "two rules",
        ),
        (
            r#"rules contains {"id": "x", "count": to_number("many")}"#,
            "could not parse",
        ),
        (
            r#"rules := []
deny contains 7"#,
            "deny",
        ),
        (
            r#"rules := [{"id": "x", "count": 1}] if input.never"#,
            "undefined",
        ),
    ];
    for (body, expected) in cases {
        let text = format!("package countersign.approval\nimport rego.v1\n{body}\n");
        let err = policy(&text)
            .unwrap()
            .evaluate(&input("always", None, &[], "0"))
            .unwrap_err();
        assert!(err.0.contains(expected), "{body}: {err}");
    }
}

#[test]
fn an_evaluation_that_runs_too_long_is_an_error() {
    let slow = policy(
        r#"package countersign.approval
import rego.v1
rules contains {"id": "slow", "count": 1} if {
	n := count([x | some i in numbers.range(1, 3000); some j in numbers.range(1, 3000); x := i * j])
	n > 0
}
"#,
    )
    .unwrap();
    let err = slow.evaluate(&input("always", None, &[], "0")).unwrap_err();
    assert!(err.0.contains("time"), "{err}");
}

#[test]
fn an_evaluation_that_allocates_without_bound_is_an_error_and_the_next_one_runs() {
    // Each test runs in a process of its own (nextest): the ceiling is the process's.
    limit_memory(Some(256 << 20));
    let greedy = policy(
        r#"package countersign.approval
import rego.v1
rules contains {"id": "greedy", "count": 1} if {
	count(numbers.range(1, 50000000)) > 0
}
"#,
    )
    .unwrap();
    let err = greedy
        .evaluate(&input("always", None, &[], "0"))
        .unwrap_err();
    assert!(err.0.contains("memory"), "{err}");
    let fine = Policy::builtin()
        .evaluate(&input("always", None, &[], "0"))
        .unwrap();
    assert_eq!(fine.rules.len(), 1);
    limit_memory(None);
}

#[test]
fn what_the_gateway_reads_for_a_policy_does_not_depend_on_how_it_is_written() {
    // A rule object from data.json that excludes the requester's team: nothing in the Rego
    // names the agent, and its team is read all the same.
    let from_data = Policy::from_sources(
        Sources {
            modules: vec![(
                "p.rego".to_owned(),
                "package countersign.approval\nimport rego.v1\nrules contains data.rule if true\n"
                    .to_owned(),
            )],
            data: Some(
                r#"{"rule": {"id": "others", "count": 1, "exclude_requester": true}}"#.to_owned(),
            ),
        },
        "test",
    )
    .unwrap();
    assert!(from_data.reads().agent);
    let rules = from_data
        .evaluate(&input("always", None, &[], "0"))
        .unwrap()
        .rules;
    assert!(rules[0].exclude_requester);
    assert!(!Policy::builtin().reads().agent);
}

#[test]
fn the_digest_covers_every_module_and_the_data() {
    let base = policy(TEAMS).unwrap();
    assert_eq!(base.digest(), policy(TEAMS).unwrap().digest());
    assert!(base.digest().starts_with("sha256:"));
    let edited = policy(&TEAMS.replace("300", "600")).unwrap();
    assert_ne!(base.digest(), edited.digest());
    let with_data = Policy::from_sources(
        Sources {
            modules: vec![("p.rego".to_owned(), TEAMS.to_owned())],
            data: Some(r#"{"threshold": 50}"#.to_owned()),
        },
        "test",
    )
    .unwrap();
    assert_ne!(base.digest(), with_data.digest());
}

#[test]
fn what_standing_approvals_may_meet_and_cover_is_the_policys() {
    let builtin = Policy::builtin();
    assert_eq!(builtin.coverable(), DEFAULT_COVERABLE);
    let rules = builtin
        .evaluate(&input("always", None, &[], "0"))
        .unwrap()
        .rules;
    assert!(
        rules[0].standing,
        "the built-in rule takes a standing approval"
    );
    let allowing = policy(
        r#"package countersign.approval
import rego.v1
standing_flags := {"bulk", "money"}
rules contains {"id": "one", "count": 1, "standing": true}
rules contains {"id": "people", "count": 2}
"#,
    )
    .unwrap();
    assert_eq!(allowing.coverable(), [RiskFlag::Bulk, RiskFlag::Money]);
    let rules = allowing
        .evaluate(&input("always", None, &[], "0"))
        .unwrap()
        .rules;
    assert_eq!(
        rules
            .iter()
            .map(|r| (r.id.as_str(), r.standing))
            .collect::<Vec<_>>(),
        [("one", true), ("people", false)]
    );
    let wrong = policy(
        r#"package countersign.approval
import rego.v1
standing_flags := {"sometimes"}
rules := set()
"#,
    );
    assert!(
        matches!(&wrong, Err(LoadError::Contract(m)) if m.contains("standing_flags must be a set of risk flags")),
        "{:?}",
        wrong.err()
    );
}
