//! Execution: only an approved plan that is still current, and exactly what it planned.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Path, State};
use axum::{Extension, Json};
use countersign_proto::approvals::PlanStatus;
use countersign_proto::describe::DryRunMode;
use countersign_proto::envelope::{SuccessEnvelope, Usage};
use countersign_proto::plan::{Effect, InvokeRequest, Preview};
use countersign_proto::ErrorCode;
use serde_json::{json, Map, Value};

use super::agent::{capability, invalid_preview};
use super::external;
use crate::accounts::Agent;
use crate::capabilities::{Applied, Capability, Execution, Kind, Planned, WorldCapability};
use crate::error::{ApiError, ApiResult, Body, TraceId};
use crate::events::EventKind;
use crate::store::{Tx, WriteTx};
use crate::{bounds, ids, plans, queue, scopes, wallet, AppState};

pub async fn invoke(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    Extension(TraceId(trace_id)): Extension<TraceId>,
    agent: Agent,
    Body(request): Body<InvokeRequest>,
) -> ApiResult<Json<SuccessEnvelope>> {
    Ok(Json(run(&state, &id, &trace_id, &agent, request).await?))
}

/// The invoke of capability `id` by `agent`, as the HTTP route and the MCP tools run it.
pub async fn run(
    state: &Arc<AppState>,
    id: &str,
    trace_id: &str,
    agent: &Agent,
    request: InvokeRequest,
) -> ApiResult<SuccessEnvelope> {
    let started = Instant::now();
    let capability = capability(id)?;
    if let Some(params) = &request.params {
        let mut conn = state.store.pool().acquire().await?;
        scopes::authorize(&mut conn, agent, capability, params).await?;
    }
    bounds::invoke(&request)?;
    let identity = match (&request.plan_id, &request.params) {
        (Some(_), Some(_)) => {
            return Err(ApiError::validation(
                "/params",
                "Invoke by plan_id carries no second copy of the params.",
            ))
        }
        (None, None) => {
            return Err(ApiError::validation(
                "/plan_id",
                "Invoke needs a plan_id (or params where the capability allows it).",
            ))
        }
        (Some(plan_id), None) => format!("plan:{plan_id}"),
        (None, Some(params)) => {
            if capability.describe().dry_run == DryRunMode::Required {
                return Err(ApiError::new(
                    ErrorCode::DryRunRequired,
                    format!("{id} executes only an approved plan: dry_run first."),
                ));
            }
            countersign_proto::digest::request_digest(id, params).map_err(anyhow::Error::from)?
        }
    };

    let mut w = state.store.write().await?;
    if let Some(key) = &request.idempotency_key {
        let stored: Option<(String, String)> = sqlx::query_as(
            "SELECT request_digest, response FROM invocations WHERE agent_id = $1 AND idempotency_key = $2",
        )
        .bind(&agent.id)
        .bind(key)
        .fetch_optional(&mut *w.tx)
        .await?;
        if let Some((digest, response)) = stored {
            if digest != identity {
                return Err(ApiError::new(
                    ErrorCode::IdempotencyConflict,
                    "This idempotency key was used for another request.",
                ));
            }
            if response.is_empty() {
                return Err(ApiError::new(
                    ErrorCode::PlanAlreadyExecuted,
                    "The call made with this idempotency key is still in flight; send it again \
                     for its answer.",
                ));
            }
            return Ok(serde_json::from_str(&response)?);
        }
    }

    let (plan, stored) = match &request.plan_id {
        Some(plan_id) => (
            approved_plan(&mut w.tx, capability, agent, plan_id).await?,
            true,
        ),
        None => (
            inline_plan(&mut w.tx, capability, agent, &request).await?,
            false,
        ),
    };
    if !plan.executable {
        return Err(blocked(&plan));
    }
    let world = match capability.kind() {
        Kind::World(world) => world.as_ref(),
        Kind::External(external) => {
            let call = external::Call {
                state,
                capability,
                external: external.as_ref(),
                plan: &plan,
                agent,
                request: &request,
                trace_id,
                started,
            };
            return external::run(w, call).await;
        }
    };
    let charged = plan.estimated_cost.amount_max;
    wallet::ensure(&mut w.tx, &agent.id, charged).await?;
    let execution = Execution {
        agent_id: &agent.id,
        plan_id: stored.then_some(plan.plan_id.as_str()),
    };
    let applied = match execute(&mut w.tx, capability, world, &plan, execution).await {
        Ok(applied) => applied,
        Err(e) if e.code == ErrorCode::PlanStale && stored => {
            return Err(stale(w, &plan, e).await?);
        }
        Err(e) => return Err(e),
    };
    wallet::charge(&mut w.tx, &agent.id, charged).await?;

    let audit_id = ids::random_id("aud_", 8);
    let effects_applied: Vec<&str> = applied
        .journal
        .iter()
        .map(|e| e.effect_id.as_str())
        .collect();
    let mut units = applied.units.clone();
    let subjects: usize = applied.journal.iter().map(|e| e.subjects.len()).sum();
    if subjects > 0 {
        units.insert("subjects".to_owned(), subjects as u64);
    }
    let usage = Usage {
        credits: charged,
        units,
        ..Usage::default()
    };
    let charged = json!({"amount": charged, "currency": plan.estimated_cost.currency});
    let mut metadata = Map::new();
    metadata.insert("trace_id".into(), json!(trace_id));
    metadata.insert(
        "latency_ms".into(),
        json!(started.elapsed().as_millis() as u64),
    );
    if stored {
        metadata.insert("plan_id".into(), json!(plan.plan_id));
    }
    metadata.insert("audit_id".into(), json!(audit_id));
    metadata.insert("charged".into(), charged.clone());
    metadata.insert("effects_applied".into(), json!(effects_applied));
    metadata.extend(applied.metadata.clone());
    let mut response = SuccessEnvelope::new(applied.content.clone(), metadata);
    response.usage = usage;
    response.files = applied.files.clone();

    let now = ids::to_text(ids::now());
    if stored {
        // The envelope the agent received, so that approvers see the same result; the journal
        // stays in the execution audit, where a 100,000-subject removal's belongs.
        let execution = json!({"executed_at": now, "audit_id": audit_id,
                               "effects_applied": effects_applied, "charged": charged,
                               "result": response});
        sqlx::query("UPDATE plans SET status = 'executed', execution = $1 WHERE id = $2")
            .bind(execution.to_string())
            .bind(&plan.plan_id)
            .execute(&mut *w.tx)
            .await?;
        queue::publish(&mut w.tx, &plan.plan_id, EventKind::Updated).await?;
    }
    sqlx::query(
        "INSERT INTO execution_audit (id, plan_id, capability_id, agent_id, journal, at)
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(&audit_id)
    .bind(stored.then_some(&plan.plan_id))
    .bind(capability.id())
    .bind(&agent.id)
    .bind(serde_json::to_string(&applied.journal)?)
    .bind(&now)
    .execute(&mut *w.tx)
    .await?;
    if let Some(key) = &request.idempotency_key {
        sqlx::query(
            "INSERT INTO invocations (agent_id, idempotency_key, request_digest, response)
             VALUES ($1, $2, $3, $4)",
        )
        .bind(&agent.id)
        .bind(key)
        .bind(&identity)
        .bind(serde_json::to_string(&response)?)
        .execute(&mut *w.tx)
        .await?;
    }
    w.commit().await?;
    Ok(response)
}

/// The checks of PROTOCOL section 2, in order: caller, expiry, approval, read revisions.
pub(super) async fn approved_plan(
    tx: &mut Tx,
    capability: Capability,
    agent: &Agent,
    plan_id: &str,
) -> ApiResult<Preview> {
    let plan = plans::load(tx, plan_id)
        .await?
        .ok_or_else(|| ApiError::not_found("plan"))?;
    if plan.agent_id != agent.id {
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            "Only the agent that previewed a plan may execute it.",
        ));
    }
    if plan.preview.capability_id != capability.id() {
        return Err(ApiError::validation(
            "/plan_id",
            format!("Plan {plan_id} is for {}.", plan.preview.capability_id),
        ));
    }
    scopes::authorize(tx, agent, capability, &plan.preview.request.params).await?;
    match plan.status {
        PlanStatus::Executed => {
            return Err(ApiError::new(
                ErrorCode::PlanAlreadyExecuted,
                format!("Plan {plan_id} was already executed."),
            ))
        }
        PlanStatus::Rejected | PlanStatus::Superseded | PlanStatus::Failed => {
            return Err(ApiError::new(
                ErrorCode::PlanNotPending,
                format!("Plan {plan_id} is {}.", plans::status_text(plan.status)),
            ))
        }
        _ => {}
    }
    if ids::now() > plan.preview.expires_at {
        return Err(ApiError::new(
            ErrorCode::PlanExpired,
            format!(
                "Plan {plan_id} expired at {}.",
                ids::to_text(plan.preview.expires_at)
            ),
        ));
    }
    let moved = plans::moved(tx, &plan.preview.read_revisions).await?;
    if plan.status != PlanStatus::Approved && plan.status != PlanStatus::Stale {
        let approvals = plans::approvals(tx, plan_id, plan.required_approvals).await?;
        return Err(ApiError::new(
            ErrorCode::ApprovalRequired,
            format!(
                "Plan {plan_id} has {} of {} approvals.",
                approvals.received.len(),
                plan.required_approvals
            ),
        ));
    }
    if let Some(first) = moved.first() {
        return Err(ApiError::new(
            ErrorCode::PlanStale,
            format!(
                "Plan {plan_id} read {} at revision {}; it is now {}.",
                first.resource, first.planned, first.current
            ),
        )
        .with_details(json!({ "moved": moved })));
    }
    if plan.status == PlanStatus::Stale {
        return Err(ApiError::new(
            ErrorCode::ApprovalRequired,
            format!("Plan {plan_id} was refused as stale and holds no approval."),
        ));
    }
    Ok(plan.preview)
}

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

