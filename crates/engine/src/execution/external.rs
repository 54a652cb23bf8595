//! Executing a plan whose effect is a provider call, in three steps so that no transaction is
//! held across the network:
//!
//! 1. in one write transaction: the plan is evaluated again, its maximum cost is reserved from
//!    the wallet, its idempotency key is taken, and it is marked executed with the call in
//!    flight (a second invoke now finds it executed: the call happens at most once);
//! 2. the call, cut at that maximum;
//! 3. in another: the wallet gets back what the provider did not spend, and the plan records
//!    the envelope (or the error) and turns `executed` (or `failed`); a call that certainly did
//!    nothing (a rate limit, no connection) leaves the plan `approved`, to be invoked again.
//!
//! Steps 2 and 3 run in a task of their own, so an agent that hangs up does not abandon a call
//! it paid for. A gateway stopped between 1 and 3 finds the plan in flight when it starts again
//! ([`recover_interrupted`]) and records it as failed, keeping the reservation: the provider may
//! have done, and billed, the work.
//!
//! A call evaluated for its invoke alone (a capability that needs nobody and no preview, such as
//! an MCP tool that only reads) takes the same steps without a plan to mark: it is audited and
//! answered, and leaves no plan behind.

use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::Instrument as _;

use countersign_proto::approvals::PlanStatus;
use countersign_proto::envelope::{SuccessEnvelope, Usage};
use countersign_proto::error::ErrorEnvelope;
use countersign_proto::plan::{Change, InvokeRequest, Preview};
use countersign_proto::{Credits, ErrorCode};
use serde_json::{json, Map, Value};

use countersign_pack::{Called, ExternalCall, ExternalCapability, JournalEntry};

use crate::accounts::Agent;
use crate::plan::rederive::{rederive, stale};
use crate::queue::events::EventKind;
use crate::registry::{Capability, Registry};
use crate::store::{Dialect, Store, WriteTx};
use crate::{
    approval::standing, execution::wallet, ids, plan::plans, queue, ApiError, ApiResult, Engine,
};

/// One invoke of an approved plan of an external capability.
pub struct Call<'a> {
    pub engine: &'a Arc<Engine>,
    pub capability: Capability,
    pub external: &'static dyn ExternalCapability,
    pub plan: &'a Preview,
    /// The plan is stored (previewed and, where it had to be, approved); otherwise it was
    /// evaluated for this invoke alone, needs nobody, and leaves no plan behind.
    pub stored: bool,
    /// What the idempotency key is taken for: the plan, or the request's digest.
    pub identity: &'a str,
    pub agent: &'a Agent,
    pub request: &'a InvokeRequest,
    pub trace_id: &'a str,
    pub started: Instant,
    /// The plan already evaluated against the state it runs on: again before the writer was
    /// taken, for a capability that reads remotely (plan/ahead.rs), or in this very write (an
    /// inline call); `None`: evaluated again here, inside the write.
    pub rederived: Option<ApiResult<()>>,
}

/// What the call and its settlement need, owned, for the task they run in.
struct InFlight {
    engine: Arc<Engine>,
    capability: Capability,
    external: &'static dyn ExternalCapability,
    plan: Preview,
    stored: bool,
    agent_id: String,
    key: Option<String>,
    trace_id: String,
    started: Instant,
    audit_id: String,
    executed_at: String,
}

pub async fn run(mut w: WriteTx<'_>, mut call: Call<'_>) -> ApiResult<SuccessEnvelope> {
    let (plan, agent) = (call.plan, call.agent);
    call.external.ready()?;
    let registry = call.engine.registry;
    let rederived = match call.rederived.take() {
        Some(ahead) => ahead,
        None => rederive(&mut w.tx, call.capability, plan).await.map(drop),
    };
    if let Err(e) = rederived {
        return Err(match e.code {
            ErrorCode::PlanStale if call.stored => stale(w, registry, &plan.plan_id, e).await?,
            _ => e,
        });
    }
    if call.stored {
        if let Some(refused) = standing::take(&mut w.tx, registry, plan).await? {
            w.commit().await?;
            return Err(refused);
        }
    }
    let budget = plan.estimated_cost.amount_max;
    wallet::ensure(&mut w.tx, &agent.id, budget).await?;
    wallet::charge(&mut w.tx, &agent.id, budget).await?;
    if let Some(key) = &call.request.idempotency_key {
        // Taken now, answered in step 3: the same key meanwhile finds the call in flight.
        sqlx::query(
            "INSERT INTO invocations (agent_id, idempotency_key, request_digest, response)
             VALUES ($1, $2, $3, '')",
        )
        .bind(&agent.id)
        .bind(key)
        .bind(call.identity)
        .execute(&mut *w.tx)
        .await?;
    }
    let flight = InFlight::of(&call);
    if call.stored {
        let in_flight = json!({"executed_at": flight.executed_at, "audit_id": flight.audit_id,
                               "in_flight": true, "charged": credits(budget)});
        record(
            &mut w,
            registry,
            &plan.plan_id,
            PlanStatus::Executed,
            Some(&in_flight),
        )
        .await?;
    }
    w.commit().await?;
    flight.launch().await
}

