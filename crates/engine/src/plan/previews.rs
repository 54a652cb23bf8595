//! Making a plan: evaluate, build the preview, store it with its subjects and its preview-audit
//! row, and tell the queue. Shared by `dry_run` and refresh; it writes nothing else (a large
//! plan's subject rows are staged before, see `staging`).

use std::collections::BTreeMap;

use countersign_proto::plan::{EstimatedCost, Preview, Severity, Validation};
use serde_json::Value;

use countersign_pack::Planned;

use crate::accounts::callers::Agent;
use crate::approval::policy::{self, Asking};
use crate::plan::plans::StoredPlan;
use crate::plan::staging::Staged;
use crate::plan::summaries::{self, SubjectSummaries};
use crate::queue::events::EventKind;
use crate::registry::{Capability, Registry};
use crate::store::{Store, Tx};
use crate::{
    approval::standing, execution::quotas, execution::wallet, ids, plan::plans, queue, ApiResult,
    Engine,
};
use countersign_proto::approvals::{Amendment, PlanStatus};

pub struct PreviewAudit<'a> {
    pub audit_id: &'a str,
    /// The request as received, kept in the preview audit.
    pub request: &'a Value,
    pub idempotency_key: Option<&'a str>,
}

pub async fn write_audit(
    tx: &mut Tx,
    audit: &PreviewAudit<'_>,
    capability: Capability,
    agent_id: &str,
    plan_id: Option<&str>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO preview_audit
         (id, capability_id, agent_id, plan_id, valid, request, at, idempotency_key)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(audit.audit_id)
    .bind(capability.id())
    .bind(agent_id)
    .bind(plan_id)
    .bind(i64::from(plan_id.is_some()))
    .bind(audit.request.to_string())
    .bind(ids::to_text(ids::now()))
    .bind(audit.idempotency_key)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Why a plan is made.
#[derive(Debug, Clone, Copy)]
pub enum Origin<'a> {
    /// An agent's dry_run.
    DryRun,
    /// A refresh of plan `supersedes`, which it replaces one for one: what that plan holds of its
    /// agent's caps (a place in the queue, subject rows) is its successor's to take.
    Refresh {
        supersedes: &'a str,
        freed: quotas::Freed,
        /// An approver's amendment: who wrote the successor's request (`docs/amend.md`).
        amendment: Option<&'a Amendment>,
    },
}

/// Evaluates `params` against a snapshot on a read connection: the writer is not held while a
/// plan of a hundred thousand subjects is worked out. [`current`] checks it under the writer.
pub async fn evaluate(store: &Store, capability: Capability, params: &Value) -> ApiResult<Planned> {
    let mut snapshot = store.snapshot().await?;
    let planned = capability.plan(&mut snapshot, params).await?;
    snapshot.commit().await?;
    Ok(planned)
}

/// `planned` when what it read is still at the revisions it read; otherwise `params` evaluated
/// again here, under the writer, against the state the plan is stored in.
pub async fn current(
    tx: &mut Tx,
    registry: &'static Registry,
    capability: Capability,
    params: &Value,
    planned: Planned,
) -> ApiResult<Planned> {
    // A server of the capability's own is not read under the writer (plan/ahead.rs): it was
    // just read, and its state is not the store's to hold still.
    if capability.reads_remotely() {
        return Ok(planned);
    }
    if plans::moved(tx, registry, &planned.read_revisions, None)
        .await?
        .is_empty()
    {
        return Ok(planned);
    }
    capability.plan(tx, params).await
}

