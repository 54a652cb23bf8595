//! `GET /v1/stats`: how approvals are going over a window (docs/operations.md, "Decision
//! analytics"), per capability, per approver and per day.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The numbers of one window, `since` to `until`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Stats {
    pub since: DateTime<Utc>,
    pub until: DateTime<Utc>,
    /// How "faster than it can be read" is judged.
    pub reading: ReadingTime,
    pub capabilities: Vec<CapabilityStats>,
    pub approvers: Vec<ApproverStats>,
    /// Each day of the window (UTC), oldest first, with the plans decided on it.
    pub days: Vec<DayStats>,
}

/// The reading time a plan needs at the least, by its size: `base_seconds` plus
/// `per_effect_seconds` for each effect. An approval sooner than that is a signal, not a
/// verdict: a person may have read the plan before it reached the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReadingTime {
    pub base_seconds: u32,
    pub per_effect_seconds: u32,
}

impl ReadingTime {
    pub const DOCUMENTED: ReadingTime = ReadingTime {
        base_seconds: 5,
        per_effect_seconds: 3,
    };

    /// Seconds a plan of `effects` effects takes to read.
    pub fn of(self, effects: usize) -> f64 {
        f64::from(self.base_seconds) + f64::from(self.per_effect_seconds) * effects as f64
    }
}

/// Decisions counted together, and how long their plans waited for them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DecisionTally {
    pub decided: u64,
    pub approved: u64,
    pub rejected: u64,
    pub median_seconds: Option<f64>,
    pub p90_seconds: Option<f64>,
    /// Approvals sooner than the plan's reading time.
    pub faster_than_reading: u64,
}

/// Plans of one capability decided in the window; times are from a plan's creation to the
/// decision that settled it, by people (standing approvals are not a person deciding).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CapabilityStats {
    pub capability_id: String,
    #[serde(flatten)]
    pub tally: DecisionTally,
    /// Plans that expired in the window still waiting for a decision.
    pub expired_waiting: u64,
}

/// One approver's decisions in the window; times are from the plan's creation to theirs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApproverStats {
    pub approver_id: String,
    pub display_name: String,
    #[serde(flatten)]
    pub tally: DecisionTally,
    /// Plans their standing approvals approved, apart from the decisions above.
    pub standing: u64,
}

/// Plans settled on one day (UTC) and how long they waited.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DayStats {
    /// `2026-12-05`.
    pub day: String,
    pub decided: u64,
    pub median_seconds: Option<f64>,
}
