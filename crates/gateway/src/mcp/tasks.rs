//! MCP tasks (the `io.modelcontextprotocol/tasks` extension, SEP-2663) for a client that declares
//! it: a capability call whose plan waits for people answers with a task, and the task is that
//! plan seen from the agent's side. Its id is the plan's id, and its state is read from the store
//! on each `tasks/get`, so any instance on the same database answers it. When the plan is
//! approved, the next `tasks/get` executes it as the agent (under an idempotency key of the
//! task's own; the invoke checks again that a person's approval still counts and the plan is
//! current), and the task completes with the result the plan's record keeps. Cancelling the task
//! only stops the agent waiting: the plan stays as it is, and a person may still decide it
//! (docs/mcp.md).

use std::sync::Arc;

use countersign_proto::approvals::{Approvals, PlanRecord, PlanStatus};
use countersign_proto::decision::Decision;
use countersign_proto::envelope::SuccessEnvelope;
use countersign_proto::plan::InvokeRequest;
use countersign_proto::ErrorCode;
use rmcp::model::{
    CallToolResult, ContentBlock, CreateTaskResult, DetailedTask, GetTaskResult, JsonObject, Task,
    TaskPayload, TaskStatus,
};
use rmcp::ErrorData;
use serde_json::{json, Value};

use countersign_api::AppState;
use countersign_engine::accounts::{Agent, Caller};
use countersign_engine::execution::invoke;
use countersign_engine::plan::tasks::{self, Cancel};
use countersign_engine::plan::{plans, reads};
use countersign_engine::{ids, ApiError, ApiResult};

use super::calls;
use super::tools::{EXECUTE, WAIT};

/// How often a client should look: a decision is a person's, and seconds do not matter to it.
pub const POLL_INTERVAL_MS: u64 = 2000;

/// The task a call answers with for the agent's plan `plan_id`, recorded as a task.
pub async fn created(
    state: &Arc<AppState>,
    agent: &Agent,
    plan_id: &str,
) -> ApiResult<CreateTaskResult> {
    let task = tasks::open(state, &agent.id, plan_id).await?;
    let record = reads::plan(state, &Caller::Agent(agent.clone()), plan_id).await?;
    // A retried call of a task its agent cancelled meanwhile.
    if let Some(at) = task.cancelled_at {
        return Ok(CreateTaskResult::new(cancelled(&record, at).task));
    }
    let message = match record.status {
        PlanStatus::PendingApproval => waits_on(&record),
        other => format!(
            "Plan {plan_id} is {}; tasks/get answers with its result.",
            plans::status_text(other)
        ),
    };
    Ok(CreateTaskResult::new(
        base(&record).with_status_message(message),
    ))
}

