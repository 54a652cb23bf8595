use chrono::TimeZone;
use countersign_proto::rules::Escalation;

use super::*;

fn rule(id: &str, count: u32, teams: &[&str]) -> Rule {
    Rule {
        id: id.to_owned(),
        description: String::new(),
        count,
        teams: teams.iter().map(|t| t.to_string()).collect(),
        people: Vec::new(),
        exclude_requester: false,
        escalate: None,
        standing: false,
        source: None,
    }
}

fn person(id: &str, teams: &[&str]) -> Approving {
    Approving {
        approver_id: format!("apr_{id}"),
        person: format!("usr_{id}"),
        teams: teams.iter().map(|t| t.to_string()).collect(),
        standing: false,
    }
}

fn at(minutes: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 5, 12, 0, 0).unwrap() + Duration::minutes(minutes)
}

fn met(requirement: &Requirement, approving: &[Approving]) -> (Vec<u32>, bool) {
    let (statuses, met) = Tally::new(requirement, at(0), at(1)).count(approving);
    (statuses.iter().map(|s| s.missing).collect(), met)
}

#[test]
fn a_team_rule_is_met_only_by_that_team() {
    let requirement = Requirement {
        rules: vec![rule("leads", 1, &["leads"])],
        ..Requirement::default()
    };
    assert_eq!(
        met(&requirement, &[person("max", &["finance"])]),
        (vec![1], false)
    );
    assert_eq!(
        met(&requirement, &[person("lena", &["leads"])]),
        (vec![0], true)
    );
}

#[test]
fn two_people_of_one_team_meet_a_two_person_rule_and_one_person_twice_does_not() {
    let requirement = Requirement {
        rules: vec![rule("leads", 2, &["leads"])],
        ..Requirement::default()
    };
    let lena = person("lena", &["leads"]);
    let mut lena_again = lena.clone();
    lena_again.approver_id = "apr_lena_second_account".into();
    assert_eq!(
        met(&requirement, &[lena.clone(), lena_again]),
        (vec![1], false)
    );
    assert_eq!(
        met(&requirement, &[lena, person("tom", &["leads"])]),
        (vec![0], true)
    );
}

#[test]
fn a_person_counts_for_one_rule_and_is_seated_where_they_are_needed() {
    let requirement = Requirement {
        rules: vec![
            rule("finance", 1, &["finance"]),
            rule("leads", 1, &["leads"]),
        ],
        ..Requirement::default()
    };
    // Lena is both; seated first in finance she moves to leads when Fin arrives.
    let both = person("lena", &["finance", "leads"]);
    assert_eq!(
        met(&requirement, std::slice::from_ref(&both)),
        (vec![0, 1], false)
    );
    let tally = Tally::new(&requirement, at(0), at(1));
    let fin = person("fin", &["finance"]);
    assert!(tally.would_count(std::slice::from_ref(&both), fin.clone()));
    let (statuses, done) = tally.count(&[both.clone(), fin]);
    assert!(done);
    assert_eq!(statuses[0].met_by, ["apr_fin"]);
    assert_eq!(statuses[1].met_by, ["apr_lena"]);
    // A second person of finance only, once finance is met by someone who cannot move, adds
    // nothing.
    let only_finance = [person("fin", &["finance"])];
    assert!(!tally.would_count(&only_finance, person("fay", &["finance"])));
}

#[test]
fn the_requesting_team_is_excluded_where_a_rule_says_so() {
    let mut separate = rule("others", 1, &["finance"]);
    separate.exclude_requester = true;
    let requirement = Requirement {
        rules: vec![separate],
        agent_team: Some("finance".into()),
        ..Requirement::default()
    };
    let tally = Tally::new(&requirement, at(0), at(1));
    assert!(!tally.asks("usr_fin", &["finance".to_owned()]));
    assert_eq!(
        met(&requirement, &[person("fin", &["finance"])]),
        (vec![1], false)
    );
}

#[test]
fn a_rule_widens_to_its_escalation_after_its_time() {
    let mut oncall = rule("oncall", 1, &["oncall"]);
    oncall.escalate = Some(Escalation {
        after_seconds: 300,
        teams: vec!["leads".into()],
        people: vec![],
    });
    let requirement = Requirement {
        rules: vec![oncall],
        ..Requirement::default()
    };
    let lead = [person("lena", &["leads"])];
    let early = Tally::new(&requirement, at(0), at(4));
    assert!(!early.count(&lead).1);
    assert_eq!(early.count(&lead).0[0].escalated_at, None);
    let late = Tally::new(&requirement, at(0), at(5));
    let (statuses, met) = late.count(&lead);
    assert!(met);
    assert_eq!(statuses[0].escalated_at, Some(at(5)));
}

#[test]
fn a_plan_from_before_policies_needs_its_count_from_anyone() {
    let legacy = Requirement::legacy(2);
    assert_eq!(legacy.required(), 2);
    assert_eq!(
        met(&legacy, &[person("a", &[]), person("b", &[])]),
        (vec![0], true)
    );
    assert!(Requirement::legacy(0).rules.is_empty());
}

fn standing(id: &str) -> Approving {
    Approving {
        standing: true,
        ..person(id, &[])
    }
}

fn takes_standing(mut rule: Rule) -> Rule {
    rule.standing = true;
    rule
}

#[test]
fn one_standing_approval_at_most_sits_in_a_plan_whatever_its_rules() {
    // A rule of two that takes standing approvals: two or three of them fill one seat.
    let two = Requirement {
        rules: vec![takes_standing(rule("two", 2, &[]))],
        ..Requirement::default()
    };
    let three_standing = [standing("dana"), standing("lena"), standing("mo")];
    assert_eq!(met(&two, &three_standing[..2]), (vec![1], false));
    assert_eq!(met(&two, &three_standing), (vec![1], false));
    let tally = Tally::new(&two, at(0), at(1));
    assert!(!tally.would_count(&three_standing[..1], standing("lena")));
    // A person who decides fills the other seat.
    let with_person = [standing("dana"), standing("lena"), person("tom", &[])];
    let (statuses, done) = tally.count(&with_person);
    assert!(done);
    assert_eq!(statuses[0].met_by, ["apr_dana", "apr_tom"]);

    // Two rules of one person each, both taking standing approvals: one of them is a person's.
    let split = Requirement {
        rules: vec![
            takes_standing(rule("a", 1, &[])),
            takes_standing(rule("b", 1, &[])),
        ],
        ..Requirement::default()
    };
    assert_eq!(met(&split, &three_standing[..2]), (vec![0, 1], false));
    assert!(met(&split, &[standing("dana"), person("tom", &[])]).1);

    // A rule of one person alone may be met by one standing approval: its signer decided ahead.
    let one = Requirement {
        rules: vec![takes_standing(rule("one", 1, &[]))],
        ..Requirement::default()
    };
    assert!(met(&one, &three_standing[..1]).1);
}
