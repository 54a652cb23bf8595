//! What one agent may keep stored: live plans in the approval queue and subject rows. A preview
//! over a cap is refused with `quota_exceeded` before anything of it is written; the subject rows
//! of closed plans (expired, superseded, executed, rejected, failed) are swept in bounded passes
//! once the plan's lifetime is over, while the plan records stay. Until then a closed plan's pages
//! still serve what happened to it: the refresh that replaced it, the journal of its execution.

use countersign_proto::approvals::PlanStatus;
use countersign_proto::plan::Preview;
use countersign_proto::ErrorCode;
use serde_json::json;
use sqlx::AnyConnection;

use crate::accounts::limits::Limits;
use crate::plan::plans::StoredPlan;
use crate::{ids, Store};
use crate::{ApiError, ApiResult};

/// Subject rows deleted per sweep pass: a million rows take a minute of short passes, and the
/// writer is never held for long.
pub const SWEEP_BATCH: u64 = 20_000;

/// Plan statuses whose subject rows are no longer kept: [`crate::plan::plans::is_closed`]'s.
const CLOSED: &str = "('expired', 'superseded', 'executed', 'rejected', 'failed')";

fn exceeded(kind: &str, limit: u64, in_use: u64, message: String) -> ApiError {
    ApiError::new(ErrorCode::QuotaExceeded, message)
        .with_details(json!({"quota": kind, "limit": limit, "in_use": in_use}))
}

/// What a plan being replaced gives back to its agent's caps: its place in the queue (if it held
/// one), and its subject rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Freed {
    pub pending: u64,
    pub rows: u64,
}

impl Freed {
    /// What `plan` holds of its agent's caps now.
    pub fn by(plan: &StoredPlan, subject_rows: u64) -> Freed {
        let waiting = matches!(plan.status, PlanStatus::PendingApproval | PlanStatus::Stale)
            && plan.preview.expires_at > ids::now();
        Freed {
            pending: u64::from(waiting),
            rows: subject_rows,
        }
    }
}

async fn live_plans(conn: &mut AnyConnection, agent_id: &str) -> Result<u64, sqlx::Error> {
    let live: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM plans WHERE agent_id = $1
         AND status IN ('pending_approval', 'stale') AND expires_at > $2",
    )
    .bind(agent_id)
    .bind(ids::to_text(ids::now()))
    .fetch_one(&mut *conn)
    .await?;
    Ok(live.max(0) as u64)
}

async fn held_rows(conn: &mut AnyConnection, agent_id: &str) -> Result<u64, sqlx::Error> {
    let held: i64 = sqlx::query_scalar(
        "SELECT CAST(COALESCE(SUM(subject_rows), 0) AS BIGINT) FROM plans
         WHERE agent_id = $1 AND subject_rows > 0",
    )
    .bind(agent_id)
    .fetch_one(&mut *conn)
    .await?;
    Ok(held.max(0) as u64)
}

/// Refuses an agent that is at a cap already, before its request is evaluated: a preview of a
/// hundred thousand subjects is not worked out only to be refused. For capabilities whose plans
/// always wait for a person (a plan that would change nothing, which waits for nobody, is refused
/// too then: the agent learns so once it has room).
pub async fn at_cap(conn: &mut AnyConnection, agent_id: &str, limits: &Limits) -> ApiResult<()> {
    let live = live_plans(conn, agent_id).await?;
    let max = u64::from(limits.max_pending_plans);
    if live >= max {
        return Err(full_queue(max, live));
    }
    let held = held_rows(conn, agent_id).await?;
    if held >= limits.max_subject_rows {
        return Err(exceeded(
            "subject_rows",
            limits.max_subject_rows,
            held,
            format!(
                "This agent's plans hold {held} subject rows, the most they may; wait for older \
                 plans to close."
            ),
        ));
    }
    Ok(())
}

fn full_queue(max: u64, live: u64) -> ApiError {
    exceeded(
        "pending_plans",
        max,
        live,
        format!(
            "This agent has {live} plans waiting for approval, the most it may have; wait for \
             decisions or let plans expire."
        ),
    )
}

