//! What each tool does, through the same functions the HTTP routes call: a capability tool
//! previews and stops (seed 004: a preview is evidence for a decision, not permission to write);
//! `countersign_execute` invokes a plan; `countersign_wait` follows the store's commits until the
//! plan is decided.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use countersign_proto::approvals::{Approvals, PlanRecord, PlanStatus};
use countersign_proto::describe::DryRunMode;
use countersign_proto::envelope::SuccessEnvelope;
use countersign_proto::error::ErrorEnvelope;
use countersign_proto::plan::{DryRunRequest, InvokeRequest, Preview, Severity};
use countersign_proto::ErrorCode;
use rmcp::model::{CallToolResult, ContentBlock};
use serde::Deserialize;
use serde_json::{json, Value};

use countersign_api::AppState;
use countersign_engine::accounts::{self, Agent, Caller};
use countersign_engine::plan::dry_run::{self, DryRunAnswer};
use countersign_engine::{
    execution::invoke, ids, plan::plans, plan::reads, plan::rederive, ApiError, ApiResult,
    Capability,
};

use super::tools::{self, ArgsSchema, DEFAULT_WAIT_SECONDS, EXECUTE, WAIT};

/// Writes by another process on the same database (the HTTP gateway deciding a plan that a
/// stdio server waits for) send no commit notification here; this is how late they are seen.
const FOREIGN_WRITES_SEEN_WITHIN: Duration = Duration::from_secs(1);

/// A tool's answer: JSON for programs, and text for the model that reads it.
pub struct Answer {
    pub structured: Value,
    pub text: String,
}

/// What a capability tool came to: an answer, or a plan that waits for people, which each
/// client hears of as it declared it can (docs/mcp.md).
pub enum Called {
    Answer(Answer),
    Waiting(Waiting),
}

pub struct Waiting {
    pub plan: Box<Preview>,
    pub required: u32,
    /// The second round of a call whose first asked the client's user to open the plan.
    pub resumed: bool,
    /// How the plan was decided between the two rounds, as `countersign_wait` would say it.
    pub decided: Option<Answer>,
}

impl Waiting {
    /// The answer a client that takes no task reads: the plan, and how to wait for it (or, once
    /// it is decided, how it was).
    pub fn answer(self) -> Answer {
        if let Some(decided) = self.decided {
            return decided;
        }
        Answer {
            text: waiting_text(&self.plan, self.required),
            structured: json!({
                "status": "pending_approval",
                "plan_id": self.plan.plan_id,
                "expires_at": self.plan.expires_at,
                "approvals": {"required": self.required, "received": []},
                "next": [WAIT, EXECUTE],
                "plan": self.plan,
            }),
        }
    }
}

/// `answer` as a tool's result: the JSON as structured content, the text as its one block.
pub fn tool_result(answer: Answer) -> CallToolResult {
    let mut result = CallToolResult::structured(answer.structured);
    result.content = vec![ContentBlock::text(answer.text)];
    result
}

/// A refusal as a tool result in the protocol's error contract: `isError`, the error envelope as
/// structured content, `code: message` as its text.
pub fn refusal(error: ApiError, trace_id: &str) -> CallToolResult {
    let text = format!("{}: {}", error.code, error.message);
    let envelope = ErrorEnvelope::new(error.code, error.message, error.details, trace_id);
    let mut result = CallToolResult::structured_error(
        serde_json::to_value(envelope).unwrap_or_else(|_| Value::Object(Default::default())),
    );
    result.content = vec![ContentBlock::text(text)];
    result
}

impl From<Answer> for Called {
    fn from(answer: Answer) -> Called {
        Called::Answer(answer)
    }
}

