//! `countersign-gateway policy check`: a policy evaluated against the demo plans, in a demo world
//! of its own in memory, so an author sees what it requires of each before serving it.

use countersign_demo_world::sim;
use countersign_engine::accounts::{self, Caller};
use countersign_engine::plan::dry_run::{self, DryRunAnswer};
use countersign_engine::{plan::plans, Limits, Store};
use countersign_policy::Policy;
use countersign_proto::plan::DryRunRequest;
use countersign_proto::rules::Rule;

use crate::{default_registry, seed_demo, state_with_policy};

/// What a policy says of one demo plan.
#[derive(Debug)]
pub struct Checked {
    pub label: &'static str,
    pub capability: &'static str,
    pub outcome: Outcome,
}

#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// Stored: the rules it must meet (none: it runs without approval), and whether it is
    /// blocked by its own validation.
    Rules { rules: Vec<Rule>, blocked: bool },
    /// Refused, with the error's code and message (`policy_denied`, `policy_error`, ...).
    Refused { code: String, message: String },
}

/// Every demo plan under `policy`, made by the demo agent (`agt_ops`, acting for `usr_lead`).
pub async fn check(policy: Policy) -> anyhow::Result<Vec<Checked>> {
    let store = Store::open("sqlite::memory:").await?;
    seed_demo(&store).await?;
    let state = state_with_policy(
        store,
        "policy check",
        Limits::default(),
        default_registry(),
        policy,
    )
    .await?;
    let (_, token) = accounts::add_agent(&state.store, "ops", Some("usr_lead")).await?;
    let Caller::Agent(agent) = accounts::caller(&state.store, &token)
        .await
        .map_err(|e| anyhow::anyhow!(e.message))?
    else {
        anyhow::bail!("the demo agent's token names an approver");
    };
    let mut checked = Vec::new();
    for (label, capability, params) in sim::examples() {
        let request = DryRunRequest {
            params,
            expected_revisions: None,
            idempotency_key: None,
        };
        let outcome = match dry_run::run(&state, capability, &agent, request).await {
            Ok(DryRunAnswer::Plan(preview)) => {
                let mut conn = state.store.pool().acquire().await?;
                let stored = plans::load(&mut conn, &preview.plan_id)
                    .await
                    .map_err(|e| anyhow::anyhow!(e.message))?
                    .ok_or_else(|| anyhow::anyhow!("plan {} vanished", preview.plan_id))?;
                Outcome::Rules {
                    rules: stored.requirement.rules,
                    blocked: !preview.executable,
                }
            }
            Ok(other) => anyhow::bail!("{label}: the demo request is not a plan: {other:?}"),
            Err(e) => Outcome::Refused {
                code: e.code.as_str().to_owned(),
                message: e.message,
            },
        };
        checked.push(Checked {
            label,
            capability,
            outcome,
        });
    }
    Ok(checked)
}
