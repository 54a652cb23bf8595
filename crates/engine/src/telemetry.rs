//! What the engine counts and times for the gateway's `/metrics` (docs/operations.md), through the
//! `metrics` facade: a process that installs no recorder pays nothing. Names and labels are kept
//! here, in one place; a label is a capability id, a status, a code or an outcome, never an id,
//! a token or a person's name.

use std::time::Duration;

use chrono::{DateTime, Utc};
use countersign_proto::approvals::PlanStatus;

use crate::{ApiResult, Registry, Store};

/// A plan stored: previewed, refreshed or amended.
pub fn plan_created(capability: &str) {
    metrics::counter!("countersign_plans_created_total", "capability" => capability.to_owned())
        .increment(1);
}

/// A plan published with status `to`, having been published last with `from` (`None`: never,
/// it is new, and [`plan_created`] counts it); a plan decided or run is also timed from its
/// creation.
pub fn plan_changed(
    capability: &str,
    from: Option<PlanStatus>,
    to: PlanStatus,
    created: DateTime<Utc>,
) {
    if from.is_none_or(|from| from == to) {
        return;
    }
    metrics::counter!(
        "countersign_plan_transitions_total",
        "capability" => capability.to_owned(),
        "status" => to.as_str(),
    )
    .increment(1);
    let waited = (Utc::now() - created)
        .to_std()
        .unwrap_or_default()
        .as_secs_f64();
    match to {
        PlanStatus::Approved | PlanStatus::Rejected
            if from == Some(PlanStatus::PendingApproval) =>
        {
            metrics::histogram!(
                "countersign_plan_decision_seconds",
                "capability" => capability.to_owned()
            )
            .record(waited)
        }
        PlanStatus::Executed => metrics::histogram!(
            "countersign_plan_execution_seconds",
            "capability" => capability.to_owned()
        )
        .record(waited),
        _ => {}
    }
}

/// One evaluation of the approval policy.
pub fn policy_evaluated(took: Duration, failed: bool) {
    metrics::histogram!("countersign_policy_evaluation_seconds").record(took.as_secs_f64());
    if failed {
        metrics::counter!("countersign_policy_errors_total").increment(1);
    }
}

/// A plan approved by a standing approval instead of a person deciding it.
pub fn standing_used(capability: &str) {
    metrics::counter!("countersign_standing_uses_total", "capability" => capability.to_owned())
        .increment(1);
}

/// A provider call that ended `outcome` (`succeeded`, `failed`, `unknown`), having charged
/// `credits`: the histogram's sum is what the calls cost.
pub fn provider_called(capability: &str, outcome: &'static str, credits: f64) {
    metrics::counter!(
        "countersign_provider_calls_total",
        "capability" => capability.to_owned(),
        "outcome" => outcome,
    )
    .increment(1);
    metrics::histogram!("countersign_provider_call_credits", "capability" => capability.to_owned())
        .record(credits);
}

/// How long a write waited for the write lock, and then held it.
pub fn write_waited(took: Duration) {
    metrics::histogram!("countersign_store_write_wait_seconds").record(took.as_secs_f64());
}

pub fn write_held(took: Duration) {
    metrics::histogram!("countersign_store_write_seconds").record(took.as_secs_f64());
}

/// The store's states as gauges, read now: plans pending per capability (every capability, so
/// that one whose last plan was decided reads 0), the mail outbox by state, the pools.
pub async fn record_states(store: &Store, registry: &'static Registry) -> ApiResult<()> {
    for (pool, open, idle) in store.pools() {
        metrics::gauge!("countersign_store_connections", "pool" => pool, "state" => "idle")
            .set(idle as f64);
        metrics::gauge!("countersign_store_connections", "pool" => pool, "state" => "busy")
            .set((open as usize).saturating_sub(idle) as f64);
    }
    let pending: Vec<(String, i64)> = sqlx::query_as(
        "SELECT capability_id, COUNT(*) FROM plans WHERE status = 'pending_approval'
         GROUP BY capability_id",
    )
    .fetch_all(store.pool())
    .await?;
    for capability in registry.all() {
        let count = pending
            .iter()
            .find(|(id, _)| id == capability.id())
            .map_or(0, |(_, n)| *n);
        metrics::gauge!("countersign_plans_pending", "capability" => capability.id())
            .set(count as f64);
    }
    let outbox: Vec<(String, i64)> =
        sqlx::query_as("SELECT state, COUNT(*) FROM email_outbox GROUP BY state")
            .fetch_all(store.pool())
            .await?;
    for state in ["pending", "held", "failed"] {
        let count = outbox
            .iter()
            .find(|(s, _)| s == state)
            .map_or(0, |(_, n)| *n);
        metrics::gauge!("countersign_mail_outbox", "state" => state).set(count as f64);
    }
    Ok(())
}
