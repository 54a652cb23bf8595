//! Executing a plan whose effect is a provider call, in three steps so that no transaction is
//! held across the network:
//!
//! 1. in one write transaction: the plan is evaluated again, its maximum cost is reserved from
//!    the wallet, and it is marked executed with the call in flight (a second invoke now finds
//!    it executed: the call happens at most once);
//! 2. the call, cut at that maximum;
//! 3. in another: the wallet gets back what the provider's usage did not spend, and the plan
//!    records the envelope (or the error) and turns `executed` (or `failed`).
//!
//! A gateway stopped between 1 and 3 finds the plan in flight when it starts again and records
//! it as failed, keeping the reserved charge: the provider may have done, and billed, the work.

use std::time::Instant;

use countersign_proto::approvals::PlanStatus;
use countersign_proto::envelope::{SuccessEnvelope, Usage};
use countersign_proto::error::ErrorEnvelope;
use countersign_proto::plan::{Change, InvokeRequest, Preview};
use countersign_proto::{Credits, ErrorCode};
use serde_json::{json, Map, Value};

use super::invoke::{rederive, stale};
use crate::accounts::Agent;
use crate::capabilities::{Capability, ExternalCapability, JournalEntry};
use crate::error::{ApiError, ApiResult};
use crate::events::EventKind;
use crate::providers::{Called, ProviderCall};
use crate::store::{Store, WriteTx};
use crate::{ids, plans, queue, wallet, AppState};

/// One invoke of an approved plan of an external capability.
pub struct Call<'a> {
    pub state: &'a AppState,
    pub capability: Capability,
    pub external: &'a dyn ExternalCapability,
    pub plan: &'a Preview,
    pub agent: &'a Agent,
    pub request: &'a InvokeRequest,
    pub trace_id: &'a str,
    pub started: Instant,
}

pub async fn run(mut w: WriteTx<'_>, call: Call<'_>) -> ApiResult<SuccessEnvelope> {
    let (plan, agent) = (call.plan, call.agent);
    let planned = match rederive(&mut w.tx, call.capability, plan).await {
        Ok(planned) => planned,
        Err(e) if e.code == ErrorCode::PlanStale => return Err(stale(w, plan, e).await?),
        Err(e) => return Err(e),
    };
    let budget = plan.estimated_cost.amount_max;
    wallet::ensure(&mut w.tx, &agent.id, budget).await?;
    wallet::charge(&mut w.tx, &agent.id, budget).await?;
    let audit_id = ids::random_id("aud_", 8);
    let executed_at = ids::to_text(ids::now());
    let in_flight = json!({"executed_at": executed_at, "audit_id": audit_id, "in_flight": true,
                           "charged": credits(budget)});
    record(&mut w, &plan.plan_id, PlanStatus::Executed, &in_flight).await?;
    w.commit().await?;

    let called = call
        .external
        .call(ProviderCall {
            providers: &call.state.providers,
            params: &plan.request.params,
            planned: &planned,
            budget,
        })
        .await
        .unwrap_or_else(|e| Called::failed("system", e, Credits::cents(0)));
    let charged = if called.charged.value() > budget.value() {
        budget
    } else {
        called.charged
    };

    let mut w = call.state.store.write().await?;
    wallet::charge(
        &mut w.tx,
        &agent.id,
        Credits::new(charged.value() - budget.value()),
    )
    .await?;
    let effects_applied: Vec<&str> = plan.effects.iter().map(|e| e.id.as_str()).collect();
    let mut execution = json!({"executed_at": executed_at, "audit_id": audit_id,
                               "effects_applied": effects_applied, "charged": credits(charged),
                               "estimated": plan.estimated_cost});
    let answer = match called.outcome {
        Ok(output) => {
            let mut metadata = Map::new();
            metadata.insert("trace_id".into(), json!(call.trace_id));
            metadata.insert(
                "latency_ms".into(),
                json!(call.started.elapsed().as_millis() as u64),
            );
            metadata.insert("plan_id".into(), json!(plan.plan_id));
            metadata.insert("audit_id".into(), json!(audit_id));
            metadata.insert("charged".into(), credits(charged));
            metadata.insert("estimated".into(), json!(plan.estimated_cost));
            metadata.insert("effects_applied".into(), json!(effects_applied));
            metadata.extend(output.metadata);
            let envelope = SuccessEnvelope {
                success: true,
                content: output.content,
                provider: called.provider.to_owned(),
                usage: Usage {
                    credits: charged,
                    ..output.usage
                },
                metadata,
                images: output.images,
                files: output.files,
                videos: output.videos,
            };
            execution["result"] = json!(envelope);
            Ok(envelope)
        }
        Err(mut error) => {
            if let Value::Object(details) = &mut error.details {
                details.insert("charged".into(), credits(charged));
                details.insert("plan_id".into(), json!(plan.plan_id));
            }
            let mut envelope = ErrorEnvelope::new(
                error.code,
                error.message.clone(),
                error.details.clone(),
                call.trace_id,
            );
            if let Some(provider) = error.provider {
                envelope = envelope.from_provider(provider);
            }
            execution["result"] = json!(envelope);
            Err(error)
        }
    };
    let status = if answer.is_ok() {
        PlanStatus::Executed
    } else {
        PlanStatus::Failed
    };
    record(&mut w, &plan.plan_id, status, &execution).await?;
    let journal = plan
        .effects
        .iter()
        .map(|effect| {
            JournalEntry::of(
                effect,
                vec![],
                vec![Change {
                    path: "/charged".to_owned(),
                    before: json!(budget),
                    after: json!(charged),
                }],
            )
        })
        .collect::<Vec<_>>();
    sqlx::query(
        "INSERT INTO execution_audit (id, plan_id, capability_id, agent_id, journal, at)
         VALUES (?, ?, ?, ?, ?, ?)",
    )
    .bind(&audit_id)
    .bind(&plan.plan_id)
    .bind(call.capability.id())
    .bind(&agent.id)
    .bind(serde_json::to_string(&journal)?)
    .bind(ids::to_text(ids::now()))
    .execute(&mut *w.tx)
    .await?;
    if let (Ok(envelope), Some(key)) = (&answer, &call.request.idempotency_key) {
        sqlx::query(
            "INSERT INTO invocations (agent_id, idempotency_key, request_digest, response)
             VALUES (?, ?, ?, ?)",
        )
        .bind(&agent.id)
        .bind(key)
        .bind(format!("plan:{}", plan.plan_id))
        .bind(serde_json::to_string(envelope)?)
        .execute(&mut *w.tx)
        .await?;
    }
    w.commit().await?;
    answer
}

