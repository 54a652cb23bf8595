//! What holds at execution, for both kinds of capability: the plan evaluated again inside the
//! write transaction must be the plan that was approved, and nothing may now block it; a plan
//! that fails this is stale for its approvers too.

use std::collections::{BTreeMap, BTreeSet};

use countersign_pack::Planned;
use countersign_proto::approvals::PlanStatus;
use countersign_proto::plan::{Effect, Preview};
use countersign_proto::ErrorCode;
use serde_json::{json, Value};

use crate::accounts::callers::Agent;
use crate::plan::summaries::{self, SubjectSummaries};
use crate::queue::events::EventKind;
use crate::registry::{Capability, Registry};
use crate::store::{Tx, WriteTx};
use crate::{plan::plans, queue, ApiError, ApiResult};

/// A blocked plan never runs; the first blocker says why, in the violation form.
pub fn blocked(plan: &Preview) -> ApiError {
    let first = plan.validation.iter().find(|v| v.blocks_execution);
    let pointer = first.and_then(|v| v.path.clone()).unwrap_or_default();
    let message = first.map_or_else(
        || "The plan has blocking validation errors.".to_owned(),
        |v| v.message.clone(),
    );
    let mut error = ApiError::validation(&pointer, message);
    error.details["validation"] = json!(plan.validation);
    error
}

/// The state moved under the plan without a revision saying so: it is stale for its approvers
/// too, and holds no approval any more. Answers the refusal to pass on.
pub async fn stale(
    mut w: WriteTx<'_>,
    registry: &'static Registry,
    plan_id: &str,
    e: ApiError,
) -> ApiResult<ApiError> {
    mark_stale(&mut w.tx, registry, plan_id).await?;
    w.commit().await?;
    Ok(e)
}

/// `plan_id` is stale from this transaction on, and its approvers are told.
pub async fn mark_stale(tx: &mut Tx, registry: &'static Registry, plan_id: &str) -> ApiResult<()> {
    plans::set_status(tx, plan_id, PlanStatus::Stale).await?;
    queue::publish(tx, registry, plan_id, EventKind::Updated).await?;
    Ok(())
}

/// The plan evaluated again inside the write transaction; refused unless it is the same plan
/// and nothing now blocks it.
pub async fn rederive(tx: &mut Tx, capability: Capability, plan: &Preview) -> ApiResult<Planned> {
    let params = &plan.request.params;
    let now_planned = capability.plan(tx, params).await?;
    let agent = Agent {
        id: plan.caller.agent_id.clone(),
        on_behalf_of: plan.caller.on_behalf_of.clone(),
    };
    let again = plans::build_preview(
        capability,
        &agent,
        params,
        None,
        now_planned.clone(),
        plans::PreviewIds {
            plan_id: plan.plan_id.clone(),
            audit_id: &plan.audit_id,
        },
        &SubjectSummaries::of(&summaries::sets_of(&now_planned)),
    )?;
    if again.effects != plan.effects || again.estimated_cost != plan.estimated_cost {
        return Err(drifted(plan, &again));
    }
    // Same effects, but something now blocks them (a suspended account, say): not the plan
    // that was approved either.
    if !again.executable {
        return Err(ApiError::new(
            ErrorCode::PlanStale,
            "The current state blocks this plan: preview again to see why.",
        )
        .with_details(json!({ "moved": [], "validation": again.validation })));
    }
    Ok(now_planned)
}

/// The refusal of a plan whose effects the current state no longer gives, naming each effect
/// that differs (planned and now) and the cost when it moved.
fn drifted(plan: &Preview, again: &Preview) -> ApiError {
    let by_id = |effects: &[Effect]| -> BTreeMap<String, Effect> {
        effects.iter().map(|e| (e.id.clone(), e.clone())).collect()
    };
    let (planned, current) = (by_id(&plan.effects), by_id(&again.effects));
    let ids: BTreeSet<&String> = planned.keys().chain(current.keys()).collect();
    let differing: Vec<Value> = ids
        .into_iter()
        .filter(|id| planned.get(*id) != current.get(*id))
        .map(|id| json!({"effect": id, "planned": planned.get(id), "current": current.get(id)}))
        .collect();
    let first = differing
        .first()
        .and_then(|d| d["effect"].as_str())
        .map_or_else(
            || "the cost".to_owned(),
            |id| {
                let kind = planned
                    .get(id)
                    .or_else(|| current.get(id))
                    .map_or("", |e| e.effect_type.as_str());
                format!("{id} ({kind})")
            },
        );
    let mut details = json!({ "moved": [], "drifted": differing });
    if again.estimated_cost != plan.estimated_cost {
        details["cost"] = json!({"planned": plan.estimated_cost, "current": again.estimated_cost});
    }
    ApiError::new(
        ErrorCode::PlanStale,
        format!(
            "Plan {} no longer describes the current state ({first} differs): preview again.",
            plan.plan_id
        ),
    )
    .with_details(details)
}
