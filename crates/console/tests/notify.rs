//! The notification policy: which plans, once each, never the ones already seen.

use countersign_console::live::notify::{to_notify, NotifyRules};
use countersign_console::signing::journal::Journal;
use countersign_proto::approvals::{PlanStatus, PlanSummary, RiskFlag};
use serde_json::json;

fn summary(id: &str, capability: &str, risk: &[RiskFlag]) -> PlanSummary {
    serde_json::from_value(json!({
        "plan_id": id, "plan_digest": "sha256:00", "capability_id": capability, "title": "T",
        "caller": {"agent_id": "agt_ops"}, "created_at": "2026-11-30T10:00:00Z",
        "expires_at": "2026-11-30T10:15:00Z", "status": PlanStatus::PendingApproval,
        "estimated_cost": {"amount_min": "0", "amount_max": "0", "currency": "credits"},
        "effect_counts": {"direct": 1, "derived": 0}, "subjects_total": 0,
        "validation_counts": {"error": 0, "warning": 0, "info": 0}, "risk": risk,
        "approvals": {"required": 1, "received": []}
    }))
    .unwrap()
}

#[tokio::test]
async fn risky_new_plans_notify_once_and_the_first_look_is_quiet() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::open(&dir.path().join("j.db")).await.unwrap();
    let rules = NotifyRules::default();
    let waiting = summary(
        "plan_old",
        "groups.members.remove",
        &[RiskFlag::Irreversible],
    );
    let first = to_notify(
        &journal,
        "gw_1",
        &rules,
        std::slice::from_ref(&waiting),
        true,
    )
    .await
    .unwrap();
    assert!(
        first.is_empty(),
        "plans waiting before the console looked are not news"
    );

    let queue = vec![
        waiting,
        summary("plan_risky", "groups.members.remove", &[RiskFlag::Bulk]),
        summary("plan_calm", "projects.settings.update", &[]),
        summary(
            "plan_uncertain",
            "projects.settings.update",
            &[RiskFlag::Uncertain],
        ),
    ];
    let news = to_notify(&journal, "gw_1", &rules, &queue, false)
        .await
        .unwrap();
    let ids: Vec<&str> = news.iter().map(|p| p.plan_id.as_str()).collect();
    assert_eq!(ids, ["plan_risky"]);
    let again = to_notify(&journal, "gw_1", &rules, &queue, false)
        .await
        .unwrap();
    assert!(again.is_empty(), "once per plan");

    let mut by_capability = NotifyRules::default();
    by_capability
        .capabilities
        .insert("projects.settings.update".to_owned());
    let other_gateway = to_notify(&journal, "gw_2", &by_capability, &queue[2..], false)
        .await
        .unwrap();
    assert_eq!(
        other_gateway.len(),
        2,
        "seen per gateway; capability rules select calm plans too"
    );
}