/// Whether `call` writes nothing before the provider is called: evaluated for its invoke alone,
/// with no idempotency key to take and nothing to reserve. Step 1 is then its evaluation, which
/// needs no writer (an MCP tool that only reads, called as often as an agent reads).
pub fn writes_nothing_first(call: &Call<'_>) -> bool {
    !call.stored
        && call.request.idempotency_key.is_none()
        && call.plan.estimated_cost.amount_max.value().is_zero()
}

/// Steps 2 and 3 of a call that [`writes_nothing_first`], its plan just evaluated.
pub async fn run_unwritten(call: Call<'_>) -> ApiResult<SuccessEnvelope> {
    debug_assert!(writes_nothing_first(&call));
    call.external.ready()?;
    InFlight::of(&call).launch().await
}

impl InFlight {
    fn of(call: &Call<'_>) -> InFlight {
        InFlight {
            engine: call.engine.clone(),
            capability: call.capability,
            external: call.external,
            plan: call.plan.clone(),
            stored: call.stored,
            agent_id: call.agent.id.clone(),
            key: call.request.idempotency_key.clone(),
            trace_id: call.trace_id.to_owned(),
            started: call.started,
            audit_id: ids::random_id("aud_", 8),
            executed_at: ids::to_text(ids::now()),
        }
    }

    /// Steps 2 and 3, in a task of their own.
    async fn launch(self) -> ApiResult<SuccessEnvelope> {
        tokio::spawn(self.finish().in_current_span())
            .await
            .map_err(|e| ApiError::from(anyhow::anyhow!("the provider call's task ended: {e}")))?
    }

