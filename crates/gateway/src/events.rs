//! The queue's change log. Every change a console should see is a row; its revision is the SSE
//! event id and the highest one is the queue revision.

use sqlx::AnyConnection;

use crate::ids;

/// Events kept for `Last-Event-ID` resumes; a client further behind is told to resync.
pub const RETAINED: i64 = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    Created,
    Updated,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Created => "plan.created",
            EventKind::Updated => "plan.updated",
        }
    }
}

pub async fn record(
    conn: &mut AnyConnection,
    plan_id: &str,
    kind: EventKind,
) -> Result<i64, sqlx::Error> {
    let revision: i64 = sqlx::query_scalar(
        "INSERT INTO plan_events (plan_id, kind, at) VALUES ($1, $2, $3) RETURNING revision",
    )
    .bind(plan_id)
    .bind(kind.as_str())
    .bind(ids::to_text(ids::now()))
    .fetch_one(&mut *conn)
    .await?;
    sqlx::query("DELETE FROM plan_events WHERE revision <= $1")
        .bind(revision - RETAINED)
        .execute(&mut *conn)
        .await?;
    Ok(revision)
}

/// The queue revision: 0 before anything happened.
pub async fn revision(conn: &mut AnyConnection) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT COALESCE(MAX(revision), 0) FROM plan_events")
        .fetch_one(conn)
        .await
}

/// Whether a client that saw `revision` can resume from the log.
pub async fn can_resume(conn: &mut AnyConnection, seen: i64) -> Result<bool, sqlx::Error> {
    let (oldest, newest): (Option<i64>, Option<i64>) =
        sqlx::query_as("SELECT MIN(revision), MAX(revision) FROM plan_events")
            .fetch_one(conn)
            .await?;
    Ok(match (oldest, newest) {
        (Some(oldest), Some(newest)) => seen.saturating_add(1) >= oldest && seen <= newest,
        _ => seen == 0,
    })
}
