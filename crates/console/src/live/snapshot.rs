//! What a live console shows and how fresh it is: the state live sync publishes and the console
//! reads without I/O.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use countersign_proto::approvals::{ApproverProfile, PlanSummary};
use serde::Serialize;
use ts_rs::TS;

use crate::error::ErrorView;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Link {
    /// The event stream is open: changes arrive as they happen.
    Online,
    /// The stream is down but polling works: changes arrive within a poll interval.
    Degraded,
    /// The gateway does not answer: the queue shown is as of `last_sync`.
    Offline,
}

/// What a live console shows: the pending plans and how fresh they are.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub items: Vec<PlanSummary>,
    pub link: Link,
    pub last_sync: Option<DateTime<Utc>>,
    /// Bumped on every change of the queue, so watchers can tell a new list from a state change.
    pub generation: u64,
    /// Decisions written to the outbox and not yet answered.
    pub outbox: u64,
    /// The plans those decisions are on.
    pub queued: BTreeSet<String>,
    /// Why the last listing failed, or a queued decision the gateway refused.
    pub last_error: Option<ErrorView>,
    /// Who this approver is to the gateway's approval policy, once it said.
    pub me: Option<ApproverProfile>,
    /// Plan events the stream delivered, the queue's or not (a plan that ran, a standing
    /// approval's use): what screens beside the queue follow.
    pub plan_events: u64,
}

impl Default for Snapshot {
    fn default() -> Self {
        Snapshot {
            items: Vec::new(),
            link: Link::Offline,
            last_sync: None,
            generation: 0,
            outbox: 0,
            queued: BTreeSet::new(),
            last_error: None,
            me: None,
            plan_events: 0,
        }
    }
}