    async fn finish(self) -> ApiResult<SuccessEnvelope> {
        let budget = self.plan.estimated_cost.amount_max;
        let span = tracing::info_span!(
            "provider.call",
            countersign.capability = %self.plan.capability_id,
            countersign.plan.id = %self.plan.plan_id,
        );
        let call = self
            .external
            .call(ExternalCall {
                params: &self.plan.request.params,
                budget,
            })
            .instrument(span);
        let called = tokio::select! {
            called = call => called.unwrap_or_else(|error| Called {
                provider: "system",
                outcome: Err(error),
                charged: Credits::cents(0),
                nothing_done: true,
            }),
            // The gateway stops and the provider has not answered: what it did is unknown, so
            // the call is recorded as failed with its reserved maximum kept, and runs no more.
            () = self.engine.shutdown.deadline_passed() => Called {
                provider: "system",
                outcome: Err(outcome_unknown()),
                charged: budget,
                nothing_done: false,
            },
        };
        // The engine holds every capability to its budget, its own packs' and others'.
        let charged = if called.charged.value() > budget.value() {
            budget
        } else {
            called.charged
        };
        let answer = self.answer(&called, charged);
        // The call is paid for: its settlement is tried again while the store refuses it.
        let mut attempt = 1;
        loop {
            match self.settle(&called, charged, &answer).await {
                Ok(()) => break,
                Err(e) if attempt < SETTLE_ATTEMPTS => {
                    tracing::warn!(plan_id = %self.plan.plan_id, error = %e.message, "settling again");
                    tokio::time::sleep(Duration::from_secs(attempt)).await;
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
        let outcome = match (&answer, called.nothing_done) {
            (Ok(_), _) => "succeeded",
            (Err(_), false) => "failed",
            (Err(_), true) => "nothing_done",
        };
        let spent = charged.value().to_string().parse().unwrap_or(0.0);
        crate::telemetry::provider_called(&self.plan.capability_id, outcome, spent);
        answer.map_err(|failed| failed.0)
    }

    /// The agent's answer, and the record's: the envelope, or the error contract.
    fn answer(&self, called: &Called, charged: Credits) -> Answer {
        let plan = &self.plan;
        let effects_applied: Vec<&str> = plan.effects.iter().map(|e| e.id.as_str()).collect();
        match &called.outcome {
            Ok(output) => {
                let mut metadata = Map::new();
                metadata.insert("trace_id".into(), json!(self.trace_id));
                metadata.insert(
                    "latency_ms".into(),
                    json!(self.started.elapsed().as_millis() as u64),
                );
                if self.stored {
                    metadata.insert("plan_id".into(), json!(plan.plan_id));
                    metadata.insert("plan_digest".into(), json!(plan.plan_digest));
                }
                metadata.insert("audit_id".into(), json!(self.audit_id));
                metadata.insert("charged".into(), credits(charged));
                metadata.insert("estimated".into(), json!(plan.estimated_cost));
                metadata.insert("effects_applied".into(), json!(effects_applied));
                metadata.extend(output.metadata.clone());
                Ok(SuccessEnvelope {
                    success: true,
                    content: output.content.clone(),
                    provider: called.provider.to_owned(),
                    usage: Usage {
                        credits: charged,
                        ..output.usage.clone()
                    },
                    metadata,
                    images: output.images.clone(),
                    files: output.files.clone(),
                    videos: output.videos.clone(),
                })
            }
            Err(error) => {
                let mut error = error.clone();
                if let Value::Object(details) = &mut error.details {
                    details.insert("charged".into(), credits(charged));
                    details.insert("plan_id".into(), json!(plan.plan_id));
                }
                // A plan whose call did something is used up: the same invoke cannot succeed.
                if !called.nothing_done {
                    error.retryable = Some(false);
                }
                let mut envelope = ErrorEnvelope::new(
                    error.code,
                    error.message.clone(),
                    error.details.clone(),
                    &self.trace_id,
                );
                if let Some(provider) = error.provider {
                    envelope = envelope.from_provider(provider);
                }
                if let Some(retryable) = error.retryable {
                    envelope.error.retryable = retryable;
                }
                Err(Box::new((error, envelope)))
            }
        }
    }

    /// Step 3, in one write transaction.
    async fn settle(&self, called: &Called, charged: Credits, answer: &Answer) -> ApiResult<()> {
        let plan = &self.plan;
        let budget = plan.estimated_cost.amount_max;
        let mut w = self.engine.store.write().await?;
        let registry = self.engine.registry;
        let refund = Credits::new(charged.value() - budget.value());
        wallet::charge(&mut w.tx, &self.agent_id, refund).await?;
        let effects_applied: Vec<&str> = plan.effects.iter().map(|e| e.id.as_str()).collect();
        let result = match answer {
            Ok(envelope) => json!(envelope),
            Err(failed) => json!(failed.1),
        };
        let execution = json!({"executed_at": self.executed_at, "audit_id": self.audit_id,
                               "effects_applied": effects_applied, "charged": credits(charged),
                               "estimated": plan.estimated_cost, "result": result});
        if self.stored {
            match (answer, called.nothing_done) {
                (Ok(_), _) => record(
                    &mut w,
                    registry,
                    &plan.plan_id,
                    PlanStatus::Executed,
                    Some(&execution),
                ),
                (Err(_), false) => record(
                    &mut w,
                    registry,
                    &plan.plan_id,
                    PlanStatus::Failed,
                    Some(&execution),
                ),
                (Err(_), true) => {
                    record(&mut w, registry, &plan.plan_id, PlanStatus::Approved, None)
                }
            }
            .await?;
        }
        let journal: Vec<JournalEntry> = plan
            .effects
            .iter()
            .map(|effect| {
                let charge = Change {
                    path: "/charged".to_owned(),
                    before: json!(budget),
                    after: json!(charged),
                };
                JournalEntry::of(effect, vec![], vec![charge])
            })
            .collect();
        sqlx::query(
            "INSERT INTO execution_audit (id, plan_id, capability_id, agent_id, journal, at)
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(&self.audit_id)
        .bind(self.stored.then_some(&plan.plan_id))
        .bind(self.capability.id())
        .bind(&self.agent_id)
        .bind(serde_json::to_string(&journal)?)
        .bind(ids::to_text(ids::now()))
        .execute(&mut *w.tx)
        .await?;
        if let Some(key) = &self.key {
            // A success is answered again to the same key; after a failure the key is free.
            let query = match answer {
                Ok(envelope) => sqlx::query(
                    "UPDATE invocations SET response = $1 WHERE agent_id = $2 AND idempotency_key = $3",
                )
                .bind(serde_json::to_string(envelope)?),
                Err(_) => sqlx::query(
                    "DELETE FROM invocations WHERE agent_id = $1 AND idempotency_key = $2",
                ),
            };
            query
                .bind(&self.agent_id)
                .bind(key)
                .execute(&mut *w.tx)
                .await?;
        }
        w.commit().await?;
        Ok(())
    }
}

const SETTLE_ATTEMPTS: u64 = 5;

/// The agent's answer: the envelope, or the error with the error contract the record keeps.
type Answer = Result<SuccessEnvelope, Box<(ApiError, ErrorEnvelope)>>;

fn credits(amount: Credits) -> Value {
    json!({"amount": amount, "currency": "credits"})
}

async fn record(
    w: &mut WriteTx<'_>,
    registry: &'static Registry,
    plan_id: &str,
    status: PlanStatus,
    execution: Option<&Value>,
) -> ApiResult<()> {
    let runner = execution
        .filter(|e| e["in_flight"] == true)
        .map(|_| w.instance().to_owned());
    sqlx::query("UPDATE plans SET status = $1, execution = $2, runner = $3 WHERE id = $4")
        .bind(plans::status_text(status))
        .bind(execution.map(Value::to_string))
        .bind(runner)
        .bind(plan_id)
        .execute(&mut *w.tx)
        .await?;
    queue::publish(&mut w.tx, registry, plan_id, EventKind::Updated).await?;
    Ok(())
}

/// The answer to a provider call the gateway stopped waiting for.
fn outcome_unknown() -> ApiError {
    let mut error = ApiError::new(
        ErrorCode::ProviderUnavailable,
        "The gateway stopped before the provider answered: whether the provider did the work is \
         unknown, so the reserved maximum stays charged and the plan does not run again.",
    )
    .with_details(json!({ "outcome": "unknown" }));
    error.retryable = Some(false);
    error
}

/// Plans whose provider call lost the gateway instance running it: recorded as failed, with the
/// reserved charge kept, and their idempotency keys freed. Answers how many. On SQLite, one
/// process serves the store, and calls this at its start, before it takes any invoke: every call
/// still in flight lost its runner. On PostgreSQL, every instance calls it at start and then in
/// its sweeps, and a call is orphaned once no connection bears its runner's name.
pub async fn recover_interrupted(
    store: &Store,
    registry: &'static Registry,
) -> anyhow::Result<u64> {
    let recovered = fail_in_flight(store, registry)
        .await
        .map_err(|e| anyhow::anyhow!("in-flight provider calls: {}", e.message))?;
    if recovered > 0 {
        tracing::warn!(
            recovered,
            "provider calls in flight at the last stop are failed"
        );
    }
    Ok(recovered)
}

async fn fail_in_flight(store: &Store, registry: &'static Registry) -> ApiResult<u64> {
    let orphaned = match store.dialect() {
        Dialect::Sqlite => format!(
            "{} = 'true'",
            store.dialect().json_flag("execution", "in_flight")
        ),
        Dialect::Postgres => "runner IS NOT NULL AND NOT EXISTS
             (SELECT 1 FROM pg_stat_activity WHERE application_name = plans.runner)"
            .to_owned(),
    };
    let select =
        format!("SELECT id, execution FROM plans WHERE status = 'executed' AND {orphaned}");
    // Looked for without the write lock first: on PostgreSQL every sweep asks.
    let seen: Vec<(String, String)> = sqlx::query_as(&select).fetch_all(store.pool()).await?;
    if seen.is_empty() {
        return Ok(0);
    }
    let mut w = store.write().await?;
    let in_flight: Vec<(String, String)> = sqlx::query_as(&select).fetch_all(&mut *w.tx).await?;
    for (id, execution) in &in_flight {
        let mut envelope = ErrorEnvelope::new(
            ErrorCode::ProviderUnavailable,
            "The gateway stopped while the provider call was in flight; the reserved maximum \
             stays charged, as the provider may have done the work.",
            json!({}),
            "trc_recovery",
        );
        envelope.error.retryable = false;
        let mut execution: serde_json::Value = serde_json::from_str(execution)?;
        execution["in_flight"] = json!(false);
        execution["result"] = serde_json::to_value(&envelope)?;
        sqlx::query(
            "UPDATE plans SET status = 'failed', execution = $1, runner = NULL WHERE id = $2",
        )
        .bind(execution.to_string())
        .bind(id)
        .execute(&mut *w.tx)
        .await?;
        sqlx::query("DELETE FROM invocations WHERE request_digest = $1 AND response = ''")
            .bind(format!("plan:{id}"))
            .execute(&mut *w.tx)
            .await?;
        queue::publish(&mut w.tx, registry, id, EventKind::Updated).await?;
    }
    w.commit().await?;
    Ok(in_flight.len() as u64)
}