/// A capability invoked with params and no plan: evaluated now, and run only if it needs nobody.
async fn inline_plan(
    tx: &mut Tx,
    capability: Capability,
    agent: &Agent,
    request: &InvokeRequest,
) -> ApiResult<Preview> {
    let params = request.params.clone().unwrap_or(Value::Null);
    let audit_id = ids::random_id("aud_", 8);
    let violations = capability.violations(&params);
    if !violations.is_empty() {
        let invalid = invalid_preview(capability, &audit_id, violations);
        let message = invalid.violations[0].message.clone();
        return Err(ApiError::new(ErrorCode::ValidationError, message)
            .with_details(json!({ "violations": invalid.violations })));
    }
    let planned = capability.plan(tx, &params).await?;
    let plan = plans::build_preview(capability, agent, &params, None, planned, &audit_id)?;
    if plan.would_require_approval {
        return Err(ApiError::new(
            ErrorCode::ApprovalRequired,
            "This request needs approval: dry_run it and have the plan approved.",
        ));
    }
    Ok(plan)
}

/// The state moved under the plan without a revision saying so: it is stale for its approvers
/// too, and holds no approval any more. Answers the refusal to pass on.
pub(super) async fn stale(mut w: WriteTx<'_>, plan: &Preview, e: ApiError) -> ApiResult<ApiError> {
    plans::set_status(&mut w.tx, &plan.plan_id, PlanStatus::Stale).await?;
    queue::publish(&mut w.tx, &plan.plan_id, EventKind::Updated).await?;
    w.commit().await?;
    Ok(e)
}

/// Re-derives the plan inside the write transaction, refuses if it no longer matches, applies it.
async fn execute(
    tx: &mut Tx,
    capability: Capability,
    world: &dyn WorldCapability,
    plan: &Preview,
    execution: Execution<'_>,
) -> ApiResult<Applied> {
    let now_planned = rederive(tx, capability, plan).await?;
    if let Some(plan_id) = execution.plan_id {
        // Marked before its own writes move what it read, so they make other readers stale, not it.
        plans::set_status(tx, plan_id, PlanStatus::Executed).await?;
    }
    world
        .apply(tx, &plan.request.params, &now_planned, execution)
        .await
}

/// The plan evaluated again inside the write transaction; refused unless it is the same plan
/// and nothing now blocks it.
pub(super) async fn rederive(
    tx: &mut Tx,
    capability: Capability,
    plan: &Preview,
) -> ApiResult<Planned> {
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
        &plan.audit_id,
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
