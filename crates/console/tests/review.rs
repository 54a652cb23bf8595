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
    FetchedPlan {
        raw,
        record,
        wallet: None,
        title: None,
    }
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
            "money",
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

/// `billing` is inside `plan_core`: a relay that drops it or relabels the cost class (and with it
/// the `money` flag, the prompt and the notification) breaks the digest.
#[test]
fn a_relay_that_drops_or_relabels_billing_is_caught_by_the_digest() {
    let mut relabelled = fixture("plan-bulk.json");
    relabelled["billing"]["cost_class"] = json!("free");
    let view = plan_view(
        &fetched(relabelled, PlanStatus::PendingApproval),
        None,
        None,
        before_expiry(),
    );
    assert!(!view.digest_matches);
    assert!(!view.approvable);
    let mut dropped = fixture("plan-bulk.json");
    dropped.as_object_mut().unwrap().remove("billing");
    assert!(
        serde_json::from_value::<countersign_proto::plan::Preview>(dropped).is_err(),
        "a plan without billing is not a plan"
    );
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
            "approvals": Approvals { required: 1, received: vec![], rules: vec![], denied: vec![], requested_by: None }
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

#[test]
fn effects_group_by_consequence_with_counts_and_badges() {
    let view = plan_view(
        &fetched(fixture("plan-bulk.json"), PlanStatus::PendingApproval),
        None,
        None,
        before_expiry(),
    );
    let groups: Vec<(&str, bool, u32, u64)> = view
        .groups
        .iter()
        .map(|g| (g.effect_type.as_str(), g.derived, g.effects, g.subjects))
        .collect();
    assert_eq!(
        groups,
        [
            ("direct_membership_removed", false, 1, 37),
            ("access_retained_via_nested_group", true, 1, 4),
            ("on_call_entitlement_removed", true, 1, 6),
            ("notification_queued", true, 1, 37),
        ]
    );
    let on_call = &view.groups[2];
    assert!(on_call.badges.contains(&"irreversible".to_owned()));
    assert!(on_call.badges.contains(&"access_change".to_owned()));
    let notify = &view.groups[3];
    assert!(notify.badges.contains(&"external".to_owned()));
    assert!(notify.badges.contains(&"money".to_owned()));
    for flag in [
        "irreversible",
        "access_change",
        "external",
        "bulk",
        "uncertain",
    ] {
        assert!(
            view.risk.contains(&flag.to_owned()),
            "{flag} in {:?}",
            view.risk
        );
    }
    assert_eq!(
        (view.cost.min.as_str(), view.cost.max.as_str()),
        ("0.37", "0.37")
    );
}

#[test]
fn the_small_fixture_diffs_its_retention_note_by_word() {
    let view = plan_view(
        &fetched(fixture("plan-small.json"), PlanStatus::PendingApproval),
        None,
        None,
        before_expiry(),
    );
    let days = view
        .changes
        .iter()
        .find(|c| c.path == "/retention_days")
        .unwrap();
    assert_eq!(
        serde_json::to_value(&days.diff).unwrap(),
        json!({"kind": "scalar", "before": "30", "after": "14"})
    );
    let note = view
        .changes
        .iter()
        .find(|c| c.path == "/retention_note")
        .expect("the fixture changes the retention note");
    {
        let diff = serde_json::to_value(&note.diff).unwrap();
        assert_eq!(diff["kind"], "text");
        let emphasized: Vec<&Value> = diff["lines"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|l| l["segments"].as_array().unwrap())
            .filter(|s| s["emphasized"] == true)
            .collect();
        assert!(!emphasized.is_empty(), "{diff}");
    }
}

mod what_changed {
    use std::collections::BTreeMap;

    use countersign_console::review::changed::{subject_sets_to_fetch, what_changed};
    use countersign_proto::plan::Preview;
    use serde_json::json;

    use super::fixture;

    fn plan(id: &str, f: impl FnOnce(&mut serde_json::Value)) -> Preview {
        let mut raw = fixture("plan-bulk.json");
        raw["plan_id"] = json!(id);
        f(&mut raw);
        serde_json::from_value(raw).unwrap()
    }

    #[test]
    fn a_refresh_shows_effects_subjects_cost_and_revisions_that_moved() {
        let old = plan("plan_old", |_| {});
        let new = plan("plan_new", |p| {
            p["read_revisions"][0]["revision"] = json!("42");
            // One contractor left the group meanwhile; the on-call effect is gone.
            p["effects"][0]["subjects"]["total"] = json!(36);
            p["effects"][0]["subjects"]["digest"] = json!("sha256:changed");
            p["effects"][0]["description"] = json!("Remove 36 direct memberships.");
            let effects = p["effects"].as_array_mut().unwrap();
            effects.remove(2);
            p["estimated_cost"]["amount_max"] = json!("0.36");
            p["estimated_cost"]["amount_min"] = json!("0.36");
        });
        let pairs = subject_sets_to_fetch(&old, &new);
        assert_eq!(pairs, [("eff_1".to_owned(), "eff_1".to_owned())]);
        let was: Vec<String> = (1..=37).map(|n| format!("usr_{n:02}")).collect();
        let is: Vec<String> = was.iter().filter(|u| *u != "usr_05").cloned().collect();
        let sets = BTreeMap::from([(pairs[0].clone(), (was, is))]);
        let changed = what_changed(&old, &new, &sets);

        assert!(changed.effects_added.is_empty());
        assert_eq!(changed.effects_removed.len(), 1);
        assert_eq!(
            changed.effects_removed[0].effect_type,
            "on_call_entitlement_removed"
        );
        assert_eq!(changed.effects_changed.len(), 1);
        let direct = &changed.effects_changed[0];
        assert_eq!(direct.subjects_removed, ["usr_05"]);
        assert!(direct.subjects_added.is_empty());
        assert_eq!(
            (direct.subjects_before, direct.subjects_after),
            (Some(37), Some(36))
        );
        assert_eq!(changed.cost_delta, "-0.01");
        assert_eq!(changed.moved.len(), 1);
        assert_eq!(changed.moved[0].before.as_deref(), Some("41"));
        assert_eq!(changed.moved[0].after.as_deref(), Some("42"));
    }

    #[test]
    fn an_identical_refresh_changes_nothing_but_revisions() {
        let old = plan("plan_old", |_| {});
        let new = plan("plan_new", |p| {
            p["read_revisions"][1]["revision"] = json!("10")
        });
        assert!(subject_sets_to_fetch(&old, &new).is_empty());
        let changed = what_changed(&old, &new, &BTreeMap::new());
        assert!(changed.is_empty());
        assert_eq!(changed.moved.len(), 1);
    }
}

#[test]
fn an_executed_plan_shows_no_stale_banner_from_its_own_writes() {
    let raw = fixture("plan-small.json");
    let moved =
        json!({"moved": [{"resource": "projects/prj_184", "planned": "71", "current": "72"}]});
    let record = |status: PlanStatus| -> PlanRecord {
        serde_json::from_value(json!({
            "plan": raw, "status": status, "approvals": {"required": 1, "received": []},
            "supersedes": null, "superseded_by": null, "stale": moved,
            "execution": {"executed_at": "2026-11-30T10:07:00Z"}
        }))
        .unwrap()
    };
    let view = |status| {
        plan_view(
            &FetchedPlan {
                raw: raw.clone(),
                record: record(status),
                wallet: None,
                title: None,
            },
            None,
            None,
            before_expiry(),
        )
    };
    assert!(view(PlanStatus::Executed).stale.is_empty());
    assert!(view(PlanStatus::Executed).execution.is_some());
    assert_eq!(view(PlanStatus::Stale).stale.len(), 1);
}

#[test]
fn a_plan_the_wallet_cannot_pay_says_so() {
    let mut plan = fetched(fixture("plan-bulk.json"), PlanStatus::PendingApproval);
    plan.wallet = Some(
        serde_json::from_value(
            json!({"agent_id": "agt_ops", "remaining_credits": "0.30", "limit_credits": "50.00"}),
        )
        .unwrap(),
    );
    let view = plan_view(&plan, None, None, before_expiry());
    let wallet = view.wallet.unwrap();
    assert_eq!(wallet.after_max, "-0.07");
    assert!(!wallet.can_pay);
    let none = plan_view(
        &fetched(fixture("plan-bulk.json"), PlanStatus::PendingApproval),
        None,
        None,
        before_expiry(),
    );
    assert!(none.wallet.is_none(), "absent → null");
}
