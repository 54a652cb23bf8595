//! A fresh preview of a plan, by its approver or its agent: the same request against the state
//! now, stored as the successor, the old plan superseded. It counts as a preview of the plan's
//! agent (one of its previews in flight, held to its caps net of the plan it replaces), and the
//! replaced plan's subject rows are freed at once.

use countersign_proto::approvals::{Amendment, PlanRecord, PlanStatus};
use countersign_proto::ErrorCode;
use serde_json::{json, Value};
use sqlx::AnyConnection;

use crate::accounts::{Agent, Approver, Caller};
use crate::approval::policy::Asking;
use crate::execution::quotas::{self, Freed};
use crate::plan::plans::StoredPlan;
use crate::plan::previews::{self, Origin, PreviewAudit};
use crate::plan::reads::ensure_may_read;
use crate::queue::events::EventKind;
use crate::registry::Capability;
use crate::{
    accounts::scopes, approval::eligibility, ids, plan::amend, plan::plans, plan::staging,
    plan::summaries, queue, ApiError, ApiResult, Engine,
};

pub async fn run(engine: &Engine, caller: &Caller, plan_id: &str) -> ApiResult<PlanRecord> {
    successor(engine, caller, plan_id, None).await
}

/// `approver`'s amendment of plan `plan_id` to `params` (`docs/amend.md`): the successor's record.
pub async fn amend(
    engine: &Engine,
    approver: &Approver,
    plan_id: &str,
    params: Value,
) -> ApiResult<PlanRecord> {
    let caller = Caller::Approver(approver.clone());
    successor(engine, &caller, plan_id, Some(params)).await
}

/// Plan `plan_id` previewed again as its successor: its own request, or the params an approver
/// amended it to (`docs/amend.md`).
async fn successor(
    engine: &Engine,
    caller: &Caller,
    plan_id: &str,
    amended: Option<Value>,
) -> ApiResult<PlanRecord> {
    let registry = engine.registry;
    let (capability, (agent, asking), params, amendment) = {
        let mut conn = engine.store.pool().acquire().await?;
        let old = refreshable(&mut conn, engine, caller, plan_id).await?;
        let capability = registry
            .get(&old.preview.capability_id)
            .ok_or_else(|| anyhow::anyhow!("plan {plan_id} names an unknown capability"))?;
        let agent = Agent {
            id: old.agent_id.clone(),
            on_behalf_of: old.preview.caller.on_behalf_of.clone(),
        };
        let (params, amendment) = match (amended, caller) {
            (Some(params), Caller::Approver(approver)) => {
                let amendment =
                    amend::check(&mut conn, approver, &old, capability, &params).await?;
                (params, Some(amendment))
            }
            _ => (old.preview.request.params, None),
        };
        // The agent's authorization, for the request it will run: an amendment may not take it
        // where the agent may not go.
        scopes::authorize(&mut conn, registry, &agent, capability, &params).await?;
        let asking = Asking::load(&mut conn, &agent, engine.policy.reads()).await?;
        (capability, (agent, asking), params, amendment)
    };
    let _evaluating = engine.previews.enter(&agent.id)?;
    let planned = previews::evaluate(&engine.store, capability, &params).await?;
    let staged = staging::stage(&engine.store, summaries::sets_of(&planned)).await?;
    let fresh = replace(
        engine,
        (caller, amendment.as_ref()),
        plan_id,
        (capability, (&agent, &asking), &params),
        planned,
        staged.as_ref(),
    )
    .await;
    let stored = fresh.as_ref().ok().map(|r| r.plan.plan_id.as_str());
    staging::settle(&engine.store, staged, stored).await;
    fresh
}

