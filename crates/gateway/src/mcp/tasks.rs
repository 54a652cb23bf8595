//! MCP tasks (the `io.modelcontextprotocol/tasks` extension, SEP-2663) for a client that declares
//! it: a capability call whose plan waits for people answers with a task, and the task is that
//! plan seen from the agent's side. Its id is the plan's id, and its state is read from the store
//! on each `tasks/get`, so any instance on the same database answers it. When the plan is
//! approved, the next `tasks/get` executes it as the agent (under an idempotency key of the
//! task's own, so a second look reads the first answer) and the task completes with seed 002's
//! envelope. Cancelling the task only stops the agent waiting: the plan stays as it is, and a
//! person may still decide it (docs/mcp.md).

use std::sync::Arc;

use countersign_proto::approvals::{Approvals, PlanRecord, PlanStatus};
use countersign_proto::decision::Decision;
use countersign_proto::plan::{InvokeRequest, Preview};
use countersign_proto::ErrorCode;
use rmcp::model::{
    CreateTaskResult, DetailedTask, GetTaskResult, JsonObject, Task, TaskPayload, TaskStatus,
};
use rmcp::ErrorData;
use serde_json::{json, Value};

use countersign_api::AppState;
use countersign_engine::accounts::{Agent, Caller};
use countersign_engine::execution::invoke;
use countersign_engine::plan::{plans, reads, tasks};
use countersign_engine::{ids, ApiError, ApiResult};

use super::calls;
use super::tools::{EXECUTE, WAIT};

/// How often a client should look: a decision is a person's, and seconds do not matter to it.
pub const POLL_INTERVAL_MS: u64 = 2000;

/// The task a call answers with, for `plan` as the store holds it now.
pub async fn created(
    state: &Arc<AppState>,
    agent: &Agent,
    plan: &Preview,
) -> ApiResult<CreateTaskResult> {
    let record = reads::plan(state, &Caller::Agent(agent.clone()), &plan.plan_id).await?;
    let task = base(&record, TaskStatus::Working).with_status_message(waits_on(&record));
    Ok(CreateTaskResult::new(task))
}

/// `tasks/get`: the task of the agent's plan `task_id`, executing the plan once it is approved.
pub async fn get(
    state: &Arc<AppState>,
    agent: &Agent,
    task_id: &str,
    trace_id: &str,
) -> Result<GetTaskResult, ErrorData> {
    let record = task_plan(state, agent, task_id).await?;
    let detailed = match tasks::cancelled_at(state, task_id)
        .await
        .map_err(internal)?
    {
        Some(at) => cancelled(&record, at),
        None => current(state, agent, record, trace_id)
            .await
            .map_err(internal)?,
    };
    Ok(GetTaskResult::new(detailed))
}

/// `tasks/cancel`: the agent stops waiting; the plan is left to its approvers. A task that has
/// ended already is not cancelled, and the error says how it ended.
pub async fn cancel(state: &Arc<AppState>, agent: &Agent, task_id: &str) -> Result<(), ErrorData> {
    let record = task_plan(state, agent, task_id).await?;
    if tasks::cancelled_at(state, task_id)
        .await
        .map_err(internal)?
        .is_none()
    {
        if let Some(ended) = ended(&record) {
            return Err(ErrorData::invalid_params(
                format!("Task {task_id} has ended ({ended}): there is nothing to cancel."),
                Some(json!({"plan_id": task_id, "status": record.status})),
            ));
        }
    }
    tasks::cancel(state, &agent.id, task_id)
        .await
        .map_err(internal)?;
    Ok(())
}

/// The agent's plan behind `task_id`; a plan of another agent, or none, is no task of its own.
async fn task_plan(
    state: &Arc<AppState>,
    agent: &Agent,
    task_id: &str,
) -> Result<PlanRecord, ErrorData> {
    match reads::plan(state, &Caller::Agent(agent.clone()), task_id).await {
        Ok(record) => Ok(record),
        Err(e) if e.code == ErrorCode::NotFound => Err(ErrorData::invalid_params(
            format!("There is no task {task_id}."),
            None,
        )),
        Err(e) => Err(internal(e)),
    }
}