fn credits(amount: Credits) -> Value {
    json!({"amount": amount, "currency": "credits"})
}

async fn record(
    w: &mut WriteTx<'_>,
    plan_id: &str,
    status: PlanStatus,
    execution: &Value,
) -> ApiResult<()> {
    sqlx::query("UPDATE plans SET status = ?, execution = ? WHERE id = ?")
        .bind(plans::status_text(status))
        .bind(execution.to_string())
        .bind(plan_id)
        .execute(&mut *w.tx)
        .await?;
    queue::publish(&mut w.tx, plan_id, EventKind::Updated).await?;
    Ok(())
}

/// Plans whose provider call was in flight when the gateway stopped: recorded as failed, with
/// the reserved charge kept. Answers how many.
pub async fn recover_interrupted(store: &Store) -> ApiResult<u64> {
    let mut w = store.write().await?;
    let ids: Vec<String> = sqlx::query_scalar(
        "SELECT id FROM plans WHERE status = 'executed'
         AND json_extract(execution, '$.in_flight') = 1",
    )
    .fetch_all(&mut *w.tx)
    .await?;
    for id in &ids {
        let error = ApiError::new(
            ErrorCode::ProviderUnavailable,
            "The gateway stopped while the provider call was in flight; the reserved maximum \
             stays charged, as the provider may have done the work.",
        );
        let envelope = ErrorEnvelope::new(error.code, error.message, json!({}), "trc_recovery");
        sqlx::query(
            "UPDATE plans SET status = 'failed',
             execution = json_set(execution, '$.in_flight', json('false'), '$.result', json(?))
             WHERE id = ?",
        )
        .bind(serde_json::to_string(&envelope)?)
        .bind(id)
        .execute(&mut *w.tx)
        .await?;
        queue::publish(&mut w.tx, id, EventKind::Updated).await?;
    }
    w.commit().await?;
    Ok(ids.len() as u64)
}
