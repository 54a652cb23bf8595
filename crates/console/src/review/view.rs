//! What an approver reviews, computed in Rust from the plan as fetched: the queue rows and the
//! plan's changes, effects, validation, cost, and whether it may be approved (and why not).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use countersign_proto::approvals::{
    ApproverProfile, DecisionResponse, PlanRecord, PlanStatus, RiskFlag,
};
use countersign_proto::decision::Decision;
use countersign_proto::digest::plan_digest;
use countersign_proto::plan::{Effect, EffectKind, EstimatedCost, Preview};
use countersign_proto::risk::{default_high_cost_threshold, risk_flags};
use countersign_proto::Credits;
use rust_decimal::Decimal;
use serde::Serialize;
use serde_json::Value;
use ts_rs::TS;

use super::rules::{RuleView, Turn};
use super::sample::SampleCheck;
use super::{rules, sample, words};
use crate::client::{FetchedPlan, PlanWallet};
use crate::review::changed::WhatChanged;
use crate::review::diff::{value_diff_within, Budget, ValueDiff};
use crate::review::execution::{execution_view, ExecutionView};
use crate::review::request::{request_view, RequestView};
use crate::wire::{approvals_count, time, wire};

pub use crate::review::queue::{
    queue, queue_in, queue_item, queue_item_in, NoContext, QueueItem, QueueView, RowContext,
    RowGist,
};
pub use crate::wire::CREDITS;

/// Time all the text diffs of one plan view may take together.
const VIEW_DIFF_BUDGET: std::time::Duration = std::time::Duration::from_millis(500);

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct ChangeView {
    pub resource: String,
    pub path: String,
    /// JSON text of the value, or the string itself for strings.
    pub before: String,
    pub after: String,
    pub diff: ValueDiff,
}