/// Refuses `preview` (with `new_rows` subject rows) if storing it would take its agent over a cap,
/// counting what the plan it replaces gives back.
pub async fn check(
    conn: &mut AnyConnection,
    preview: &Preview,
    new_rows: u64,
    limits: &Limits,
    freed: Freed,
) -> ApiResult<()> {
    let agent_id = &preview.caller.agent_id;
    if preview.would_require_approval {
        let live = live_plans(conn, agent_id)
            .await?
            .saturating_sub(freed.pending);
        let max = u64::from(limits.max_pending_plans);
        if live >= max {
            return Err(full_queue(max, live));
        }
    }
    if new_rows > 0 {
        let held = held_rows(conn, agent_id).await?.saturating_sub(freed.rows);
        let max = limits.max_subject_rows;
        if held.saturating_add(new_rows) > max {
            return Err(exceeded(
                "subject_rows",
                max,
                held,
                format!(
                    "This plan stores {new_rows} subject rows and this agent's plans hold {held} of \
                     at most {max}; narrow the request or wait for older plans to close."
                ),
            ));
        }
    }
    Ok(())
}

/// Deletes up to `budget` subject rows of closed plans, in one short write; the rows freed.
pub async fn sweep_subjects(store: &Store, budget: u64) -> ApiResult<u64> {
    // Asked on a read connection first, so an idle gateway never takes the writer for this.
    let now = ids::to_text(ids::now());
    let due: Option<String> = sqlx::query_scalar(&format!(
        "SELECT id FROM plans WHERE subject_rows > 0 AND status IN {CLOSED} AND expires_at < $1
         LIMIT 1"
    ))
    .bind(&now)
    .fetch_optional(store.pool())
    .await?;
    if due.is_none() {
        return Ok(0);
    }
    let mut w = store.write().await?;
    let mut freed = 0;
    while freed < budget {
        let next: Option<(String, i64)> = sqlx::query_as(&format!(
            "SELECT id, subject_rows FROM plans
             WHERE subject_rows > 0 AND status IN {CLOSED} AND expires_at < $1 LIMIT 1"
        ))
        .bind(&now)
        .fetch_optional(&mut *w.tx)
        .await?;
        let Some((plan_id, rows)) = next else {
            break;
        };
        let asked = budget - freed;
        let deleted = sqlx::query(
            "DELETE FROM plan_subjects WHERE (plan_id, effect_id, subject_id) IN
             (SELECT plan_id, effect_id, subject_id FROM plan_subjects WHERE plan_id = $1 LIMIT $2)",
        )
        .bind(&plan_id)
        .bind(i64::try_from(asked).unwrap_or(i64::MAX))
        .execute(&mut *w.tx)
        .await?
        .rows_affected();
        let left = if deleted < asked {
            0
        } else {
            (rows.max(0) as u64).saturating_sub(deleted)
        };
        // Marked at the first pass: from then on its pages answer that the subjects are gone,
        // never a part of them.
        sqlx::query(
            "UPDATE plans SET subject_rows = $1, subjects_swept_at = COALESCE(subjects_swept_at, $2)
             WHERE id = $3",
        )
        .bind(left as i64)
        .bind(&now)
        .bind(&plan_id)
        .execute(&mut *w.tx)
        .await?;
        freed += deleted;
    }
    w.commit().await?;
    Ok(freed)
}

/// Deletes every subject row of `plan_id` now (a plan replaced by its refresh), and marks them
/// swept: its pages answer from then on that the subjects are gone.
pub async fn free_subjects(conn: &mut AnyConnection, plan_id: &str) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM plan_subjects WHERE plan_id = $1")
        .bind(plan_id)
        .execute(&mut *conn)
        .await?;
    sqlx::query(
        "UPDATE plans SET subject_rows = 0, subjects_swept_at = COALESCE(subjects_swept_at, $1)
         WHERE id = $2",
    )
    .bind(ids::to_text(ids::now()))
    .bind(plan_id)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// When the subjects of `plan_id` were swept, if they were.
pub async fn swept_at(
    conn: &mut AnyConnection,
    plan_id: &str,
) -> Result<Option<String>, sqlx::Error> {
    sqlx::query_scalar::<_, Option<String>>("SELECT subjects_swept_at FROM plans WHERE id = $1")
        .bind(plan_id)
        .fetch_optional(&mut *conn)
        .await
        .map(Option::flatten)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_closed_statuses_are_the_same_in_sql_and_in_rust() {
        let all = [
            PlanStatus::PendingApproval,
            PlanStatus::Approved,
            PlanStatus::Rejected,
            PlanStatus::Executed,
            PlanStatus::Stale,
            PlanStatus::Expired,
            PlanStatus::Superseded,
            PlanStatus::Failed,
        ];
        for status in all {
            let quoted = format!("'{}'", crate::plan::plans::status_text(status));
            assert_eq!(
                CLOSED.contains(&quoted),
                crate::plan::plans::is_closed(status),
                "{quoted}"
            );
        }
    }
}
