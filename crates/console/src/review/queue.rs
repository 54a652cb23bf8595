//! The queue's rows, computed from the gateway's summaries and what the console knows beyond
//! them (gists of plans it read, decisions waiting in its outbox).

use countersign_proto::approvals::{ApproverProfile, PlanSummary};
use countersign_proto::decision::Decision;
use rust_decimal::Decimal;
use serde::Serialize;
use ts_rs::TS;

use crate::review::rules::{self, Turn};
use crate::wire::{approvals_count, time, wire, CREDITS};

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, TS)]
pub struct QueueItem {
    pub plan_id: String,
    pub title: String,
    pub capability_id: String,
    pub agent_id: String,
    pub on_behalf_of: Option<String>,
    pub status: String,
    pub risk: Vec<String>,
    pub credits_max: String,
    pub currency: String,
    pub effects_direct: u32,
    pub effects_derived: u32,
    #[ts(type = "number")]
    pub subjects_total: u64,
    pub warnings: u32,
    pub errors: u32,
    pub approvals_received: u32,
    pub approvals_required: u32,
    pub expires_at: String,
    /// One line: "prj_184 retention days 30 → 14", "grp_support −37" once the plan's content was
    /// read; until then what the summary counts ("37 subjects").
    pub gist: String,
    /// The gist is the plan's own (read, and checked against its digest), not a count.
    pub gist_read: bool,
    /// Not executable: an error-severity validation entry.
    pub blocked: bool,
    /// A decision on this plan waits in the local outbox.
    pub queued: bool,
    /// Display names of the approvers who approved.
    pub approved_by: Vec<String>,
    /// Whether the plan waits on this approver (an open rule asks for them), on others, or was
    /// decided by them.
    pub turn: Turn,
    /// Until when this console hides the plan from the default view (the approver snoozed it);
    /// null when not snoozed.
    pub snoozed_until: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct QueueView {
    pub items: Vec<QueueItem>,
    /// Sum of `amount_max` over the pending plans priced in credits.
    pub total_credits: String,
}

/// A queue row's gist, read from its plan for a row the window shows.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct RowGist {
    pub plan_id: String,
    pub gist: String,
}

/// What the console adds to a queue row from beyond the summary.
pub trait RowContext {
    /// The plan's gist, once its content was seen.
    fn gist(&self, plan_id: &str) -> Option<String>;
    /// Whether a decision on the plan waits in the outbox.
    fn queued(&self, plan_id: &str) -> bool;
    /// Who the approver is to the gateway's policy, once known.
    fn me(&self) -> Option<&ApproverProfile> {
        None
    }
    /// Until when the approver snoozed the plan, while it is snoozed.
    fn snoozed_until(&self, _plan_id: &str) -> Option<chrono::DateTime<chrono::Utc>> {
        None
    }
}

/// No context: gists from the summary, nothing queued.
pub struct NoContext;

impl RowContext for NoContext {
    fn gist(&self, _: &str) -> Option<String> {
        None
    }
    fn queued(&self, _: &str) -> bool {
        false
    }
}

/// A gist from the counts alone, until the plan's content is seen.
pub(crate) fn summary_gist(summary: &PlanSummary) -> String {
    let effects = summary.effect_counts.direct + summary.effect_counts.derived;
    match (summary.subjects_total, effects) {
        (0, 1) => "1 effect".to_owned(),
        (0, n) => format!("{n} effects"),
        (n, _) => format!("{n} subjects"),
    }
}

pub fn queue_item(summary: &PlanSummary) -> QueueItem {
    queue_item_in(summary, &NoContext)
}

pub fn queue_item_in(summary: &PlanSummary, context: &dyn RowContext) -> QueueItem {
    let approvals = &summary.approvals;
    let gist = context.gist(&summary.plan_id);
    QueueItem {
        plan_id: summary.plan_id.clone(),
        title: summary.title.clone(),
        capability_id: summary.capability_id.clone(),
        agent_id: summary.caller.agent_id.clone(),
        on_behalf_of: summary.caller.on_behalf_of.clone(),
        status: wire(&summary.status),
        risk: summary.risk.iter().map(wire).collect(),
        credits_max: summary.estimated_cost.amount_max.to_string(),
        currency: summary.estimated_cost.currency.clone(),
        effects_direct: summary.effect_counts.direct,
        effects_derived: summary.effect_counts.derived,
        subjects_total: summary.subjects_total,
        warnings: summary.validation_counts.warning,
        errors: summary.validation_counts.error,
        approvals_received: approvals_count(approvals),
        approvals_required: approvals.required,
        expires_at: time(summary.expires_at),
        gist_read: gist.is_some(),
        gist: gist.unwrap_or_else(|| summary_gist(summary)),
        // A summary flagged blocked never reaches the queue (`live`); an error that does not block
        // is still worth the mark.
        blocked: summary.validation_counts.error > 0,
        queued: context.queued(&summary.plan_id),
        approved_by: approvals
            .received
            .iter()
            .filter(|a| a.decision == Decision::Approve)
            .map(|a| a.display_name.clone())
            .collect(),
        turn: rules::turn(summary, context.me()),
        snoozed_until: context.snoozed_until(&summary.plan_id).map(time),
    }
}

/// Queue rows, soonest expiry first, with the credit total of everything pending.
pub fn queue(summaries: &[PlanSummary]) -> QueueView {
    queue_in(summaries, &NoContext)
}

/// [`queue`] with what the console knows beyond the summaries.
pub fn queue_in(summaries: &[PlanSummary], context: &dyn RowContext) -> QueueView {
    let mut sorted: Vec<&PlanSummary> = summaries.iter().collect();
    sorted.sort_by_key(|s| (s.expires_at, s.plan_id.clone()));
    QueueView {
        items: sorted
            .into_iter()
            .map(|s| queue_item_in(s, context))
            .collect(),
        total_credits: credit_total(summaries),
    }
}

/// The credits of every plan priced in them, at most: what the header adds up.
pub(crate) fn credit_total(summaries: &[PlanSummary]) -> String {
    summaries
        .iter()
        .filter(|s| s.estimated_cost.currency == CREDITS)
        .try_fold(Decimal::ZERO, |sum, s| {
            sum.checked_add(s.estimated_cost.amount_max.value())
        })
        .map_or_else(|| "out of range".to_owned(), |t| format!("{t:.2}"))
}
