//! The Insights screen: how approvals are going at this gateway (`GET /v1/stats`), for a team lead.

use countersign_proto::stats::{DecisionTally, Stats};
use reqwest::Method;
use serde::Serialize;
use ts_rs::TS;

use crate::client::GatewayClient;
use crate::console::Console;
use crate::error::ConsoleError;

/// The windows the screen offers.
pub const WINDOWS: [&str; 3] = ["24h", "7d", "30d"];

/// One row of a table: a capability or an approver, and their numbers.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct InsightRow {
    pub name: String,
    /// An approver's id, beside their name; none for a capability.
    pub id: Option<String>,
    #[ts(type = "number")]
    pub decided: u64,
    /// Approved of decided, 0 to 1; none before any decision.
    pub approval_rate: Option<f64>,
    pub median_seconds: Option<f64>,
    pub p90_seconds: Option<f64>,
    #[ts(type = "number")]
    pub faster_than_reading: u64,
    /// Plans that expired waiting (capabilities), or approved by standing approvals (approvers).
    #[ts(type = "number")]
    pub other: u64,
}

/// One day of the chart.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct InsightDay {
    pub day: String,
    #[ts(type = "number")]
    pub decided: u64,
    pub median_seconds: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct InsightsView {
    pub window: String,
    pub since: String,
    pub until: String,
    /// How "faster than it can be read" is judged, in words.
    pub reading: String,
    pub capabilities: Vec<InsightRow>,
    pub approvers: Vec<InsightRow>,
    pub days: Vec<InsightDay>,
}

impl GatewayClient {
    /// The gateway's numbers over the last `window` (`7d`).
    pub async fn stats(&self, window: &str) -> Result<Stats, ConsoleError> {
        self.call::<(), _>(Method::GET, &format!("/v1/stats?since={window}"), None)
            .await
    }
}

impl Console {
    /// The Insights screen over the last `window`, one of [`WINDOWS`].
    pub async fn insights(&self, window: &str) -> Result<InsightsView, ConsoleError> {
        if !WINDOWS.contains(&window) {
            return Err(ConsoleError::Invalid(format!(
                "a window is one of {}, not {window:?}",
                WINDOWS.join(", ")
            )));
        }
        Ok(view(window, self.client().stats(window).await?))
    }
}

fn view(window: &str, stats: Stats) -> InsightsView {
    let row = |name: String, id: Option<String>, t: &DecisionTally, other: u64| InsightRow {
        name,
        id,
        decided: t.decided,
        approval_rate: (t.decided > 0).then(|| t.approved as f64 / t.decided as f64),
        median_seconds: t.median_seconds,
        p90_seconds: t.p90_seconds,
        faster_than_reading: t.faster_than_reading,
        other,
    };
    InsightsView {
        window: window.to_owned(),
        since: stats.since.to_rfc3339(),
        until: stats.until.to_rfc3339(),
        reading: format!(
            "approved sooner than {} s, and {} s for each effect, after the plan was made",
            stats.reading.base_seconds, stats.reading.per_effect_seconds
        ),
        capabilities: stats
            .capabilities
            .iter()
            .map(|c| row(c.capability_id.clone(), None, &c.tally, c.expired_waiting))
            .collect(),
        approvers: stats
            .approvers
            .iter()
            .map(|a| {
                let id = Some(a.approver_id.clone());
                row(a.display_name.clone(), id, &a.tally, a.standing)
            })
            .collect(),
        days: stats
            .days
            .into_iter()
            .map(|d| InsightDay {
                day: d.day,
                decided: d.decided,
                median_seconds: d.median_seconds,
            })
            .collect(),
    }
}
