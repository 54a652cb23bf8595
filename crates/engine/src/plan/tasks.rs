//! An agent's MCP task on one of its plans (docs/mcp.md). The task is the plan seen from the
//! agent's side, so all it adds is that a task was answered for the plan (only such a plan is a
//! task: `tasks/get` runs no other) and whether the agent stopped waiting. Cancelling a task
//! never touches the plan, which a person may still decide.

use chrono::{DateTime, Utc};
use countersign_proto::approvals::PlanStatus;
use sqlx::AnyConnection;

use crate::plan::plans;
use crate::plan::reads::no_such_plan;
use crate::{ids, ApiResult, Engine};

/// What the store knows of an agent's task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Task {
    pub cancelled_at: Option<DateTime<Utc>>,
}

/// A cancellation, or why there was nothing to cancel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cancel {
    Cancelled(DateTime<Utc>),
    /// The plan left the statuses in which it may still run, so its task has ended.
    Ended(PlanStatus),
}

/// The idempotency key a task's own execution of its plan runs under: a second look reads the
/// first one's answer, and invoke knows the call for a task's.
pub fn key(plan_id: &str) -> String {
    format!("mcp-task:{plan_id}")
}

/// Whether the task on `plan_id` was cancelled, read in the caller's transaction: invoke asks
/// under the writer, so a cancel that landed after a look read the task still stops the run.
pub async fn cancelled_in(conn: &mut AnyConnection, plan_id: &str) -> ApiResult<bool> {
    let at: Option<Option<String>> =
        sqlx::query_scalar("SELECT task_cancelled_at FROM plans WHERE id = $1")
            .bind(plan_id)
            .fetch_optional(&mut *conn)
            .await?;
    Ok(at.flatten().is_some())
}

/// Records that a task was answered for `agent_id`'s plan `plan_id`, and answers the task as it
/// stands (a retried call may find it cancelled).
pub async fn open(engine: &Engine, agent_id: &str, plan_id: &str) -> ApiResult<Task> {
    let mut w = engine.store.write().await?;
    let cancelled: Option<Option<String>> = sqlx::query_scalar(
        "UPDATE plans SET task_opened_at = COALESCE(task_opened_at, $1)
         WHERE id = $2 AND agent_id = $3 RETURNING task_cancelled_at",
    )
    .bind(ids::to_text(ids::now()))
    .bind(plan_id)
    .bind(agent_id)
    .fetch_optional(&mut *w.tx)
    .await?;
    let cancelled = cancelled.ok_or_else(no_such_plan)?;
    w.commit().await?;
    Ok(Task {
        cancelled_at: cancelled.as_deref().map(ids::from_text).transpose()?,
    })
}

/// `agent_id`'s task on `plan_id`; `None` when no task was answered for that plan of theirs.
pub async fn get(engine: &Engine, agent_id: &str, plan_id: &str) -> ApiResult<Option<Task>> {
    let row: Option<(Option<String>,)> = sqlx::query_as(
        "SELECT task_cancelled_at FROM plans
         WHERE id = $1 AND agent_id = $2 AND task_opened_at IS NOT NULL",
    )
    .bind(plan_id)
    .bind(agent_id)
    .fetch_optional(engine.store.pool())
    .await?;
    row.map(|(cancelled,)| {
        Ok(Task {
            cancelled_at: cancelled.as_deref().map(ids::from_text).transpose()?,
        })
    })
    .transpose()
}

/// Records that `agent_id` stopped waiting on its task `plan_id`, under the writer, so a plan
/// that an execution has just closed is not cancelled after the fact; the first cancellation's
/// time stays.
pub async fn cancel(engine: &Engine, agent_id: &str, plan_id: &str) -> ApiResult<Cancel> {
    let mut w = engine.store.write().await?;
    let at: Option<Option<String>> = sqlx::query_scalar(
        "UPDATE plans SET task_cancelled_at = COALESCE(task_cancelled_at, $1)
         WHERE id = $2 AND agent_id = $3 AND task_opened_at IS NOT NULL
           AND (task_cancelled_at IS NOT NULL OR status IN ('pending_approval', 'approved'))
         RETURNING task_cancelled_at",
    )
    .bind(ids::to_text(ids::now()))
    .bind(plan_id)
    .bind(agent_id)
    .fetch_optional(&mut *w.tx)
    .await?;
    if let Some(at) = at.flatten() {
        w.commit().await?;
        return Ok(Cancel::Cancelled(ids::from_text(&at)?));
    }
    let status: Option<String> = sqlx::query_scalar(
        "SELECT status FROM plans WHERE id = $1 AND agent_id = $2 AND task_opened_at IS NOT NULL",
    )
    .bind(plan_id)
    .bind(agent_id)
    .fetch_optional(&mut *w.tx)
    .await?;
    let status = status.ok_or_else(no_such_plan)?;
    Ok(Cancel::Ended(plans::parse_status(&status)))
}