fn internal(error: ApiError) -> ErrorData {
    ErrorData::internal_error(
        format!("{}: {}", error.code, error.message),
        Some(json!({"code": error.code})),
    )
}

/// A plan whose status ends its task without running it, as the task says so; `None` while it
/// may still run.
fn ended(record: &PlanRecord) -> Option<&'static str> {
    match record.status {
        PlanStatus::PendingApproval | PlanStatus::Approved => None,
        PlanStatus::Executed => Some("the plan was executed"),
        PlanStatus::Rejected => Some("the plan was rejected"),
        PlanStatus::Stale => Some("the plan is stale"),
        PlanStatus::Expired => Some("the plan expired"),
        PlanStatus::Superseded => Some("the plan was superseded"),
        PlanStatus::Failed => Some("the plan failed"),
    }
}

async fn current(
    state: &Arc<AppState>,
    agent: &Agent,
    record: PlanRecord,
    trace_id: &str,
) -> ApiResult<DetailedTask> {
    let plan_id = record.plan.plan_id.clone();
    let outcome = match record.status {
        PlanStatus::PendingApproval => {
            let message = waits_on(&record);
            return Ok(DetailedTask::new(
                base(&record, TaskStatus::Working).with_status_message(message),
                TaskPayload::Working,
            ));
        }
        // Executed by this task before: the same key answers what that execution answered.
        PlanStatus::Approved | PlanStatus::Executed => {
            let request = InvokeRequest {
                plan_id: Some(plan_id.clone()),
                params: None,
                idempotency_key: Some(format!("mcp-task:{plan_id}")),
                observed: None,
            };
            let capability = &record.plan.capability_id;
            match invoke::run(&state.engine, capability, trace_id, agent, request).await {
                Ok(envelope) => Ok(calls::executed(envelope)?),
                // Another look at this task is executing it now.
                Err(e)
                    if e.code == ErrorCode::PlanAlreadyExecuted
                        && e.message.contains("in flight") =>
                {
                    let task = base(&record, TaskStatus::Working)
                        .with_status_message(format!("Plan {plan_id} is approved and running."));
                    return Ok(DetailedTask::new(task, TaskPayload::Working));
                }
                Err(e) => Err(e),
            }
        }
        PlanStatus::Rejected => Err(rejected(&record)),
        PlanStatus::Superseded => {
            let answer =
                calls::amended(state, &Caller::Agent(agent.clone()), record.clone()).await?;
            Err(ApiError::new(ErrorCode::PlanNotPending, answer.text)
                .with_details(answer.structured))
        }
        _ => {
            let answer = calls::decided(&record, false);
            let code = match record.status {
                PlanStatus::Stale => ErrorCode::PlanStale,
                PlanStatus::Expired => ErrorCode::PlanExpired,
                _ => ErrorCode::PlanNotPending,
            };
            Err(ApiError::new(code, answer.text).with_details(answer.structured))
        }
    };
    let result = match outcome {
        Ok(answer) => calls::tool_result(answer),
        Err(error) => calls::refusal(error, trace_id),
    };
    let result = match serde_json::to_value(result)? {
        Value::Object(object) => object,
        _ => JsonObject::new(),
    };
    Ok(DetailedTask::new(
        base(&record, TaskStatus::Completed),
        TaskPayload::Completed { result },
    ))
}

