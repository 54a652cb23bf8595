//! Execution: only an approved plan that is still current, and exactly what it planned.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use countersign_pack::{Applied, Execution, Handle, Kind, WorldCapability};
use countersign_proto::approvals::PlanStatus;
use countersign_proto::describe::DryRunMode;
use countersign_proto::envelope::{SuccessEnvelope, Usage};
use countersign_proto::plan::{InvokeRequest, Preview};
use countersign_proto::ErrorCode;
use serde_json::{json, Map, Value};

use countersign_policy::Policy;

use crate::accounts::Agent;
use crate::approval::policy::{self, Asking};
use crate::plan::ahead::{self, Ahead};
use crate::plan::dry_run::invalid_preview;
use crate::plan::reads::no_such_plan;
use crate::plan::rederive::{blocked, mark_stale, rederive, stale};
use crate::plan::summaries::{self, SubjectSummaries};
use crate::plan::tasks;
use crate::queue::events::EventKind;
use crate::registry::{Capability, Registry};
use crate::store::Tx;
use sqlx::AnyConnection;
use tracing::Instrument as _;

use crate::{
    accounts::scopes, approval::approvals, approval::standing, execution::external,
    execution::wallet, ids, plan::bounds, plan::plans, queue, ApiError, ApiResult, Engine,
};

