//! The approval policy's cost per plan: `examples/policy` evaluated against the demo plans as the
//! gateway evaluates it when it stores one (the input built from the preview, the directory and
//! the agent, then regorus), in process. Issue 25's bar: p99 ≤ 1 ms.

use std::time::{Duration, Instant};

use countersign_demo_world::sim;
use countersign_embedded::{default_registry, seed_demo, state_with_policy};
use countersign_engine::accounts::{self, Caller};
use countersign_engine::approval::policy::{self, Asking};
use countersign_engine::plan::dry_run::{self, DryRunAnswer};
use countersign_engine::{Limits, Store};
use countersign_policy::Policy;
use countersign_proto::plan::{DryRunRequest, Preview};

use crate::settings::Settings;
use crate::stats::{ns, Summary};
use crate::table::{Goal, Row, Unit};

const P99: Duration = Duration::from_millis(1);

pub async fn rows(settings: &Settings) -> Vec<Row> {
    let p50 = Row::new(
        "approval policy per plan, examples/policy over the demo plans (p50)",
        Unit::Time,
    );
    let p99 = Row::new(
        "approval policy per plan, examples/policy over the demo plans (p99)",
        Unit::Time,
    )
    .goal(Goal::AtMost(ns(P99)));
    match samples(settings).await {
        Ok(samples) => vec![
            p50.result(Summary::median(&samples).ok_or_else(|| anyhow::anyhow!("no samples"))),
            p99.result(
                Summary::percentile(&samples, 99.0).ok_or_else(|| anyhow::anyhow!("no samples")),
            ),
        ],
        Err(e) => vec![
            p50.skipped(format!("failed: {e:#}")),
            p99.skipped(format!("failed: {e:#}")),
        ],
    }
}

/// Nanoseconds per evaluation, each demo plan in turn.
async fn samples(settings: &Settings) -> anyhow::Result<Vec<f64>> {
    let policy = Policy::load(&settings.workspace.join("examples/policy"))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let store = Store::open("sqlite::memory:").await?;
    seed_demo(&store).await?;
    let state = state_with_policy(
        store,
        "policy bench",
        Limits::default(),
        default_registry(),
        policy.clone(),
    )
    .await?;
    let (_, token) = accounts::add_agent(&state.store, "ops", Some("usr_lead")).await?;
    let Caller::Agent(agent) = accounts::caller(&state.store, &token)
        .await
        .map_err(|e| anyhow::anyhow!(e.message))?
    else {
        anyhow::bail!("the bench agent's token names an approver");
    };
    let mut plans: Vec<Preview> = Vec::new();
    for (_, capability, params) in sim::examples() {
        let request = DryRunRequest {
            params,
            expected_revisions: None,
            idempotency_key: None,
        };
        // A plan the policy refuses (a bulk removal in the quiet hours) costs an evaluation too,
        // but leaves no preview to evaluate again.
        if let Ok(DryRunAnswer::Plan(preview)) =
            dry_run::run(&state, capability, &agent, request).await
        {
            plans.push(*preview);
        }
    }
    anyhow::ensure!(!plans.is_empty(), "no demo plan was stored");
    let mut conn = state.store.pool().acquire().await?;
    let asking = Asking::load(&mut conn, &agent, policy.reads()).await?;
    let rounds = if settings.quick { 200 } else { 1000 };
    let mut samples = Vec::with_capacity(rounds * plans.len());
    for _ in 0..rounds {
        for plan in &plans {
            let capability = default_registry()
                .get(&plan.capability_id)
                .ok_or_else(|| anyhow::anyhow!("{} is not registered", plan.capability_id))?;
            let started = Instant::now();
            let requirement = policy::requirement(&policy, capability, plan, &asking);
            samples.push(ns(started.elapsed()));
            requirement.map_err(|e| anyhow::anyhow!("{}: {}", plan.plan_id, e.message))?;
        }
    }
    Ok(samples)
}