/// Effects of one consequence type, for the grouped view and its counts.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct EffectGroup {
    pub effect_type: String,
    pub kind: String,
    pub derived: bool,
    pub effects: u32,
    #[ts(type = "number")]
    pub subjects: u64,
    pub badges: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct EffectView {
    pub id: String,
    pub effect_type: String,
    pub kind: String,
    pub description: String,
    pub resource: String,
    pub derived: bool,
    pub cause: Option<String>,
    pub badges: Vec<String>,
    #[ts(type = "number | null")]
    pub subjects_total: Option<u64>,
    /// The gateway's sample of the subjects, outside the digest: empty when it contradicts the
    /// signed set, and shown as the plan's only when `sample_check` holds.
    pub sample: Vec<String>,
    pub sample_check: Option<SampleCheck>,
    pub cost: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct ValidationView {
    pub severity: String,
    pub code: String,
    pub path: Option<String>,
    pub message: String,
    pub repair: Option<String>,
    pub blocks_execution: bool,
    /// The items behind the entry as the gateway named them (the first 100): the items a
    /// retention change leaves under legal hold, say.
    pub items: Vec<NamedItem>,
    /// How many items the entry counts in all.
    #[ts(type = "number")]
    pub items_total: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct NamedItem {
    pub id: String,
    pub label: String,
    /// Its detail in words: `expires 2027-01-02 · legal hold`.
    pub detail: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct AssumptionView {
    pub dependency: String,
    pub description: String,
    pub execution_can_proceed_without: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct CostView {
    pub min: String,
    pub max: String,
    pub currency: String,
    pub cost_class: String,
    pub preflight: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct MovedView {
    pub resource: String,
    pub planned: String,
    pub current: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct ApprovalView {
    pub approver_id: String,
    pub display_name: String,
    pub decision: String,
    pub at: String,
}

/// What the plan leaves of its agent's wallet.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct WalletView {
    pub agent_id: String,
    pub remaining: String,
    pub limit: String,
    /// Remaining minus the plan's `amount_max` (may be negative).
    pub after_max: String,
    pub can_pay: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct PlanView {
    pub plan_id: String,
    /// The gateway's name for the plan (its queue summary's title, or the capability id): not
    /// signed, so shown as the gateway's label and never in a dialog or a notification.
    pub label: String,
    pub capability_id: String,
    pub version: String,
    pub agent_id: String,
    pub on_behalf_of: Option<String>,
    pub status: String,
    pub created_at: String,
    pub expires_at: String,
    /// The digest the console computed and would sign.
    pub digest: String,
    pub digest_matches: bool,
    pub approvals_received: u32,
    pub approvals_required: u32,
    pub approved_by: Vec<String>,
    pub risk: Vec<String>,
    /// The parameters the plan signs: for a provider plan, the text that leaves.
    pub request: RequestView,
    pub changes: Vec<ChangeView>,
    pub effects: Vec<EffectView>,
    pub groups: Vec<EffectGroup>,
    pub validation: Vec<ValidationView>,
    pub assumptions: Vec<AssumptionView>,
    pub cost: CostView,
    pub stale: Vec<MovedView>,
    pub approvable: bool,
    pub not_approvable_reason: Option<String>,
    pub approvals: Vec<ApprovalView>,
    pub wallet: Option<WalletView>,
    /// The risky-plan sentence in words; empty when the plan has no risk flag.
    pub consequence: String,
    pub gist: String,
    /// A decision on this plan waits in the local outbox.
    pub queued: bool,
    /// The gateway did not answer: this is the plan as the console last fetched it.
    pub last_fetched: bool,
    pub execution: Option<ExecutionView>,
    pub supersedes: Option<String>,
    pub superseded_by: Option<String>,
    /// Who must approve, as the gateway's approval policy set it: not part of the signed plan.
    pub rules: Vec<RuleView>,
    /// Whether the plan waits on this approver.
    pub turn: Turn,
    /// Why the gateway's approval policy would refuse a standing approval for plans like this
    /// one ("approve plans like this" is disabled with it), or null.
    pub standing_refused: Option<String>,
}

/// A refreshed plan and what changed since the plan it supersedes.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct RefreshView {
    pub plan: PlanView,
    pub changed: WhatChanged,
    /// Who changed what, when the plan is an amendment: "Dana changed retention_days from 7 to
    /// 14.".
    pub amended: Option<String>,
}

/// What the gateway answered to a decision.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct DecisionView {
    pub plan_id: String,
    pub status: String,
    pub approvals_received: u32,
    pub approvals_required: u32,
}

pub fn decision_view(answer: &DecisionResponse) -> DecisionView {
    DecisionView {
        plan_id: answer.plan_id.clone(),
        status: wire(&answer.status),
        approvals_received: approvals_count(&answer.approvals),
        approvals_required: answer.approvals.required,
    }
}

fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

fn badges(effect: &Effect) -> Vec<String> {
    let mut badges = Vec::new();
    if !effect.reversible {
        badges.push("irreversible".to_owned());
    }
    if effect.external {
        badges.push("external".to_owned());
    }
    if matches!(effect.kind, EffectKind::Grant | EffectKind::Revoke) {
        badges.push("access_change".to_owned());
    }
    if effect.kind == EffectKind::Charge || effect.cost.is_some() {
        badges.push("money".to_owned());
    }
    badges
}

/// Effects with direct ones first and each derived effect right after its cause, depth first.
/// Iterative and linear, so a hostile cause chain can neither overflow the stack nor hang.
fn ordered_effects(effects: &[Effect]) -> Vec<&Effect> {
    let mut children: HashMap<&str, Vec<usize>> = HashMap::new();
    for (index, effect) in effects.iter().enumerate() {
        if let Some(cause) = effect.cause.as_deref() {
            children.entry(cause).or_default().push(index);
        }
    }
    let mut seen = vec![false; effects.len()];
    let mut out = Vec::with_capacity(effects.len());
    let roots = effects
        .iter()
        .enumerate()
        .filter(|(_, e)| !e.derived || e.cause.is_none())
        .map(|(i, _)| i);
    // Roots first, then anything whose cause is missing or cyclic.
    for start in roots.chain(0..effects.len()) {
        let mut stack = vec![start];
        while let Some(index) = stack.pop() {
            if std::mem::replace(&mut seen[index], true) {
                continue;
            }
            let effect = &effects[index];
            out.push(effect);
            if let Some(kids) = children.get(effect.id.as_str()) {
                stack.extend(kids.iter().rev().filter(|k| !seen[**k]));
            }
        }
    }
    out
}

/// Effects grouped by consequence type, direct groups first, in order of first appearance.
pub fn groups(effects: &[Effect]) -> Vec<EffectGroup> {
    let mut out: Vec<EffectGroup> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for effect in ordered_effects(effects) {
        let subjects = effect.subjects.as_ref().map_or(0, |s| s.total);
        match index.get(effect.effect_type.as_str()).map(|i| &mut out[*i]) {
            Some(group) => {
                group.effects += 1;
                group.subjects = group.subjects.saturating_add(subjects);
                for badge in badges(effect) {
                    if !group.badges.contains(&badge) {
                        group.badges.push(badge);
                    }
                }
            }
            None => {
                index.insert(&effect.effect_type, out.len());
                out.push(EffectGroup {
                    effect_type: effect.effect_type.clone(),
                    kind: wire(&effect.kind),
                    derived: effect.derived,
                    effects: 1,
                    subjects,
                    badges: badges(effect),
                });
            }
        }
    }
    out.sort_by_key(|g| g.derived);
    out
}

/// Why a plan may not be approved by `approver_id`, if it may not.
pub fn refusal(
    record: &PlanRecord,
    digest_matches: bool,
    approver_id: Option<&str>,
    now: DateTime<Utc>,
) -> Option<String> {
    let plan = &record.plan;
    if !digest_matches {
        return Some("The plan's digest does not match its content.".to_owned());
    }
    if plan.estimated_cost.currency != CREDITS {
        return Some(format!(
            "The cost is in {}, not credits: the contract must be re-read before approving.",
            plan.estimated_cost.currency
        ));
    }
    if let Some(why) = unsound_cost(&plan.estimated_cost) {
        return Some(why);
    }
    if let Some(why) = crate::review::causes::broken(&plan.effects) {
        return Some(why);
    }
    if let Some(effect) = sample::contradicted(&plan.effects) {
        return Some(format!(
            "The subjects the gateway lists for {} are not the set the plan signs.",
            effect.id
        ));
    }
    if !plan.executable {
        return Some("The plan is blocked by validation errors.".to_owned());
    }
    if now > plan.expires_at || record.status == PlanStatus::Expired {
        return Some("The plan expired.".to_owned());
    }
    match record.status {
        PlanStatus::PendingApproval => {}
        PlanStatus::Stale => {
            return Some("The plan is stale: resources it read have moved. Refresh it.".to_owned())
        }
        other => return Some(format!("The plan is {}.", wire(&other))),
    }
    if let Some(me) = approver_id {
        if record
            .approvals
            .received
            .iter()
            .any(|a| a.approver_id == me)
        {
            return Some("You already decided this plan.".to_owned());
        }
    }
    // The gateway's word on this approver and this plan: the grantee, the person it acts for,
    // or a person who decided it already under another account.
    match &record.eligibility {
        Some(e) if !e.eligible => Some(
            e.reason
                .clone()
                .unwrap_or_else(|| "The gateway says you may not decide this plan.".to_owned()),
        ),
        _ => None,
    }
}

/// Why a cost cannot be what a gateway would charge: an approval signs it, so it must read as one.
fn unsound_cost(cost: &EstimatedCost) -> Option<String> {
    let (min, max) = (cost.amount_min.value(), cost.amount_max.value());
    if min.is_sign_negative() || max.is_sign_negative() {
        return Some(format!(
            "The cost ({min} to {max} credits) is negative: no gateway pays an agent to act."
        ));
    }
    if min > max {
        return Some(format!(
            "The cost's minimum ({min}) is above its maximum ({max})."
        ));
    }
    if min.scale() > Credits::DECIMALS || max.scale() > Credits::DECIMALS {
        return Some(format!(
            "The cost ({min} to {max} credits) is finer than hundredths of a credit."
        ));
    }
    None
}

/// The plan view of a fetched plan, for `approver_id`, at `now`; `label` is the gateway's.
pub fn plan_view(
    fetched: &FetchedPlan,
    label: Option<&str>,
    approver_id: Option<&str>,
    now: DateTime<Utc>,
) -> PlanView {
    let budget = Budget::new(VIEW_DIFF_BUDGET);
    let record = &fetched.record;
    let plan = &record.plan;
    let digest = plan_digest(&fetched.raw).unwrap_or_default();
    let digest_matches = !digest.is_empty() && digest == plan.plan_digest;
    let reason = refusal(record, digest_matches, approver_id, now);
    let mut validation: Vec<_> = plan.validation.iter().collect();
    validation.sort_by_key(|v| (v.severity, !v.blocks_execution));
    let risk = console_risk(plan);
    let mut view = PlanView {
        plan_id: plan.plan_id.clone(),
        label: label.unwrap_or(&plan.capability_id).to_owned(),
        capability_id: plan.capability_id.clone(),
        version: plan.resolved_version.clone(),
        agent_id: plan.caller.agent_id.clone(),
        on_behalf_of: plan.caller.on_behalf_of.clone(),
        status: wire(&record.status),
        created_at: time(plan.created_at),
        expires_at: time(plan.expires_at),
        digest,
        digest_matches,
        approvals_received: approvals_count(&record.approvals),
        approvals_required: record.approvals.required,
        approved_by: record
            .approvals
            .received
            .iter()
            .filter(|a| a.decision == Decision::Approve)
            .map(|a| a.display_name.clone())
            .collect(),
        consequence: words::consequence(plan, !risk.is_empty()),
        risk: risk.iter().map(wire).collect(),
        request: request_view(plan),
        changes: plan
            .effects
            .iter()
            .flat_map(|e| {
                e.changes.iter().map(|c| {
                    // A recipients digest reads as whom it binds, not as 64 hex digits.
                    let after = match (c.path.as_str(), c.after.as_str()) {
                        (words::RECIPIENTS, Some(digest)) => {
                            let count = e.subjects.as_ref().map_or(0, |s| s.total);
                            Value::String(words::recipients(count, digest))
                        }
                        _ => c.after.clone(),
                    };
                    ChangeView {
                        resource: e.resource.clone(),
                        path: c.path.clone(),
                        before: value_text(&c.before),
                        after: value_text(&after),
                        diff: value_diff_within(&c.before, &after, &budget),
                    }
                })
            })
            .collect(),
        effects: ordered_effects(&plan.effects)
            .into_iter()
            .map(|e| EffectView {
                id: e.id.clone(),
                effect_type: e.effect_type.clone(),
                kind: wire(&e.kind),
                description: e.description.clone(),
                resource: e.resource.clone(),
                derived: e.derived,
                cause: e.cause.clone(),
                badges: badges(e),
                subjects_total: e.subjects.as_ref().map(|s| s.total),
                sample: e
                    .subjects
                    .as_ref()
                    .filter(|s| sample::check(s) != SampleCheck::Mismatch)
                    .map(|s| s.sample.clone())
                    .unwrap_or_default(),
                sample_check: e.subjects.as_ref().map(sample::check),
                cost: e
                    .cost
                    .as_ref()
                    .map(|c| format!("{} {}", c.amount, c.currency)),
            })
            .collect(),
        groups: groups(&plan.effects),
        validation: validation
            .into_iter()
            .map(|v| {
                let named = record.validation_subjects.iter().find(|n| n.code == v.code);
                ValidationView {
                    severity: wire(&v.severity),
                    code: v.code.clone(),
                    path: v.path.clone(),
                    message: v.message.clone(),
                    repair: v.repair.clone(),
                    blocks_execution: v.blocks_execution,
                    items: named.map_or_else(Vec::new, |n| {
                        n.items
                            .iter()
                            .map(|i| NamedItem {
                                id: i.id.clone(),
                                label: i.label.clone(),
                                detail: words::detail(&i.detail),
                            })
                            .collect()
                    }),
                    items_total: named.map_or(0, |n| n.total),
                }
            })
            .collect(),
        assumptions: plan
            .assumptions
            .iter()
            .map(|a| AssumptionView {
                dependency: a.dependency.clone(),
                description: a.description.clone(),
                execution_can_proceed_without: a.execution_can_proceed_without,
            })
            .collect(),
        cost: CostView {
            min: plan.estimated_cost.amount_min.to_string(),
            max: plan.estimated_cost.amount_max.to_string(),
            currency: plan.estimated_cost.currency.clone(),
            cost_class: wire(&plan.billing.cost_class),
            preflight: wire(&plan.billing.preflight),
        },
        // Only a stale plan has moved revisions to show: an executed plan's own writes moved
        // what it read, and that is no staleness.
        stale: record
            .stale
            .as_ref()
            .filter(|_| record.status == PlanStatus::Stale)
            .map(|s| {
                s.moved
                    .iter()
                    .map(|m| MovedView {
                        resource: m.resource.clone(),
                        planned: m.planned.clone(),
                        current: m.current.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        approvable: reason.is_none(),
        not_approvable_reason: reason,
        approvals: record
            .approvals
            .received
            .iter()
            .map(|a| ApprovalView {
                approver_id: a.approver_id.clone(),
                display_name: a.display_name.clone(),
                decision: wire(&a.decision),
                at: time(a.at),
            })
            .collect(),
        wallet: fetched
            .wallet
            .as_ref()
            .map(|w| wallet_view(w, plan.estimated_cost.amount_max.value())),
        gist: words::gist(plan),
        queued: false,
        last_fetched: false,
        execution: record.execution.as_ref().and_then(execution_view),
        supersedes: record.supersedes.clone(),
        superseded_by: record.superseded_by.clone(),
        rules: Vec::new(),
        turn: Turn::Others,
        standing_refused: None,
    };
    apply_rules(&mut view, record, None);
    view
}

/// Sets `view`'s rules and whose turn it is for `me`, from the plan's `record`.
pub fn apply_rules(view: &mut PlanView, record: &PlanRecord, me: Option<&ApproverProfile>) {
    view.rules = rules::views(&record.approvals, &record.plan.caller.agent_id, me);
    let risk = console_risk(&record.plan);
    view.turn = rules::turn_of(record.status, &risk, &record.approvals, me);
    view.standing_refused = rules::standing_refused(&risk, me);
}

/// The console's own risk flags of a plan, recomputed from its effects (not the gateway's
/// summary); `blocked` only when the plan really is not executable.
pub fn console_risk(plan: &Preview) -> Vec<RiskFlag> {
    risk_flags(plan, default_high_cost_threshold())
        .into_iter()
        .filter(|f| *f != RiskFlag::Blocked || !plan.executable)
        .collect()
}

fn wallet_view(wallet: &PlanWallet, amount_max: Decimal) -> WalletView {
    let remaining = wallet.remaining_credits.value();
    let after = remaining.checked_sub(amount_max);
    WalletView {
        agent_id: wallet.agent_id.clone(),
        remaining: wallet.remaining_credits.to_string(),
        limit: wallet.limit_credits.to_string(),
        after_max: after.map_or_else(|| "out of range".to_owned(), |a| a.to_string()),
        can_pay: after.is_some_and(|a| a >= Decimal::ZERO),
    }
}
