//! A fresh preview of a plan, by its approver or its agent: the same request against the state
//! now, stored as the successor, the old plan superseded.

use countersign_proto::approvals::{PlanRecord, PlanStatus};
use countersign_proto::ErrorCode;
use serde_json::json;

use crate::accounts::{Agent, Caller};
use crate::events::EventKind;
use crate::previews::{self, Origin, PreviewAudit};
use crate::reads::ensure_may_read;
use crate::{ids, plans, queue, scopes, ApiError, ApiResult, Engine};

pub async fn run(engine: &Engine, caller: &Caller, plan_id: &str) -> ApiResult<PlanRecord> {
    let plan_id = plan_id.to_owned();
    let registry = engine.registry;
    let mut w = engine.store.write().await?;
    let old = plans::load(&mut w.tx, &plan_id)
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
        let moved = plans::moved(&mut w.tx, registry, &old.preview.read_revisions).await?;
        if plans::effective_status(&old, ids::now(), &moved) == PlanStatus::Approved {
            return Err(ApiError::new(
                ErrorCode::PlanNotPending,
                format!("Plan {plan_id} is approved and current; only its agent may replace it."),
            ));
        }
    }
    let capability = registry
        .get(&old.preview.capability_id)
        .ok_or_else(|| anyhow::anyhow!("plan {plan_id} names an unknown capability"))?;
    let agent = Agent {
        id: old.agent_id.clone(),
        on_behalf_of: old.preview.caller.on_behalf_of.clone(),
    };
    let params = &old.preview.request.params;
    scopes::authorize(&mut w.tx, registry, &agent, capability, params).await?;
    let audit_id = ids::random_id("aud_", 8);
    let request = json!({"params": old.preview.request.params, "refresh_of": plan_id});
    let audit = PreviewAudit {
        audit_id: &audit_id,
        request: &request,
        idempotency_key: None,
    };
    let fresh = previews::create(
        &mut w.tx,
        registry,
        capability,
        &agent,
        params,
        None,
        &audit,
        Origin::Refresh {
            supersedes: &plan_id,
        },
    )
    .await?;
    sqlx::query("UPDATE plans SET status = 'superseded', superseded_by = $1 WHERE id = $2")
        .bind(&fresh.plan_id)
        .bind(&plan_id)
        .execute(&mut *w.tx)
        .await?;
    queue::publish(&mut w.tx, registry, &plan_id, EventKind::Updated).await?;
    let stored = plans::load(&mut w.tx, &fresh.plan_id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("the refreshed plan vanished"))?;
    let record = plans::record(&mut w.tx, registry, stored).await?;
    w.commit().await?;
    Ok(record)
}