pub async fn capability(
    state: &Arc<AppState>,
    agent: &Agent,
    capability: Capability,
    params: Value,
    trace_id: &str,
) -> ApiResult<Called> {
    let id = capability.id();
    if capability.describe().dry_run == DryRunMode::NotApplicable {
        let request = InvokeRequest {
            plan_id: None,
            params: Some(params),
            idempotency_key: None,
            observed: None,
        };
        return executed(invoke::run(&state.engine, id, trace_id, agent, request).await?)
            .map(Called::from);
    }
    let request = preview_request(params)?;
    let plan = match dry_run::run(state, id, agent, request).await? {
        DryRunAnswer::Plan(plan) => plan,
        DryRunAnswer::Standing {
            plan, approvals, ..
        } => return Ok(approved_by_standing(&plan, &approvals).into()),
        DryRunAnswer::Invalid(invalid) => {
            let message = invalid.violations.first().map_or_else(
                || "The params are invalid.".to_owned(),
                |v| v.message.clone(),
            );
            return Err(ApiError::new(ErrorCode::ValidationError, message)
                .with_details(json!({ "violations": invalid.violations })));
        }
        DryRunAnswer::Repeated(first) => {
            return Ok(Answer {
                text: format!("The first answer to this request: {first}"),
                structured: first,
            }
            .into())
        }
    };
    if !plan.executable {
        let mut refusal = rederive::blocked(&plan);
        refusal.details["plan_id"] = json!(plan.plan_id);
        return Err(refusal);
    }
    // Even a plan that needs nobody only runs when the agent, having read its derived effects
    // and warnings (a quota cut that blocks uploads elsewhere), asks for it.
    if !plan.would_require_approval {
        return Ok(Called::Answer(Answer {
            text: plan_text(
                &plan,
                format!(
                    "Previewed: plan {} needs no approval and expires at {}. Nothing has run; \
                     if these effects are what you want, call {EXECUTE} with this plan_id.",
                    plan.plan_id,
                    ids::to_text(plan.expires_at),
                ),
            ),
            structured: json!({
                "status": "approved",
                "plan_id": plan.plan_id,
                "expires_at": plan.expires_at,
                "approvals": {"required": 0, "received": []},
                "next": [EXECUTE],
                "plan": plan,
            }),
        }));
    }
    Ok(Called::Waiting(Waiting {
        plan,
        required: capability.describe().approval.required_approvals,
        resumed: false,
        decided: None,
    }))
}

/// The second round of a capability call whose first answered with a plan waiting and asked the
/// client's user to open it (`request_state` names the plan): that plan again, not a new one,
/// once it is the agent's, for this tool and these params, however it stands now.
pub async fn resume(
    state: &Arc<AppState>,
    agent: &Agent,
    capability: Capability,
    params: Value,
    plan_id: &str,
) -> ApiResult<Called> {
    let request = preview_request(params)?;
    let record = reads::plan(state, &Caller::Agent(agent.clone()), plan_id).await?;
    if record.plan.capability_id != capability.id() || record.plan.request.params != request.params
    {
        return Err(ApiError::validation(
            "",
            format!("The request state names plan {plan_id}, which is not this call's plan."),
        ));
    }
    let (plan, required) = (record.plan.clone(), record.approvals.required);
    let decided = match record.status {
        PlanStatus::PendingApproval => None,
        _ => Some(amended(state, &Caller::Agent(agent.clone()), record).await?),
    };
    Ok(Called::Waiting(Waiting {
        plan: Box::new(plan),
        required,
        resumed: true,
        decided,
    }))
}

#[derive(Deserialize)]
struct ExecuteArgs {
    plan_id: String,
    idempotency_key: Option<String>,
    /// What the agent observes now of resources only it can read (docs/agent-hook.md).
    observed: Option<std::collections::BTreeMap<String, String>>,
}

pub async fn execute(
    state: &Arc<AppState>,
    agent: &Agent,
    arguments: Value,
    trace_id: &str,
) -> ApiResult<Answer> {
    let args: ExecuteArgs = parse(tools::execute_schema(), arguments)?;
    let caller = Caller::Agent(agent.clone());
    let record = reads::plan(state, &caller, &args.plan_id).await?;
    let request = InvokeRequest {
        plan_id: Some(args.plan_id),
        params: None,
        idempotency_key: args.idempotency_key,
        observed: args.observed,
    };
    let capability = &record.plan.capability_id;
    executed(invoke::run(&state.engine, capability, trace_id, agent, request).await?)
}

#[derive(Deserialize)]
struct WaitArgs {
    plan_id: String,
    timeout_seconds: Option<u64>,
}