/// Stores the plan `planned` (an evaluation of `params` for `agent`, current in `tx`), held to
/// the agent's caps.
#[allow(clippy::too_many_arguments)]
pub async fn create(
    tx: &mut Tx,
    engine: &Engine,
    capability: Capability,
    (agent, asking): (&Agent, &Asking),
    params: &Value,
    expected: Option<&BTreeMap<String, String>>,
    audit: &PreviewAudit<'_>,
    origin: Origin<'_>,
    mut planned: Planned,
    staged: Option<&Staged>,
) -> ApiResult<(Preview, PlanStatus)> {
    if let Some(short) = budget_shortfall(tx, &agent.id, &planned.estimated_cost).await? {
        planned.validation.push(short);
    }
    let named = std::mem::take(&mut planned.named);
    let subjects = summaries::sets_of(&planned);
    let staged = staged.filter(|s| s.holds(&subjects));
    let (plan_id, worked_out);
    let summaries = match staged {
        Some(staged) => {
            plan_id = staged.plan_id.clone();
            &staged.summaries
        }
        None => {
            plan_id = plans::new_id();
            worked_out = SubjectSummaries::of(&subjects);
            &worked_out
        }
    };
    let mut preview = plans::build_preview(
        capability,
        agent,
        params,
        expected,
        planned,
        plans::PreviewIds {
            plan_id,
            audit_id: audit.audit_id,
        },
        summaries,
    )?;
    let requirement = policy::requirement(&engine.policy, capability, &preview, asking)?;
    plans::seal(&mut preview, &requirement)?;
    let (supersedes, freed, amendment) = match origin {
        Origin::DryRun => (None, quotas::Freed::default(), None),
        Origin::Refresh {
            supersedes,
            freed,
            amendment,
        } => (Some(supersedes), freed, amendment),
    };
    quotas::check(tx, &preview, summaries.rows, &engine.limits, freed).await?;
    let candidates = match preview.would_require_approval {
        true => Some(standing::candidates(tx, engine, &preview).await?),
        false => None,
    };
    // A plan that will wait for people as it is stored goes into the queue with its summary in
    // the same write; one that standing approvals may approve is listed once they are counted.
    let listed = match &candidates {
        Some(found) if found.is_empty() && preview.executable => {
            let stored = StoredPlan {
                preview,
                agent_id: agent.id.clone(),
                status: PlanStatus::PendingApproval,
                required_approvals: requirement.required(),
                requirement: requirement.clone(),
                execution: None,
                supersedes: supersedes.map(str::to_owned),
                superseded_by: None,
                subjects_distinct: Some(summaries.distinct),
                validation_subjects: named.clone(),
                amendment: amendment.cloned(),
                shared_subjects: summaries.shared.clone(),
            };
            // Nothing it read has moved: it was evaluated against this transaction's state, or
            // (a server of its own) just read.
            let known = plans::Known {
                moved: Some(Vec::new()),
                ..plans::Known::default()
            };
            let (record, summary) = queue::summarize(tx, engine.registry, stored, known).await?;
            preview = record.plan;
            Some(summary)
        }
        _ => None,
    };
    plans::insert(
        tx,
        &preview,
        plans::SubjectRows {
            sets: &subjects,
            summaries,
            staged: staged.is_some(),
        },
        plans::Stored {
            named: &named,
            requirement: &requirement,
            policy_digest: engine.policy.digest(),
            supersedes,
            // Stored before the standing approvals are looked at: the amender's does not count.
            amendment,
            summary: listed.as_ref(),
        },
    )
    .await?;
    write_audit(tx, audit, capability, &agent.id, Some(&preview.plan_id)).await?;
    // A plan its standing approvals approve runs without reaching anyone's queue.
    let status = match candidates {
        Some(found) => standing::apply(tx, &preview, found).await?,
        None => PlanStatus::Approved,
    };
    match &listed {
        Some(summary) => queue::publish_stored(tx, summary).await?,
        None if status == PlanStatus::PendingApproval => {
            queue::publish(tx, engine.registry, &preview.plan_id, EventKind::Created).await?
        }
        None => {}
    }
    Ok((preview, status))
}

/// Seed 000's cost preflight, answered in the plan itself: a plan whose most it may cost is more
/// than its agent's wallet holds would be refused at invoke (`budget_exceeded`) against the same
/// state, so it is blocked now (seed 004: what would not run is an error, not a warning), with
/// the numbers and what to do.
async fn budget_shortfall(
    tx: &mut Tx,
    agent_id: &str,
    cost: &EstimatedCost,
) -> ApiResult<Option<Validation>> {
    if cost.currency != "credits" || cost.amount_max.value().is_zero() {
        return Ok(None);
    }
    let wallet = wallet::load(tx, agent_id).await?;
    let verdict = wallet.check(cost.amount_max.value());
    if verdict.allowed {
        return Ok(None);
    }
    Ok(Some(Validation {
        severity: Severity::Error,
        code: "insufficient_budget".to_owned(),
        path: Some("/estimated_cost/amount_max".to_owned()),
        message: format!(
            "The plan may cost up to {} credits; {agent_id} has {} of its {} credits left.",
            cost.amount_max, verdict.remaining_credits, verdict.limit_credits
        ),
        blocks_execution: true,
        repair: Some(format!(
            "Split the request into smaller plans of at most {} credits, or have the budget of \
             {agent_id} raised, then preview again.",
            verdict.remaining_credits
        )),
    }))
}
