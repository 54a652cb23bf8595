//! The engine's sweeps, once a second for as long as the engine lives: plans whose time ran out
//! leave the queue, plans whose rules widen are published again, closed plans' subject rows are freed, so are the rows a preview staged and
//! never stored a plan for, and on PostgreSQL the provider calls another instance died with are
//! recorded as failed.

use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::store::Dialect;
use crate::{
    approval::escalation, execution::external, execution::quotas, plan::staging, queue, Engine,
};

/// How often expired plans are moved out of the queue.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// Sweeps every [`SWEEP_EVERY`] for as long as the engine lives: expired plans, the subject rows
/// of closed plans, and (on PostgreSQL) provider calls another instance died with.
pub fn spawn(engine: &Arc<Engine>) {
    let state: Weak<Engine> = Arc::downgrade(engine);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(SWEEP_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(state) = state.upgrade() else {
                return;
            };
            if let Err(e) = queue::sweep(&state.store, state.registry).await {
                tracing::warn!(error = ?e, "the expiry sweep failed; trying again");
            }
            if let Err(e) = escalation::sweep(&state.store, state.registry).await {
                tracing::warn!(error = ?e, "the escalation sweep failed; trying again");
            }
            if let Err(e) = quotas::sweep_subjects(&state.store, quotas::SWEEP_BATCH).await {
                tracing::warn!(error = ?e, "the subject sweep failed; trying again");
            }
            if let Err(e) = staging::sweep(&state.store).await {
                tracing::warn!(error = ?e, "the staged-subject sweep failed; trying again");
            }
            if state.store.dialect() == Dialect::Postgres {
                // Another instance may have died with provider calls in flight.
                if let Err(e) = external::recover_interrupted(&state.store, state.registry).await {
                    tracing::warn!(error = ?e, "the in-flight sweep failed; trying again");
                }
            }
        }
    });
}