/// `tasks/get`: the task of the agent's plan `task_id`, executing the plan once it is approved.
pub async fn get(
    state: &Arc<AppState>,
    agent: &Agent,
    task_id: &str,
    trace_id: &str,
) -> Result<GetTaskResult, ErrorData> {
    let task = task(state, agent, task_id).await?;
    let record = read(state, agent, task_id).await?;
    let detailed = match task.cancelled_at {
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
    let task = task(state, agent, task_id).await?;
    let record = read(state, agent, task_id).await?;
    // The record's status is the effective one (a plan past its expiry is expired); the store's
    // check under the writer closes the race with an execution.
    let open = matches!(
        record.status,
        PlanStatus::PendingApproval | PlanStatus::Approved
    );
    if record
        .execution
        .as_ref()
        .is_some_and(|e| e["in_flight"] == true)
    {
        return Err(ErrorData::invalid_params(
            format!("Plan {task_id} is running: a provider call under way cannot be stopped."),
            Some(json!({"plan_id": task_id, "running": true})),
        ));
    }
    let ended = if task.cancelled_at.is_none() && !open {
        Some(record.status)
    } else {
        match tasks::cancel(state, &agent.id, task_id)
            .await
            .map_err(internal)?
        {
            Cancel::Cancelled(_) => None,
            Cancel::Ended(status) => Some(status),
        }
    };
    match ended {
        None => Ok(()),
        Some(status) => Err(ErrorData::invalid_params(
            format!(
                "Task {task_id} has ended (its plan is {}): there is nothing to cancel.",
                plans::status_text(status)
            ),
            Some(json!({"plan_id": task_id, "status": status})),
        )),
    }
}

/// The agent's task `task_id`: a plan of its own that a task was answered for.
async fn task(
    state: &Arc<AppState>,
    agent: &Agent,
    task_id: &str,
) -> Result<tasks::Task, ErrorData> {
    tasks::get(state, &agent.id, task_id)
        .await
        .map_err(internal)?
        .ok_or_else(|| ErrorData::invalid_params(format!("There is no task {task_id}."), None))
}

async fn read(
    state: &Arc<AppState>,
    agent: &Agent,
    plan_id: &str,
) -> Result<PlanRecord, ErrorData> {
    reads::plan(state, &Caller::Agent(agent.clone()), plan_id)
        .await
        .map_err(internal)
}

fn internal(error: ApiError) -> ErrorData {
    ErrorData::internal_error(
        format!("{}: {}", error.code, error.message),
        Some(json!({"code": error.code})),
    )
}

fn working(record: &PlanRecord, message: String) -> DetailedTask {
    DetailedTask::new(
        base(record).with_status_message(message),
        TaskPayload::Working,
    )
}

async fn current(
    state: &Arc<AppState>,
    agent: &Agent,
    record: PlanRecord,
    trace_id: &str,
) -> ApiResult<DetailedTask> {
    if record.status == PlanStatus::PendingApproval {
        let message = waits_on(&record);
        return Ok(working(&record, message));
    }
    if record.status != PlanStatus::Approved {
        return ended(state, agent, &record, trace_id).await;
    }
    let plan_id = record.plan.plan_id.clone();
    let request = InvokeRequest {
        plan_id: Some(plan_id.clone()),
        params: None,
        idempotency_key: Some(tasks::key(&plan_id)),
        observed: None,
    };
    let capability = &record.plan.capability_id;
    let error = match invoke::run(&state.engine, capability, trace_id, agent, request).await {
        Ok(envelope) => return completed(&record, calls::tool_result(calls::executed(envelope)?)),
        Err(error) => error,
    };
    if error.details["in_flight"] == true {
        return Ok(working(
            &record,
            format!("Plan {plan_id} is approved and running."),
        ));
    }
    let now = reads::plan(state, &Caller::Agent(agent.clone()), &plan_id).await?;
    if let Some(at) = tasks::get(state, &agent.id, &plan_id)
        .await?
        .and_then(|t| t.cancelled_at)
    {
        return Ok(cancelled(&now, at));
    }
    // What a person can mend keeps the task waiting, and says why: a standing approval that
    // lapsed when it came to be used (the plan waits for people again), or too few credits.
    // Anything else ends it, so that no look calls a provider again or runs into the same
    // refusal until the plan expires: the agent reads the refusal, and may call again.
    let mendable = now.status == PlanStatus::PendingApproval
        || (now.status == PlanStatus::Approved && error.code == ErrorCode::BudgetExceeded);
    if mendable {
        let message = format!(
            "Plan {plan_id} did not run: {}: {}. It is {}.",
            error.code,
            error.message,
            plans::status_text(now.status)
        );
        return Ok(working(&now, message));
    }
    completed(&now, calls::refusal(error, trace_id))
}

/// The task of a plan that will not run from here: its result if it ran (by this task or by
/// `countersign_execute`), or why it will not.
async fn ended(
    state: &Arc<AppState>,
    agent: &Agent,
    record: &PlanRecord,
    trace_id: &str,
) -> ApiResult<DetailedTask> {
    let plan_id = &record.plan.plan_id;
    let execution = record.execution.as_ref();
    if execution.is_some_and(|e| e["in_flight"] == true) {
        return Ok(working(record, format!("Plan {plan_id} is running.")));
    }
    let refusal = match (record.status, execution.map(|e| &e["result"])) {
        (PlanStatus::Executed | PlanStatus::Failed, Some(result)) if result.is_object() => {
            return completed(record, recorded(result)?);
        }
        (PlanStatus::Rejected, _) => rejected(record),
        (PlanStatus::Superseded, _) => {
            let answer =
                calls::amended(state, &Caller::Agent(agent.clone()), record.clone()).await?;
            ApiError::new(ErrorCode::PlanNotPending, answer.text).with_details(answer.structured)
        }
        (status, _) => {
            let mut answer = calls::decided(record, false);
            let code = match status {
                PlanStatus::Stale => ErrorCode::PlanStale,
                PlanStatus::Expired => ErrorCode::PlanExpired,
                _ => ErrorCode::PlanNotPending,
            };
            // Where an invoke's `plan_stale` says what moved.
            if let Some(stale) = &record.stale {
                answer.structured["moved"] = json!(stale.moved);
            }
            ApiError::new(code, answer.text).with_details(answer.structured)
        }
    };
    completed(record, calls::refusal(refusal, trace_id))
}

fn completed(record: &PlanRecord, result: CallToolResult) -> ApiResult<DetailedTask> {
    let result = match serde_json::to_value(result)? {
        Value::Object(object) => object,
        _ => JsonObject::new(),
    };
    Ok(DetailedTask::new(
        base(record),
        TaskPayload::Completed { result },
    ))
}

/// The envelope an execution answered, as the plan's record keeps it, as a tool result.
fn recorded(result: &Value) -> ApiResult<CallToolResult> {
    if result["success"] == true {
        let envelope: SuccessEnvelope = serde_json::from_value(result.clone())?;
        return Ok(calls::tool_result(calls::executed(envelope)?));
    }
    let error = &result["error"];
    let text = format!(
        "{}: {}",
        error["code"].as_str().unwrap_or("failed"),
        error["message"].as_str().unwrap_or("the execution failed")
    );
    let mut refused = CallToolResult::structured_error(result.clone());
    refused.content = vec![ContentBlock::text(text)];
    Ok(refused)
}

fn rejected(record: &PlanRecord) -> ApiError {
    let plan_id = &record.plan.plan_id;
    let rejections: Vec<_> = record
        .approvals
        .received
        .iter()
        .filter(|a| a.decision == Decision::Reject)
        .collect();
    let by: Vec<String> = rejections
        .iter()
        .map(|a| match &a.reason {
            Some(reason) => format!("{} (\"{reason}\")", a.display_name),
            None => a.display_name.clone(),
        })
        .chain(record.approvals.denied.iter().cloned())
        .collect();
    let by = if by.is_empty() {
        "its approvers".to_owned()
    } else {
        by.join(", ")
    };
    let rejections: Vec<Value> = rejections
        .iter()
        .map(|a| json!({"approver": a.display_name, "reason": a.reason}))
        .collect();
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
    let mut task = base(record).with_status_message(message);
    task.last_updated_at = ids::to_text(at);
    DetailedTask::new(task, TaskPayload::Cancelled)
}

/// The task's fields every status shares (its status is set from the payload it is sent with).
/// It lives as long as its plan's record, which the store keeps; its last change is its plan's
/// last decision.
fn base(record: &PlanRecord) -> Task {
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
        TaskStatus::Working,
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

#[cfg(test)]
mod tests {
    use countersign_proto::approvals::ApprovalEntry;
    use countersign_proto::rules::{Rule, RuleStatus};
    use serde_json::json;

    use super::*;

    fn rule(id: &str, count: u32, teams: &[&str], met_by: &[&str]) -> RuleStatus {
        let rule: Rule = serde_json::from_value(json!({
            "id": id, "description": id, "count": count, "teams": teams,
        }))
        .unwrap();
        RuleStatus {
            rule,
            met_by: met_by.iter().map(|m| (*m).to_owned()).collect(),
            missing: count.saturating_sub(met_by.len() as u32),
            escalated_at: None,
            excludes_team: None,
        }
    }

    fn approved_by(name: &str) -> ApprovalEntry {
        ApprovalEntry {
            approver_id: format!("apr_{name}"),
            display_name: name.to_owned(),
            decision: Decision::Approve,
            at: ids::now(),
            reason: None,
            standing_id: None,
        }
    }

    #[test]
    fn a_task_says_whom_its_plan_waits_on() {
        let mut approvals = Approvals {
            required: 3,
            received: vec![approved_by("Lena")],
            rules: vec![
                rule("leads", 2, &["leads"], &["apr_Lena"]),
                rule("finance", 1, &["finance", "audit"], &[]),
            ],
            denied: vec![],
            requested_by: None,
        };
        assert_eq!(
            who(&approvals),
            "1 of leads and 1 of finance or audit (1 received: Lena)"
        );
        approvals.rules.clear();
        assert_eq!(who(&approvals), "2 approvers (1 received: Lena)");
        approvals.received.clear();
        approvals.required = 1;
        assert_eq!(who(&approvals), "1 approver");
    }
}
