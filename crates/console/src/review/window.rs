//! The queue as a window asks for it: the console filters, sorts and counts every pending plan,
//! and the window is given only the rows in view, by index, with the counts around them. A
//! window of 100,000 plans holds a screenful of rows, not the queue (issue 49).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::hash::{BuildHasher as _, RandomState};

use countersign_proto::approvals::{ApproverProfile, PlanStatus, PlanSummary, RiskFlag};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::review::queue::{credit_total, queue_item_in, summary_gist, QueueItem, RowContext};
use crate::review::rules::{self, Turn};
use crate::wire::wire;

/// Plans one batch may hold: a range picked in the list is at most this long.
pub const MAX_BATCH: usize = 100;

/// The rows one facet shows: every plan, or those with one trait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Facet {
    #[default]
    All,
    /// Waiting on this approver.
    Mine,
    Risky,
    Bulk,
    Access,
    Money,
    Blocked,
    Stale,
    /// Snoozed by this approver: the only facet that shows them.
    Snoozed,
}

/// Every facet, in the order the window offers them.
pub const FACETS: [Facet; 9] = [
    Facet::All,
    Facet::Mine,
    Facet::Risky,
    Facet::Bulk,
    Facet::Access,
    Facet::Money,
    Facet::Blocked,
    Facet::Stale,
    Facet::Snoozed,
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Sort {
    /// Soonest expiry first, as the gateway lists them.
    #[default]
    Expiry,
    /// Most credits first; the same expiry order among equals.
    Credits,
    Subjects,
}

/// Which rows the window shows, in which order.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize, TS)]
pub struct QueueQuery {
    /// Words every shown row contains, in any field the row shows, case aside.
    pub text: String,
    pub facet: Facet,
    /// One capability id, or empty for all.
    pub capability: String,
    pub sort: Sort,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct FacetCount {
    pub facet: Facet,
    pub count: u32,
}

/// What the window says about the queue beside its rows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct QueueCounts {
    /// The rows the query shows: the list's length.
    pub matching: u32,
    /// Every pending plan, snoozed or not.
    pub all: u32,
    /// How many rows each facet would show under no other filter; snoozed plans count only
    /// under `snoozed`.
    pub facets: Vec<FacetCount>,
    /// The capabilities of the pending plans, sorted: what the capability filter offers.
    pub capabilities: Vec<String>,
    /// Sum of `amount_max` over the pending plans priced in credits.
    pub total_credits: String,
}

/// A plan the window keeps track of wherever it is in the list (the open plan, a snoozed one it
/// speaks of, the batch's): its row, and its index in the list, if the query shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct PinnedRow {
    pub at: Option<u32>,
    pub item: QueueItem,
}

/// The rows `[offset, offset + items.len())` of the list the query shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct QueueWindow {
    pub offset: u32,
    pub items: Vec<QueueItem>,
    pub counts: QueueCounts,
    pub pinned: Vec<PinnedRow>,
    /// What a live change applies to: a window at any other generation asks again.
    #[ts(type = "number")]
    pub generation: u64,
}

/// The list a query shows, as indexes into the summaries, and its counts: computed once per
/// change of the queue or the query, then read for each window a scroll asks for.
#[derive(Debug)]
pub struct Ordered {
    order: Vec<u32>,
    pub counts: QueueCounts,
}

/// A row's facets and words, read from its summary and what the console adds.
struct Traits<'a> {
    summary: &'a PlanSummary,
    snoozed: bool,
    turn: Turn,
}

