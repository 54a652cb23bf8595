//! The queue's change log. Every change a console should see is a row; its revision is the SSE
//! event id and the highest one is the queue revision.

use sqlx::AnyConnection;

use crate::{ids, Store};

/// Events kept for `Last-Event-ID` resumes; a client further behind is told to resync.
pub const RETAINED: i64 = 10_000;

/// The log is trimmed once per this many events, not at each: a trim is a round trip to a
/// PostgreSQL server on every write, and the log may hold this many beyond [`RETAINED`].
const TRIM_EVERY: i64 = 100;

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
    if revision % TRIM_EVERY == 0 {
        sqlx::query("DELETE FROM plan_events WHERE revision <= $1")
            .bind(revision - RETAINED)
            .execute(&mut *conn)
            .await?;
    }
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

/// What an event stream sends next: a logged change with its plan's summary as stored now, or
/// the word that the log cannot bring the reader up to date.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Logged {
    Change {
        revision: i64,
        kind: String,
        summary: String,
    },
    Resync {
        current: i64,
    },
}

/// Events read from the store per wake-up.
const BATCH: i64 = 500;

/// Where a stream starts: after the present, or after `last_event_id` when the log still holds
/// what followed it; a resync first when it does not (or the id is not one of ours).
pub async fn start(
    store: &Store,
    last_event_id: Option<&str>,
) -> Result<(i64, Option<Logged>), sqlx::Error> {
    let mut conn = store.pool().acquire().await?;
    let current = revision(&mut conn).await?;
    Ok(match last_event_id.map(|v| v.trim().parse::<i64>().ok()) {
        None => (current, None),
        Some(Some(seen)) if can_resume(&mut conn, seen).await? => (seen, None),
        Some(_) => (current, Some(Logged::Resync { current })),
    })
}

/// The changes after `seen`, and the last revision read. Each carries its plan's summary as
/// stored now: a reader that catches up sees where every plan stands, not each step on the way.
pub async fn after(store: &Store, seen: i64) -> Result<(i64, Vec<Logged>), sqlx::Error> {
    let mut conn = store.snapshot().await?;
    // Fell behind what the log keeps (a slow reader, or a burst): start over from the present.
    if !can_resume(&mut conn, seen).await? {
        let current = revision(&mut conn).await?;
        return Ok((
            current.max(seen.saturating_add(1)),
            vec![Logged::Resync { current }],
        ));
    }
    let rows: Vec<(i64, String, String)> = sqlx::query_as(
        "SELECT e.revision, e.kind, p.summary FROM plan_events e JOIN plans p ON p.id = e.plan_id
         WHERE e.revision > $1 AND p.summary IS NOT NULL ORDER BY e.revision LIMIT $2",
    )
    .bind(seen)
    .bind(BATCH)
    .fetch_all(&mut *conn)
    .await?;
    let last = rows.last().map_or(seen, |(revision, _, _)| *revision);
    let changes = rows
        .into_iter()
        .map(|(revision, kind, summary)| Logged::Change {
            revision,
            kind,
            summary,
        })
        .collect();
    Ok((last, changes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_log_keeps_what_resumes_need_and_is_trimmed_beyond_it() {
        // On PostgreSQL too in its pass: the trim is a statement of each dialect's.
        let store = crate::store::for_test().await;
        assert_eq!(
            store.dialect() == crate::store::Dialect::Postgres,
            std::env::var_os("COUNTERSIGN_TEST_POSTGRES").is_some()
        );
        let mut w = store.write().await.unwrap();
        let total = RETAINED + 2 * TRIM_EVERY + 7;
        for _ in 0..total {
            record(&mut w.tx, "plan_x", EventKind::Updated)
                .await
                .unwrap();
        }
        let (oldest, newest): (i64, i64) =
            sqlx::query_as("SELECT MIN(revision), MAX(revision) FROM plan_events")
                .fetch_one(&mut *w.tx)
                .await
                .unwrap();
        assert_eq!(newest, total);
        let kept = newest - oldest + 1;
        assert!(kept >= RETAINED, "only {kept} events kept");
        assert!(
            kept < RETAINED + TRIM_EVERY,
            "{kept} events kept: never trimmed"
        );
        assert!(can_resume(&mut w.tx, newest - RETAINED).await.unwrap());
    }
}
