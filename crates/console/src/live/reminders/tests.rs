use chrono::TimeZone as _;
use serde_json::json;

use super::*;

fn at(minute: u32, second: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 5, 10, minute, second)
        .unwrap()
}

/// A plan anyone may approve, made at 10:00 and expiring at 10:15.
fn plan(id: &str) -> PlanSummary {
    serde_json::from_value(json!({
        "plan_id": id, "plan_digest": "sha256:00", "capability_id": "c", "title": "T",
        "caller": {"agent_id": "agt_ops"}, "created_at": "2026-12-05T10:00:00Z",
        "expires_at": "2026-12-05T10:15:00Z", "status": "pending_approval",
        "estimated_cost": {"amount_min": "0", "amount_max": "0", "currency": "credits"},
        "effect_counts": {"direct": 1, "derived": 0}, "subjects_total": 0,
        "validation_counts": {"error": 0, "warning": 0, "info": 0}, "risk": [],
        "approvals": {"required": 1, "received": []}
    }))
    .unwrap()
}

#[test]
fn a_snooze_never_hides_a_plan_past_two_minutes_before_it_expires() {
    let mut snoozes = Snoozes::default();
    let expires = at(15, 0);
    // Fifteen minutes from 10:01 would be 10:16: cut to 10:13.
    let until = snoozes.snooze("plan_1", expires, 15, at(1, 0)).unwrap();
    assert_eq!(until, at(13, 0));
    assert_eq!(snoozes.until("plan_1", at(12, 59)), Some(at(13, 0)));
    assert_eq!(snoozes.until("plan_1", at(13, 0)), None);
    // An hour is cut the same way; within two minutes of expiry nothing is snoozed.
    assert_eq!(
        snoozes.snooze("plan_1", expires, 60, at(5, 0)).unwrap(),
        at(13, 0)
    );
    let late = snoozes.snooze("plan_2", expires, 15, at(13, 0));
    assert!(matches!(late, Err(ConsoleError::Invalid(m)) if m.contains("less than two minutes")));
    assert!(snoozes.snooze("plan_2", expires, 0, at(1, 0)).is_err());
}

#[test]
fn a_snooze_comes_back_once_and_a_plan_expiring_soon_reminds_once() {
    let mut snoozes = Snoozes::default();
    let listed = vec![plan("plan_1"), plan("plan_2")];
    snoozes.snooze("plan_1", at(15, 0), 5, at(1, 0)).unwrap();
    assert!(snoozes.due(&listed, None, at(5, 59)).is_empty());
    assert_eq!(
        snoozes.due(&listed, None, at(6, 0)),
        [("plan_1".to_owned(), Due::Unsnoozed)]
    );
    assert!(snoozes.due(&listed, None, at(6, 1)).is_empty());
    // From 10:10 both need me and expire within five minutes: each reminds once.
    assert!(snoozes.due(&listed, None, at(9, 59)).is_empty());
    let due = snoozes.due(&listed, None, at(10, 0));
    assert_eq!(
        due,
        [
            ("plan_1".to_owned(), Due::ExpiresSoon),
            ("plan_2".to_owned(), Due::ExpiresSoon)
        ]
    );
    assert!(snoozes.due(&listed, None, at(11, 0)).is_empty());
    // Expired plans remind nobody.
    let mut fresh = Snoozes::default();
    assert!(fresh.due(&listed, None, at(15, 0)).is_empty());
}

#[test]
fn a_plan_that_waits_on_others_or_left_the_queue_is_not_brought_back() {
    let mut snoozes = Snoozes::default();
    let mut theirs = plan("plan_1");
    theirs.approvals = serde_json::from_value(json!({"required": 1, "received": [],
        "rules": [{"id": "finance", "description": "Finance", "count": 1, "teams": ["finance"],
                   "met_by": [], "missing": 1}]}))
    .unwrap();
    let me = ApproverProfile {
        approver_id: "apr_dana".into(),
        display_name: "Dana".into(),
        person: "usr_dana".into(),
        teams: vec!["leads".into()],
        standing_flags: None,
    };
    assert!(snoozes.due(&[theirs], Some(&me), at(11, 0)).is_empty());
    snoozes.snooze("plan_2", at(15, 0), 5, at(1, 0)).unwrap();
    assert!(snoozes.due(&[], Some(&me), at(7, 0)).is_empty());
    assert_eq!(
        snoozes.until("plan_2", at(2, 0)),
        None,
        "forgotten with its plan"
    );
}

#[test]
fn many_plans_expiring_together_are_one_notification() {
    let soon = |n: usize| (0..n).map(|i| (format!("plan_{i}"), Due::ExpiresSoon));
    let few: Vec<_> = soon(3).collect();
    assert_eq!(to_announce(few.clone()), (few, None));
    let mut many: Vec<_> = soon(500).collect();
    many.push(("plan_back".to_owned(), Due::Unsnoozed));
    let (one_by_one, summary) = to_announce(many);
    assert_eq!(one_by_one, [("plan_back".to_owned(), Due::Unsnoozed)]);
    assert_eq!(summary, Some((500, "plan_0".to_owned())));
}