/// The invoke of capability `id` by `agent`, as the HTTP route and the MCP tools run it.
pub async fn run(
    engine: &Arc<Engine>,
    id: &str,
    trace_id: &str,
    agent: &Agent,
    request: InvokeRequest,
) -> ApiResult<SuccessEnvelope> {
    let started = Instant::now();
    let capability = engine.capability(id)?;
    let registry = engine.registry;
    // A read connection, kept for an inline call's evaluation below.
    let mut reading = match &request.params {
        Some(params) => {
            let mut conn = engine.store.pool().acquire().await?;
            scopes::authorize(&mut conn, registry, agent, capability, params).await?;
            Some(conn)
        }
        None => None,
    };
    bounds::invoke(&request, capability.max_string())?;
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

    // Reads of a server of the capability's own come before the writer (plan/ahead.rs).
    let ahead = match &request.plan_id {
        Some(plan_id) => ahead::read(engine, plan_id, Some(&agent.id), true).await?,
        None => None,
    };
    // An inline call without a key, of a capability whose state is elsewhere (a provider, an
    // MCP upstream), is evaluated before the writer, on the read connection its scopes were
    // read on: nothing of the store's is read to hold still, and one that writes nothing before
    // its call (external.rs) never waits for the writer.
    let early = match (
        &request.plan_id,
        &request.idempotency_key,
        capability.kind(),
    ) {
        (None, None, Kind::External(external)) => {
            let mut conn = match reading.take() {
                Some(conn) => conn,
                None => engine.store.pool().acquire().await?,
            };
            let (plan, _) =
                inline_plan(&mut conn, &engine.policy, capability, agent, &request).await?;
            // Not held across the call.
            drop(conn);
            let call = external::Call {
                engine,
                capability,
                external: external.as_ref(),
                plan: &plan,
                stored: false,
                identity: &identity,
                agent,
                request: &request,
                trace_id,
                started,
                rederived: Some(Ok(())),
            };
            if plan.executable && external::writes_nothing_first(&call) {
                let span = execution_span(&plan, &[]);
                return external::run_unwritten(call).instrument(span).await;
            }
            Some(plan)
        }
        _ => None,
    };
    drop(reading);
    let mut w = engine.store.write().await?;
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
                )
                .with_details(json!({"in_flight": true})));
            }
            return Ok(serde_json::from_str(&response)?);
        }
    }

    // A task's own execution (docs/mcp.md) runs nothing once the agent cancelled the task, even
    // when the cancel landed after the look that asked for it read the task.
    if let (Some(plan_id), Some(key)) = (&request.plan_id, &request.idempotency_key) {
        if *key == tasks::key(plan_id) && tasks::cancelled_in(&mut w.tx, plan_id).await? {
            return Err(ApiError::new(
                ErrorCode::PlanNotPending,
                format!("The task on plan {plan_id} was cancelled: it runs nothing."),
            )
            .with_details(json!({"task_cancelled": true})));
        }
    }

    // `in_this_write`: what an inline call was evaluated to under this writer, which nothing can
    // have moved since; a stored or early plan is derived again below.
    let (plan, stored, decided_by, in_this_write) = match &request.plan_id {
        Some(plan_id) => {
            let found = approved_plan(
                &mut w.tx,
                registry,
                capability,
                agent,
                plan_id,
                // An invoke always speaks for the agent: what it does not name, it did not observe.
                (
                    ahead.as_ref(),
                    Some(request.observed.as_ref().unwrap_or(&BTreeMap::new())),
                ),
            )
            .await;
            let (plan, decided_by) = match found {
                Ok(found) => found,
                // A file only the agent reads moved: the plan was marked stale in this write,
                // which commits with the refusal.
                Err(e) if e.code == ErrorCode::PlanStale => {
                    w.commit().await?;
                    return Err(e);
                }
                Err(e) => return Err(e),
            };
            (plan, true, decided_by, None)
        }
        None => match early {
            Some(plan) => (plan, false, Vec::new(), None),
            None => {
                let (plan, planned) =
                    inline_plan(&mut w.tx, &engine.policy, capability, agent, &request).await?;
                (plan, false, Vec::new(), Some(planned))
            }
        },
    };
    let span = execution_span(&plan, &decided_by);
    // The execution as one span, which the trace of the invoke holds (docs/operations.md).
    async {
        if !plan.executable {
            return Err(blocked(&plan));
        }
        let world = match capability.kind() {
            Kind::World(world) => world.as_ref(),
            Kind::External(external) => {
                let call = external::Call {
                    engine,
                    capability,
                    external: external.as_ref(),
                    plan: &plan,
                    stored,
                    identity: &identity,
                    agent,
                    request: &request,
                    trace_id,
                    started,
                    rederived: match in_this_write {
                        Some(_) => Some(Ok(())),
                        None => ahead.map(|ahead| ahead.rederived),
                    },
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
        let now_planned = match in_this_write {
            Some(planned) => planned,
            None => match rederive(&mut w.tx, capability, &plan).await {
                Ok(planned) => planned,
                Err(e) if e.code == ErrorCode::PlanStale && stored => {
                    return Err(stale(w, registry, &plan.plan_id, e).await?);
                }
                Err(e) => return Err(e),
            },
        };
        if stored {
            if let Some(refused) = standing::take(&mut w.tx, registry, &plan).await? {
                w.commit().await?;
                return Err(refused);
            }
        }
        let applied = execute(&mut w.tx, world, &plan, now_planned, execution).await?;
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
            metadata.insert("plan_digest".into(), json!(plan.plan_digest));
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
            queue::publish(&mut w.tx, registry, &plan.plan_id, EventKind::Updated).await?;
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
    .instrument(span)
    .await
}

/// The span of an execution, after OpenTelemetry's GenAI conventions for a tool's execution,
/// naming the plan, its digest, its capability and the decisions that approved it; never its
/// params, nor any token.
fn execution_span(plan: &Preview, decided_by: &[i64]) -> tracing::Span {
    let decisions = decided_by
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    tracing::info_span!(
        "execute_tool",
        otel.name = %format_args!("execute_tool {}", plan.capability_id),
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %plan.capability_id,
        gen_ai.tool.type = "function",
        gen_ai.tool.call.id = %plan.plan_id,
        countersign.plan.id = %plan.plan_id,
        countersign.plan.digest = %plan.plan_digest,
        countersign.decision.ids = %decisions,
    )
}

/// The checks of PROTOCOL section 2, in order: caller, expiry, approval, read revisions.
async fn approved_plan(
    tx: &mut Tx,
    registry: &'static Registry,
    capability: Capability,
    agent: &Agent,
    plan_id: &str,
    (ahead, observed): (Option<&Ahead>, plans::Observed<'_>),
) -> ApiResult<(Preview, Vec<i64>)> {
    let plan = plans::load(tx, plan_id).await?.ok_or_else(no_such_plan)?;
    if plan.agent_id != agent.id {
        // Another agent's plan answers as a missing one.
        return Err(no_such_plan());
    }
    if plan.preview.capability_id != capability.id() {
        return Err(ApiError::validation(
            "/plan_id",
            format!("Plan {plan_id} is for {}.", plan.preview.capability_id),
        ));
    }
    scopes::authorize(
        tx,
        registry,
        agent,
        capability,
        &plan.preview.request.params,
    )
    .await?;
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
    let moved = match ahead {
        Some(ahead) => ahead.moved.clone()?,
        None => plans::moved(tx, registry, &plan.preview.read_revisions, observed).await?,
    };
    if plan.status != PlanStatus::Approved && plan.status != PlanStatus::Stale {
        let approvals = approvals::of(tx, &plan).await?;
        return Err(ApiError::new(
            ErrorCode::ApprovalRequired,
            format!(
                "Plan {plan_id} has {} of {} approvals.",
                approvals.received.len(),
                plan.required_approvals
            ),
        ));
    }
    // Checked again here, whatever the status says: an approval withdrawn (its key or approver
    // revoked) stops counting at once.
    let (_, standing, decided_by) = approvals::tallied(tx, &plan).await?;
    if plan.status == PlanStatus::Approved && standing != PlanStatus::Approved {
        return Err(ApiError::new(
            ErrorCode::ApprovalRequired,
            format!("Plan {plan_id} no longer has the approvals it needs."),
        ));
    }
    if let Some(first) = moved.first() {
        // Only the agent sees its files: what it observed is recorded, for its approvers too.
        if moved
            .iter()
            .any(|m| registry.observed_by_caller(&m.resource))
        {
            mark_stale(tx, registry, plan_id).await?;
        }
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
    Ok((plan.preview, decided_by))
}

/// A capability invoked with params and no plan: evaluated now, and run only if it needs nobody.
async fn inline_plan(
    conn: &mut AnyConnection,
    policy: &Policy,
    capability: Capability,
    agent: &Agent,
    request: &InvokeRequest,
) -> ApiResult<(Preview, countersign_pack::Planned)> {
    let params = request.params.clone().unwrap_or(Value::Null);
    let audit_id = ids::random_id("aud_", 8);
    let violations = capability.violations(&params);
    if !violations.is_empty() {
        let invalid = invalid_preview(capability, &audit_id, violations);
        let message = invalid.violations[0].message.clone();
        return Err(ApiError::new(ErrorCode::ValidationError, message)
            .with_details(json!({ "violations": invalid.violations })));
    }
    let planned = capability.plan(conn, &params).await?;
    let summaries = SubjectSummaries::of(&summaries::sets_of(&planned));
    let mut plan = plans::build_preview(
        capability,
        agent,
        &params,
        None,
        planned.clone(),
        plans::PreviewIds {
            plan_id: plans::new_id(),
            audit_id: &audit_id,
        },
        &summaries,
    )?;
    let asking = Asking::load(conn, agent, policy.reads()).await?;
    let requirement = policy::requirement(policy, capability, &plan, &asking)?;
    plans::seal(&mut plan, &requirement)?;
    // No plan exists that could wait for approvals, and describe said this may happen
    // (`approval.needed`): seed 000's refusal for a request that must be previewed first.
    if plan.would_require_approval {
        let code = match capability.describe().dry_run {
            DryRunMode::NotApplicable => ErrorCode::ApprovalRequired,
            _ => ErrorCode::DryRunRequired,
        };
        return Err(ApiError::new(
            code,
            "This request needs approval under the gateway's policy: dry_run it and have the \
             plan approved.",
        ));
    }
    Ok((plan, planned))
}

/// Applies the plan as it was derived inside the write transaction (`now_planned`), and
/// makes stale every open plan that read what it moved.
async fn execute(
    tx: &mut Tx,
    world: &dyn WorldCapability,
    plan: &Preview,
    now_planned: countersign_pack::Planned,
    execution: Execution<'_>,
) -> ApiResult<Applied> {
    if let Some(plan_id) = execution.plan_id {
        // Marked before its own writes move what it read, so they make other readers stale, not it.
        plans::set_status(tx, plan_id, PlanStatus::Executed).await?;
    }
    let mut handle = Handle::new(tx);
    let applied = world
        .apply(&mut handle, &plan.request.params, &now_planned, execution)
        .await?;
    for resource in handle.take_moved() {
        queue::mark_stale_readers(tx, &resource).await?;
    }
    Ok(applied)
}
