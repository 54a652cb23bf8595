//! The review model on the shared fixtures and on hostile, hand-made plans.

use chrono::{TimeZone, Utc};
use countersign_console::client::FetchedPlan;
use countersign_console::review::{plan_view, queue};
use countersign_proto::approvals::{Approvals, PlanRecord, PlanStatus, PlanSummary};
use serde_json::{json, Value};

fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/../../../shared/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn fetched(raw: Value, status: PlanStatus) -> FetchedPlan {
    let record: PlanRecord = serde_json::from_value(json!({
        "plan": raw, "status": status, "approvals": {"required": 1, "received": []},
        "supersedes": null, "superseded_by": null, "stale": null, "execution": null
    }))
    .unwrap();
    FetchedPlan { raw, record }
}

fn before_expiry() -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 30, 10, 5, 0).unwrap()
}

#[test]
fn the_bulk_fixture_reviews_as_the_mockup_shows() {
    let view = plan_view(
        &fetched(fixture("plan-bulk.json"), PlanStatus::PendingApproval),
        Some("Remove members from a group"),
        Some("apr_dana"),
        before_expiry(),
    );
    assert!(
        view.digest_matches && view.approvable,
        "{:?}",
        view.not_approvable_reason
    );
    let order: Vec<&str> = view.effects.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(order, ["eff_1", "eff_2", "eff_3", "eff_4"]);
    assert_eq!(view.effects[2].badges, ["irreversible", "access_change"]);
    assert_eq!(
        view.effects[3].badges,
        ["irreversible", "external", "money"]
    );
    assert_eq!(
        view.risk,
        [
            "irreversible",
            "access_change",
            "external",
            "bulk",
            "uncertain"
        ]
    );
    assert_eq!(view.cost.max, "0.37");
}

#[test]
fn a_changed_plan_does_not_match_its_digest_and_cannot_be_approved() {
    let mut raw = fixture("plan-small.json");
    raw["effects"][0]["changes"][0]["after"] = json!(7);
    let view = plan_view(
        &fetched(raw, PlanStatus::PendingApproval),
        None,
        None,
        before_expiry(),
    );
    assert!(!view.digest_matches);
    assert!(!view.approvable);
    assert!(view.not_approvable_reason.unwrap().contains("digest"));
}

#[test]
fn another_currency_blocks_approval_with_the_seed_000_reason() {
    let mut raw = fixture("plan-small.json");
    raw["estimated_cost"]["currency"] = json!("EUR");
    raw["plan_digest"] = json!(countersign_proto::digest::plan_digest(&raw).unwrap());
    let view = plan_view(
        &fetched(raw, PlanStatus::PendingApproval),
        None,
        None,
        before_expiry(),
    );
    assert!(view.digest_matches);
    let reason = view.not_approvable_reason.unwrap();
    assert!(
        reason.contains("EUR") && reason.contains("re-read"),
        "{reason}"
    );
}

#[test]
fn expired_and_stale_plans_are_not_approvable() {
    let raw = fixture("plan-small.json");
    let late = Utc.with_ymd_and_hms(2026, 11, 30, 11, 0, 0).unwrap();
    let view = plan_view(
        &fetched(raw.clone(), PlanStatus::PendingApproval),
        None,
        None,
        late,
    );
    assert_eq!(
        view.not_approvable_reason.as_deref(),
        Some("The plan expired.")
    );
    let view = plan_view(
        &fetched(raw, PlanStatus::Stale),
        None,
        None,
        before_expiry(),
    );
    assert!(view.not_approvable_reason.unwrap().contains("stale"));
}

#[test]
fn a_hostile_cause_chain_neither_overflows_nor_hangs() {
    let mut raw = fixture("plan-small.json");
    let mut template = raw["effects"][1].clone();
    template.as_object_mut().unwrap().remove("subjects");
    let effects: Vec<Value> = (0..50_000)
        .map(|i| {
            let mut e = template.clone();
            e["id"] = json!(format!("eff_{i}"));
            e["cause"] = json!(format!("eff_{}", (i + 1) % 50_000));
            e
        })
        .collect();
    raw["effects"] = Value::Array(effects);
    let view = plan_view(
        &fetched(raw, PlanStatus::PendingApproval),
        None,
        None,
        before_expiry(),
    );
    assert_eq!(
        view.effects.len(),
        50_000,
        "every effect shown once, even in a cycle"
    );
}

#[test]
fn queue_totals_do_not_overflow() {
    let summary = |id: &str, max: &str| -> PlanSummary {
        serde_json::from_value(json!({
            "plan_id": id, "plan_digest": "sha256:00", "capability_id": "c", "title": "t",
            "caller": {"agent_id": "agt_ops"}, "created_at": "2026-11-30T10:00:00Z",
            "expires_at": "2026-11-30T10:15:00Z", "status": "pending_approval",
            "estimated_cost": {"amount_min": "0", "amount_max": max, "currency": "credits"},
            "effect_counts": {"direct": 1, "derived": 0}, "subjects_total": 0,
            "validation_counts": {"error": 0, "warning": 0, "info": 0}, "risk": [],
            "approvals": Approvals { required: 1, received: vec![] }
        }))
        .unwrap()
    };
    let huge = "79228162514264337593543950335";
    assert_eq!(
        queue(&[summary("a", huge), summary("b", huge)]).total_credits,
        "out of range"
    );
    assert_eq!(
        queue(&[summary("a", "0.37"), summary("b", "0.09")]).total_credits,
        "0.46"
    );
}