/// Plan `plan_id` replaced under the writer by its evaluation `planned`, checked against the
/// state it is stored in: the successor's record, as `caller` sees it.
async fn replace(
    engine: &Engine,
    (caller, amendment): (&Caller, Option<&Amendment>),
    plan_id: &str,
    (capability, (agent, asking), params): (Capability, (&Agent, &Asking), &serde_json::Value),
    planned: countersign_pack::Planned,
    staged: Option<&staging::Staged>,
) -> ApiResult<PlanRecord> {
    let registry = engine.registry;
    let mut w = engine.store.write().await?;
    // Looked at again under the writer: another refresh, a decision or the sweep may have come
    // first.
    let old = refreshable(&mut w.tx, engine, caller, plan_id).await?;
    let rows: i64 = sqlx::query_scalar("SELECT subject_rows FROM plans WHERE id = $1")
        .bind(plan_id)
        .fetch_one(&mut *w.tx)
        .await?;
    let freed = Freed::by(&old, rows.max(0) as u64);
    let planned = previews::current(&mut w.tx, registry, capability, params, planned).await?;
    let audit_id = ids::random_id("aud_", 8);
    let request = match amendment {
        Some(amendment) => {
            json!({"params": params, "amend_of": plan_id, "amended_by": amendment.approver_id})
        }
        None => json!({"params": params, "refresh_of": plan_id}),
    };
    let audit = PreviewAudit {
        audit_id: &audit_id,
        request: &request,
        idempotency_key: None,
    };
    let origin = Origin::Refresh {
        supersedes: plan_id,
        freed,
        amendment,
    };
    let (fresh, _) = previews::create(
        &mut w.tx,
        engine,
        capability,
        (agent, asking),
        params,
        None,
        &audit,
        origin,
        planned,
        staged,
    )
    .await?;
    sqlx::query("UPDATE plans SET status = 'superseded', superseded_by = $1 WHERE id = $2")
        .bind(&fresh.plan_id)
        .bind(plan_id)
        .execute(&mut *w.tx)
        .await?;
    quotas::free_subjects(&mut w.tx, plan_id).await?;
    queue::publish(&mut w.tx, registry, plan_id, EventKind::Updated).await?;
    let stored = plans::load(&mut w.tx, &fresh.plan_id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("the refreshed plan vanished"))?;
    if let (Some(_), Caller::Approver(approver)) = (amendment, caller) {
        // Whoever writes a request may not be its grantee or the person it acts for: checked
        // on the request as amended, which nothing of is kept if it is refused.
        if let Some(why) = eligibility::personal(&mut w.tx, approver, &stored).await? {
            return Err(ApiError::new(ErrorCode::NotEligible, why));
        }
    }
    let eligibility = eligibility::of(&mut w.tx, caller, &stored).await?;
    let mut record = plans::record(&mut w.tx, registry, stored).await?;
    record.eligibility = eligibility;
    w.commit().await?;
    Ok(record)
}

/// Plan `plan_id`, if `caller` may replace it now: it is theirs to read, not closed, and (for an
/// approver) not a plan approved and current, which only its agent may replace.
async fn refreshable(
    conn: &mut AnyConnection,
    engine: &Engine,
    caller: &Caller,
    plan_id: &str,
) -> ApiResult<StoredPlan> {
    let old = plans::load(conn, plan_id)
        .await?
        .ok_or_else(|| ApiError::not_found("plan"))?;
    ensure_may_read(caller, &old)?;
    if matches!(
        old.status,
        PlanStatus::Executed | PlanStatus::Rejected | PlanStatus::Superseded | PlanStatus::Failed
    ) {
        return Err(ApiError::new(
            ErrorCode::PlanNotPending,
            format!(
                "Plan {plan_id} is {} and cannot be refreshed.",
                plans::status_text(old.status)
            ),
        ));
    }
    if matches!(caller, Caller::Approver(_)) && old.status == PlanStatus::Approved {
        let moved = plans::moved(conn, engine.registry, &old.preview.read_revisions, None).await?;
        if plans::effective_status(&old, ids::now(), &moved) == PlanStatus::Approved {
            return Err(ApiError::new(
                ErrorCode::PlanNotPending,
                format!("Plan {plan_id} is approved and current; only its agent may replace it."),
            ));
        }
    }
    Ok(old)
}