/// Blocks until the plan leaves `pending_approval`, the timeout passes, the client cancels or the
/// agent's token is revoked; a commit wakes it to look at this plan's status, and only a change
/// of it reads the plan again. An agent holds at most `max_waits` of these at once.
pub async fn wait(
    state: &Arc<AppState>,
    agent: &Agent,
    arguments: Value,
    cancelled: impl Future<Output = ()>,
) -> ApiResult<Answer> {
    let args: WaitArgs = parse(tools::wait_schema(), arguments)?;
    let timeout = Duration::from_secs(args.timeout_seconds.unwrap_or(DEFAULT_WAIT_SECONDS));
    let deadline = tokio::time::Instant::now() + timeout;
    let _open = state.waits.enter(&agent.id)?;
    let caller = Caller::Agent(agent.clone());
    let mut commits = state.store.commits();
    let mut draining = state.shutdown.draining();
    tokio::pin!(cancelled);
    let mut record = reads::plan(state, &caller, &args.plan_id).await?;
    loop {
        if record.status != PlanStatus::PendingApproval {
            return amended(state, &caller, record).await;
        }
        commits.mark_unchanged();
        tokio::select! {
            changed = commits.changed() => {
                if changed.is_err() {
                    return Ok(decided(&record, true));
                }
            }
            () = tokio::time::sleep(FOREIGN_WRITES_SEEN_WITHIN) => {}
            () = tokio::time::sleep_until(deadline) => return Ok(decided(&record, true)),
            () = &mut cancelled => return Ok(decided(&record, true)),
            // This instance stops: the agent asks again, and another one answers.
            _ = draining.wait_for(|d| *d) => return Ok(decided(&record, true)),
        }
        // Woken by any commit: the whole record is read again only when this plan moved.
        let (status, agent_active) = reads::glance(state, &args.plan_id).await?;
        if !agent_active {
            return Err(accounts::unknown_token());
        }
        if status != PlanStatus::PendingApproval
            || tokio::time::Instant::now() >= deadline
            || ids::now() > record.plan.expires_at
        {
            record = reads::plan(state, &caller, &args.plan_id).await?;
        }
    }
}

/// A decided plan's answer; for a plan an approver amended, the amended plan with who changed
/// what, which the agent waits on next.
pub async fn amended(
    state: &Arc<AppState>,
    caller: &Caller,
    record: PlanRecord,
) -> ApiResult<Answer> {
    let successor = match (&record.status, &record.superseded_by) {
        (PlanStatus::Superseded, Some(id)) => Some(reads::plan(state, caller, id).await?),
        _ => None,
    };
    let Some(successor) = successor.filter(|s| s.amendment.is_some()) else {
        return Ok(decided(&record, false));
    };
    let mut answer = decided(&record, false);
    let amendment = successor.amendment.as_ref().expect("filtered on it");
    let next = match successor.status {
        PlanStatus::PendingApproval => format!(
            "call {WAIT} with plan_id {} for its approval",
            successor.plan.plan_id
        ),
        PlanStatus::Approved => format!(
            "it is approved: call {EXECUTE} with plan_id {}",
            successor.plan.plan_id
        ),
        other => format!("it is {}", plans::status_text(other)),
    };
    answer.text = plan_text(
        &successor.plan,
        format!(
            "{} Plan {} was replaced by the amended plan {}; {next}. Do not execute {}.",
            amendment.summary, record.plan.plan_id, successor.plan.plan_id, record.plan.plan_id
        ),
    );
    answer.structured["amendment"] = json!(amendment);
    answer.structured["amended_plan"] = json!({
        "plan_id": successor.plan.plan_id,
        "status": successor.status,
        "plan": successor.plan,
    });
    Ok(answer)
}

fn parse<T: serde::de::DeserializeOwned>(schema: &ArgsSchema, arguments: Value) -> ApiResult<T> {
    let details = schema.violations(&arguments);
    if let Some(first) = details.first() {
        let mut error = ApiError::validation(&first.schema_pointer, first.message.clone());
        error.details["violations"][0]["details"] = json!(details);
        return Err(error);
    }
    serde_json::from_value(arguments).map_err(|e| ApiError::validation("", e.to_string()))
}

pub fn executed(envelope: SuccessEnvelope) -> ApiResult<Answer> {
    let mut text = envelope.content.clone();
    if let Some(plan_id) = envelope.metadata.get("plan_id").and_then(Value::as_str) {
        text.push_str(&format!(" (plan {plan_id})"));
    }
    if let Some(charged) = envelope.metadata.get("charged") {
        text.push_str(&format!(
            " Charged {} {}.",
            charged["amount"].as_str().unwrap_or("0"),
            charged["currency"].as_str().unwrap_or("credits")
        ));
    }
    Ok(Answer {
        structured: serde_json::to_value(&envelope)?,
        text,
    })
}

