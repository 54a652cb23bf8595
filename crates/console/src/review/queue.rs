//! The queue's rows, computed from the gateway's summaries and what the console knows beyond
//! them (gists of plans it read, decisions waiting in its outbox).

use std::collections::HashMap;
use std::hash::{BuildHasher as _, RandomState};

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
    /// The live snapshot's generation this view was made from (0 outside a live console): what a
    /// [`QueueChange`] applies to.
    #[ts(type = "number")]
    pub generation: u64,
}

/// How the queue moved from one view a window was given to the next: the rows added or changed,
/// whole, each with its place in the new order, and the ids of those gone. A window whose view is
/// at `from` applies it: the rows it keeps stay in their order around the placed ones. A window
/// at any other generation asks for the whole queue.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct QueueChange {
    #[ts(type = "number")]
    pub from: u64,
    #[ts(type = "number")]
    pub to: u64,
    pub upserted: Vec<PlacedRow>,
    pub removed: Vec<String>,
    /// How many rows the queue has after the change.
    pub total: u32,
    pub total_credits: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct PlacedRow {
    /// The row's index in the new queue.
    pub at: u32,
    pub item: QueueItem,
}

/// The queue as a window was last given it, one fingerprint a row: what the next change is
/// computed against. Keeping the rows themselves held a second copy of a 10,000-row queue in the
/// app for as long as it ran (issue 28). The fingerprints are keyed per process, so no gateway
/// can make a changed row look unchanged.
#[derive(Debug, Default)]
pub struct SentQueue {
    generation: u64,
    rows: HashMap<String, u64>,
    keys: RandomState,
}

impl SentQueue {
    /// What turns the queue last sent into `new`, which is sent from now on: a live change
    /// crosses into the window as what changed, not as the whole queue again.
    pub fn change_to(&mut self, new: &QueueView) -> QueueChange {
        let mut rows = HashMap::with_capacity(new.items.len());
        let mut upserted = Vec::new();
        for (at, item) in (0u32..).zip(&new.items) {
            let fingerprint = self.keys.hash_one(item);
            if self.rows.remove(&item.plan_id) != Some(fingerprint) {
                upserted.push(PlacedRow {
                    at,
                    item: item.clone(),
                });
            }
            rows.insert(item.plan_id.clone(), fingerprint);
        }
        // What is left of the old rows is gone from the queue.
        let mut removed: Vec<String> = std::mem::replace(&mut self.rows, rows)
            .into_keys()
            .collect();
        removed.sort_unstable();
        let from = std::mem::replace(&mut self.generation, new.generation);
        QueueChange {
            from,
            to: new.generation,
            upserted,
            removed,
            total: u32::try_from(new.items.len()).unwrap_or(u32::MAX),
            total_credits: new.total_credits.clone(),
        }
    }
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
fn summary_gist(summary: &PlanSummary) -> String {
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
    let total = summaries
        .iter()
        .filter(|s| s.estimated_cost.currency == CREDITS)
        .try_fold(Decimal::ZERO, |sum, s| {
            sum.checked_add(s.estimated_cost.amount_max.value())
        });
    QueueView {
        items: sorted
            .into_iter()
            .map(|s| queue_item_in(s, context))
            .collect(),
        total_credits: total.map_or_else(|| "out of range".to_owned(), |t| format!("{t:.2}")),
        generation: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(plan_id: &str, approvals: u32) -> QueueItem {
        QueueItem {
            plan_id: plan_id.to_owned(),
            title: "Change retention".to_owned(),
            capability_id: "projects.settings.update".to_owned(),
            agent_id: "agt_ops".to_owned(),
            on_behalf_of: None,
            status: "pending_approval".to_owned(),
            risk: Vec::new(),
            credits_max: "0.01".to_owned(),
            currency: CREDITS.to_owned(),
            effects_direct: 1,
            effects_derived: 0,
            subjects_total: 0,
            warnings: 0,
            errors: 0,
            approvals_received: approvals,
            approvals_required: 2,
            expires_at: "2026-12-03T10:00:00Z".to_owned(),
            gist: "1 effect".to_owned(),
            gist_read: false,
            blocked: false,
            queued: false,
            approved_by: Vec::new(),
            turn: Turn::Me,
            snoozed_until: None,
        }
    }

    fn view(generation: u64, items: Vec<QueueItem>) -> QueueView {
        QueueView {
            items,
            total_credits: "0.03".to_owned(),
            generation,
        }
    }

    /// A record of `view` as sent to a window.
    fn sent(view: &QueueView) -> SentQueue {
        let mut sent = SentQueue::default();
        sent.change_to(view);
        sent
    }

    #[test]
    fn a_change_carries_only_the_rows_that_moved_each_with_its_place() {
        let mut was = sent(&view(4, vec![row("a", 0), row("b", 0), row("c", 0)]));
        let new = view(5, vec![row("a", 0), row("b", 1), row("d", 0)]);
        let change = was.change_to(&new);
        assert_eq!((change.from, change.to, change.total), (4, 5, 3));
        assert_eq!(
            change.upserted,
            vec![
                PlacedRow {
                    at: 1,
                    item: row("b", 1)
                },
                PlacedRow {
                    at: 2,
                    item: row("d", 0)
                },
            ]
        );
        assert_eq!(change.removed, vec!["c".to_owned()]);
        let again = was.change_to(&view(6, vec![row("d", 0)]));
        assert_eq!(again.from, 5, "the next change starts where this one ended");
        assert!(again.upserted.is_empty());
        assert_eq!(again.removed, vec!["a".to_owned(), "b".to_owned()]);
    }

    #[test]
    fn an_unchanged_queue_crosses_as_no_rows() {
        let old = view(7, vec![row("a", 0), row("b", 1)]);
        let change = sent(&old).change_to(&view(7, old.items.clone()));
        assert!(change.upserted.is_empty() && change.removed.is_empty());
    }

    #[test]
    fn a_change_to_any_field_of_a_row_sends_the_row() {
        let old = view(1, vec![row("a", 0)]);
        let mut gist = row("a", 0);
        gist.gist = "prj_184 retention days 30 → 14".to_owned();
        let mut queued = row("a", 0);
        queued.queued = true;
        for changed in [gist, queued] {
            let change = sent(&old).change_to(&view(2, vec![changed.clone()]));
            assert_eq!(
                change.upserted,
                vec![PlacedRow {
                    at: 0,
                    item: changed
                }]
            );
        }
    }
}