impl Traits<'_> {
    fn has(&self, facet: Facet) -> bool {
        let risk = |flag| self.summary.risk.contains(&flag);
        match facet {
            Facet::All => true,
            Facet::Mine => self.turn == Turn::Me,
            Facet::Risky => !self.summary.risk.is_empty(),
            Facet::Bulk => risk(RiskFlag::Bulk),
            Facet::Access => risk(RiskFlag::AccessChange),
            Facet::Money => risk(RiskFlag::Money),
            Facet::Blocked => self.summary.validation_counts.error > 0,
            Facet::Stale => self.summary.status == PlanStatus::Stale,
            Facet::Snoozed => self.snoozed,
        }
    }

    /// Whether every word is in the fields the row shows (joined as the row reads them).
    fn says(&self, words: &[String], gist: &str) -> bool {
        let s = self.summary;
        let mut hay = [
            s.title.as_str(),
            gist,
            &s.plan_id,
            &s.capability_id,
            &s.caller.agent_id,
            s.caller.on_behalf_of.as_deref().unwrap_or(""),
        ]
        .join(" ");
        for flag in &s.risk {
            hay.push(' ');
            hay.push_str(&wire(flag));
        }
        let hay = hay.to_lowercase();
        words.iter().all(|w| hay.contains(w.as_str()))
    }
}