/// A capability tool's arguments as a preview request: the capability's params, and the two
/// reserved arguments every previewing tool takes beside them.
fn preview_request(mut arguments: Value) -> ApiResult<DryRunRequest> {
    let mut reserved = |name: &str| arguments.as_object_mut().and_then(|o| o.remove(name));
    let expected_revisions = reserved(tools::EXPECTED_REVISIONS)
        .map(serde_json::from_value)
        .transpose()
        .map_err(|_| {
            ApiError::validation(
                &format!("/{}", tools::EXPECTED_REVISIONS),
                "Expected revisions map each resource to the revision read, both as strings.",
            )
        })?;
    let idempotency_key = match reserved(tools::IDEMPOTENCY_KEY) {
        None => None,
        Some(Value::String(key)) => Some(key),
        Some(_) => {
            return Err(ApiError::validation(
                &format!("/{}", tools::IDEMPOTENCY_KEY),
                "The idempotency key is a string.",
            ))
        }
    };
    Ok(DryRunRequest {
        params: arguments,
        expected_revisions,
        idempotency_key,
    })
}

/// A plan standing approvals approved as it was stored: it runs when the agent asks.
fn approved_by_standing(plan: &Preview, approvals: &Approvals) -> Answer {
    let by: Vec<String> = approvals
        .received
        .iter()
        .filter_map(|a| {
            let id = a.standing_id.as_deref()?;
            Some(format!("{} (standing approval {id})", a.display_name))
        })
        .collect();
    Answer {
        text: plan_text(
            plan,
            format!(
                "Approved at once by {}: plan {} expires at {}. Nothing has run; call {EXECUTE} \
                 with this plan_id.",
                by.join(" and "),
                plan.plan_id,
                ids::to_text(plan.expires_at),
            ),
        ),
        structured: json!({
            "status": "approved",
            "plan_id": plan.plan_id,
            "expires_at": plan.expires_at,
            "approvals": approvals,
            "next": [EXECUTE],
            "plan": plan,
        }),
    }
}

fn waiting_text(plan: &Preview, required: u32) -> String {
    let approvals = if required == 1 {
        "1 approval".to_owned()
    } else {
        format!("{required} approvals")
    };
    plan_text(
        plan,
        format!(
            "Waiting for approval: plan {} needs {approvals}, expires at {}; call {WAIT}, then {EXECUTE} with this plan_id.",
            plan.plan_id,
            ids::to_text(plan.expires_at),
        ),
    )
}

/// `heading`, then the plan's effects, cost and validation, for the model to read.
pub fn plan_text(plan: &Preview, heading: String) -> String {
    let mut lines = vec![heading];
    lines.push("Effects:".to_owned());
    for effect in &plan.effects {
        let kind = serde_json::to_value(effect.kind).unwrap_or_default();
        lines.push(format!(
            "- {} {} {}: {}",
            effect.id,
            kind.as_str().unwrap_or("effect"),
            effect.resource,
            effect.description
        ));
    }
    let cost = &plan.estimated_cost;
    lines.push(format!(
        "Cost: {} to {} {}.",
        cost.amount_min, cost.amount_max, cost.currency
    ));
    for v in &plan.validation {
        let severity = match v.severity {
            Severity::Error => "Error",
            Severity::Warning => "Warning",
            Severity::Info => "Note",
        };
        lines.push(format!("{severity} ({}): {}", v.code, v.message));
    }
    lines.join("\n")
}

pub fn decided(record: &PlanRecord, timed_out: bool) -> Answer {
    let plan_id = &record.plan.plan_id;
    let approvals = &record.approvals;
    let approved = approvals
        .received
        .iter()
        .filter(|a| a.decision == countersign_proto::decision::Decision::Approve)
        .count();
    let text = match record.status {
        PlanStatus::PendingApproval => format!(
            "Plan {plan_id} is still waiting for approval ({approved} of {} so far); call {WAIT} again.",
            approvals.required
        ),
        PlanStatus::Approved => {
            format!("Plan {plan_id} is approved; call {EXECUTE} with this plan_id.")
        }
        PlanStatus::Rejected => format!("Plan {plan_id} was rejected; do not execute it."),
        PlanStatus::Stale => {
            let moved = record.stale.as_ref().map_or_else(String::new, |s| {
                s.moved
                    .iter()
                    .map(|m| format!("{} moved from {} to {}", m.resource, m.planned, m.current))
                    .collect::<Vec<_>>()
                    .join(", ")
            });
            format!("Plan {plan_id} is stale ({moved}); call the capability again for a fresh plan.")
        }
        other => format!(
            "Plan {plan_id} is {}; it will not run.",
            plans::status_text(other)
        ),
    };
    Answer {
        structured: json!({
            "plan_id": plan_id,
            "status": record.status,
            "decided": record.status != PlanStatus::PendingApproval,
            "timed_out": timed_out,
            "approvals": approvals,
            "stale": record.stale,
            "superseded_by": record.superseded_by,
        }),
        text,
    }
}