fn rejected(record: &PlanRecord) -> ApiError {
    let plan_id = &record.plan.plan_id;
    let rejections: Vec<Value> = record
        .approvals
        .received
        .iter()
        .filter(|a| a.decision == Decision::Reject)
        .map(|a| json!({"approver": a.display_name, "reason": a.reason}))
        .collect();
    let by: Vec<String> = record
        .approvals
        .received
        .iter()
        .filter(|a| a.decision == Decision::Reject)
        .map(|a| match &a.reason {
            Some(reason) => format!("{} (\"{reason}\")", a.display_name),
            None => a.display_name.clone(),
        })
        .collect();
    let by = if by.is_empty() {
        // A policy that came into force after the plan was stored refused it.
        record.approvals.denied.join("; ")
    } else {
        by.join(", ")
    };
    ApiError::new(
        ErrorCode::PlanNotPending,
        format!("Plan {plan_id} was rejected by {by}; it will not run. Do not retry it unchanged."),
    )
    .with_details(json!({
        "plan_id": plan_id,
        "status": "rejected",
        "rejections": rejections,
        "denied": record.approvals.denied,
    }))
}

fn cancelled(record: &PlanRecord, at: chrono::DateTime<chrono::Utc>) -> DetailedTask {
    let plan_id = &record.plan.plan_id;
    let now = match record.status {
        PlanStatus::PendingApproval => "still waits for approval, and a person may still decide it",
        PlanStatus::Approved => "is approved, and has not run",
        _ => "was not changed by the cancellation",
    };
    let message = format!(
        "You cancelled this task at {}; that did not cancel plan {plan_id}, which {now} \
         ({}). {WAIT} and {EXECUTE} still reach it.",
        ids::to_text(at),
        plans::status_text(record.status),
    );
    let mut task = base(record, TaskStatus::Cancelled).with_status_message(message);
    task.last_updated_at = ids::to_text(at);
    DetailedTask::new(task, TaskPayload::Cancelled)
}

/// The task's fields every status shares. It lives as long as its plan's record, which the
/// store keeps; the time of its last change is its plan's last decision.
fn base(record: &PlanRecord, status: TaskStatus) -> Task {
    let plan = &record.plan;
    let last = record
        .approvals
        .received
        .iter()
        .map(|a| a.at)
        .chain([plan.created_at])
        .max()
        .unwrap_or(plan.created_at);
    Task::new(
        plan.plan_id.clone(),
        status,
        ids::to_text(plan.created_at),
        ids::to_text(last),
    )
    .with_poll_interval_ms(POLL_INTERVAL_MS)
}

/// "Plan pln_… waits on 2 of leads (1 received: Lena); it expires at …": who the plan waits on,
/// from the rules the gateway's policy set (or the count its capability asks for).
pub fn waits_on(record: &PlanRecord) -> String {
    let plan = &record.plan;
    format!(
        "Plan {} waits on {}; it expires at {}.",
        plan.plan_id,
        who(&record.approvals),
        ids::to_text(plan.expires_at)
    )
}

fn who(approvals: &Approvals) -> String {
    let approved: Vec<&str> = approvals
        .received
        .iter()
        .filter(|a| a.decision == Decision::Approve)
        .map(|a| a.display_name.as_str())
        .collect();
    let received = if approved.is_empty() {
        String::new()
    } else {
        format!(" ({} received: {})", approved.len(), approved.join(", "))
    };
    let open: Vec<String> = approvals
        .rules
        .iter()
        .filter(|r| r.missing > 0)
        .map(|r| {
            if !r.rule.teams.is_empty() {
                format!("{} of {}", r.missing, r.rule.teams.join(" or "))
            } else if !r.rule.people.is_empty() {
                format!("{} of {}", r.missing, r.rule.people.join(", "))
            } else {
                approvers(r.missing as usize)
            }
        })
        .collect();
    if !open.is_empty() {
        return format!("{}{received}", open.join(" and "));
    }
    let missing = (approvals.required as usize).saturating_sub(approved.len());
    format!("{}{received}", approvers(missing.max(1)))
}

fn approvers(count: usize) -> String {
    match count {
        1 => "1 approver".to_owned(),
        n => format!("{n} approvers"),
    }
}