impl Ordered {
    pub fn new(
        summaries: &[PlanSummary],
        query: &QueueQuery,
        context: &dyn RowContext,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Ordered {
        let me: Option<&ApproverProfile> = context.me();
        let words: Vec<String> = query
            .text
            .to_lowercase()
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        let mut facets: HashMap<Facet, u32> = FACETS.iter().map(|f| (*f, 0)).collect();
        let mut capabilities = BTreeSet::new();
        let mut order = Vec::new();
        for (index, summary) in (0u32..).zip(summaries) {
            capabilities.insert(summary.capability_id.as_str());
            let traits = Traits {
                summary,
                snoozed: context
                    .snoozed_until(&summary.plan_id)
                    .is_some_and(|t| t > now),
                turn: rules::turn(summary, me),
            };
            if traits.snoozed {
                *facets.entry(Facet::Snoozed).or_default() += 1;
            } else {
                for facet in FACETS.iter().filter(|f| **f != Facet::Snoozed) {
                    if traits.has(*facet) {
                        *facets.entry(*facet).or_default() += 1;
                    }
                }
            }
            // A snoozed plan shows only where the approver asks for the snoozed ones.
            let shown = (query.facet == Facet::Snoozed || !traits.snoozed)
                && traits.has(query.facet)
                && (query.capability.is_empty() || summary.capability_id == query.capability)
                && (words.is_empty()
                    || traits.says(
                        &words,
                        &context
                            .gist(&summary.plan_id)
                            .unwrap_or_else(|| summary_gist(summary)),
                    ));
            if shown {
                order.push(index);
            }
        }
        let at = |i: &u32| &summaries[*i as usize];
        order.sort_by(|a, b| {
            (at(a).expires_at, &at(a).plan_id).cmp(&(at(b).expires_at, &at(b).plan_id))
        });
        match query.sort {
            Sort::Expiry => {}
            Sort::Credits => order.sort_by(|a, b| {
                at(b)
                    .estimated_cost
                    .amount_max
                    .value()
                    .cmp(&at(a).estimated_cost.amount_max.value())
            }),
            Sort::Subjects => order.sort_by_key(|i| std::cmp::Reverse(at(i).subjects_total)),
        }
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Ordered {
            counts: QueueCounts {
                matching: count(order.len()),
                all: count(summaries.len()),
                facets: FACETS
                    .iter()
                    .map(|f| FacetCount {
                        facet: *f,
                        count: facets[f],
                    })
                    .collect(),
                capabilities: capabilities.into_iter().map(str::to_owned).collect(),
                total_credits: credit_total(summaries),
            },
            order,
        }
    }

    /// The rows `[offset, offset + limit)` of the list.
    pub fn rows(
        &self,
        summaries: &[PlanSummary],
        context: &dyn RowContext,
        offset: u32,
        limit: u32,
    ) -> Vec<QueueItem> {
        let start = (offset as usize).min(self.order.len());
        let end = start.saturating_add(limit as usize).min(self.order.len());
        self.order[start..end]
            .iter()
            .map(|i| queue_item_in(&summaries[*i as usize], context))
            .collect()
    }

    /// The rows of `pins` that are pending, each with its index in the list if it shows there:
    /// one pass over the queue and one over the list, however many are asked for.
    pub fn pinned(
        &self,
        summaries: &[PlanSummary],
        context: &dyn RowContext,
        pins: &[String],
    ) -> Vec<PinnedRow> {
        if pins.is_empty() {
            return Vec::new();
        }
        let wanted: HashSet<&str> = pins.iter().map(String::as_str).collect();
        let found: HashMap<u32, &PlanSummary> = (0u32..)
            .zip(summaries)
            .filter(|(_, s)| wanted.contains(s.plan_id.as_str()))
            .collect();
        let mut at: HashMap<&str, u32> = HashMap::new();
        for (position, index) in (0u32..).zip(&self.order) {
            if let Some(summary) = found.get(index) {
                at.insert(summary.plan_id.as_str(), position);
            }
        }
        let mut seen = HashSet::new();
        pins.iter()
            .filter(|id| seen.insert(id.as_str()))
            .filter_map(|id| {
                let summary = found.values().find(|s| s.plan_id == **id)?;
                Some(PinnedRow {
                    at: at.get(id.as_str()).copied(),
                    item: queue_item_in(summary, context),
                })
            })
            .collect()
    }

    /// The plans from `from` to `to` in the list, both included, whichever comes first; empty
    /// when either is not shown.
    pub fn between(&self, summaries: &[PlanSummary], from: &str, to: &str) -> Vec<String> {
        let position = |id: &str| {
            self.order
                .iter()
                .position(|i| summaries[*i as usize].plan_id == id)
        };
        let (Some(a), Some(b)) = (position(from), position(to)) else {
            return Vec::new();
        };
        self.order[a.min(b)..=a.max(b)]
            .iter()
            .map(|i| summaries[*i as usize].plan_id.clone())
            .collect()
    }
}

/// How the window's rows moved since it was last given them: the rows added or changed, whole,
/// each with its place in the window, and the ids of those gone from it; the counts and the
/// pinned rows as they are now. A window at `from` applies it: the rows it keeps stay in their
/// order around the placed ones. A window at any other generation asks again.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct QueueChange {
    #[ts(type = "number")]
    pub from: u64,
    #[ts(type = "number")]
    pub to: u64,
    pub upserted: Vec<PlacedRow>,
    pub removed: Vec<String>,
    /// How many rows the window holds after the change.
    pub total: u32,
    pub counts: QueueCounts,
    pub pinned: Vec<PinnedRow>,
    /// Plans new to the queue since the last change, wherever they are in it: what a screen
    /// reader is told. The first is named when it is the only one.
    pub arrivals: u32,
    pub first_arrival: Option<Arrival>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct Arrival {
    pub title: String,
    pub agent_id: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct PlacedRow {
    /// The row's index in the window after the change.
    pub at: u32,
    pub item: QueueItem,
}

/// The window's rows as last sent, one fingerprint a row: what the next change is computed
/// against. The fingerprints are keyed per process, so no gateway can make a changed row look
/// unchanged.
#[derive(Debug, Default)]
pub struct SentRows {
    generation: u64,
    rows: HashMap<String, u64>,
    keys: RandomState,
}

/// The rows of a change: what turned the rows sent into the new ones.
pub struct Moved {
    pub from: u64,
    pub upserted: Vec<PlacedRow>,
    pub removed: Vec<String>,
}

impl SentRows {
    /// What turns the rows last sent into `items`, sent from now on as `generation`.
    pub fn change_to(&mut self, generation: u64, items: &[QueueItem]) -> Moved {
        let mut rows = HashMap::with_capacity(items.len());
        let mut upserted = Vec::new();
        for (at, item) in (0u32..).zip(items) {
            let fingerprint = self.keys.hash_one(item);
            if self.rows.remove(&item.plan_id) != Some(fingerprint) {
                upserted.push(PlacedRow {
                    at,
                    item: item.clone(),
                });
            }
            rows.insert(item.plan_id.clone(), fingerprint);
        }
        // What is left of the old rows is gone from the window.
        let mut removed: Vec<String> = std::mem::replace(&mut self.rows, rows)
            .into_keys()
            .collect();
        removed.sort_unstable();
        Moved {
            from: std::mem::replace(&mut self.generation, generation),
            upserted,
            removed,
        }
    }
}

#[cfg(test)]
mod tests;
