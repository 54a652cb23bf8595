//! An agent's MCP task on one of its plans (docs/mcp.md). The task is the plan seen from the
//! agent's side, so all it adds is whether the agent stopped waiting: cancelling a task never
//! touches the plan, which a person may still decide.

use chrono::{DateTime, Utc};

use crate::plan::reads::no_such_plan;
use crate::{ids, ApiResult, Engine};

/// Records that `agent_id` stopped waiting on its plan `plan_id`; the first cancellation's time
/// stays. Another agent's plan answers as one that is not there.
pub async fn cancel(engine: &Engine, agent_id: &str, plan_id: &str) -> ApiResult<DateTime<Utc>> {
    let mut w = engine.store.write().await?;
    let at: Option<String> = sqlx::query_scalar(
        "UPDATE plans SET task_cancelled_at = COALESCE(task_cancelled_at, $1)
         WHERE id = $2 AND agent_id = $3 RETURNING task_cancelled_at",
    )
    .bind(ids::to_text(ids::now()))
    .bind(plan_id)
    .bind(agent_id)
    .fetch_optional(&mut *w.tx)
    .await?
    .flatten();
    let at = at.ok_or_else(no_such_plan)?;
    w.commit().await?;
    Ok(ids::from_text(&at)?)
}

/// When the agent cancelled its task on `plan_id`, if it did.
pub async fn cancelled_at(engine: &Engine, plan_id: &str) -> ApiResult<Option<DateTime<Utc>>> {
    let at: Option<Option<String>> =
        sqlx::query_scalar("SELECT task_cancelled_at FROM plans WHERE id = $1")
            .bind(plan_id)
            .fetch_optional(engine.store.pool())
            .await?;
    Ok(at.flatten().as_deref().map(ids::from_text).transpose()?)
}
