//! `GET /v1/events`: the queue as a server-sent event stream, resumable by `Last-Event-ID`.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::stream::{self, Stream};
use serde_json::json;
use tokio::sync::watch;

use crate::accounts::Approver;
use crate::error::ApiResult;
use crate::{events, AppState};

/// Events read from the store per wake-up.
const BATCH: i64 = 500;

struct Feed {
    state: Arc<AppState>,
    seen: i64,
    ready: VecDeque<Event>,
    commits: watch::Receiver<u64>,
}

pub async fn events(
    State(state): State<Arc<AppState>>,
    _approver: Approver,
    headers: HeaderMap,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    let commits = state.store.commits();
    let mut conn = state.store.pool().acquire().await?;
    let current = events::revision(&mut conn).await?;
    let last = headers
        .get("last-event-id")
        .map(|v| v.to_str().ok().and_then(|v| v.trim().parse::<i64>().ok()));
    let mut ready = VecDeque::new();
    let seen = match last {
        None => current,
        Some(Some(seen)) if events::can_resume(&mut conn, seen).await? => seen,
        Some(_) => {
            ready.push_back(resync(current));
            current
        }
    };
    drop(conn);
    let heartbeat = state.heartbeat;
    let feed = Feed {
        state,
        seen,
        ready,
        commits,
    };
    let stream = stream::unfold(feed, |mut feed| async move {
        loop {
            if let Some(event) = feed.ready.pop_front() {
                return Some((Ok(event), feed));
            }
            match next_events(&feed.state, feed.seen).await {
                Ok((seen, batch)) if seen > feed.seen => {
                    feed.seen = seen;
                    feed.ready.extend(batch);
                    continue;
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = ?e, "event stream ends");
                    return None;
                }
            }
            if feed.commits.changed().await.is_err() {
                return None;
            }
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(heartbeat).text("heartbeat")))
}

/// Tells a client to list the queue again: the log cannot bring it up to date.
fn resync(current: i64) -> Event {
    Event::default()
        .id(current.to_string())
        .event("resync")
        .data(json!({ "revision": current.to_string() }).to_string())
}

/// The events after `seen`, each with its plan's current summary, and the last revision read.
async fn next_events(state: &AppState, seen: i64) -> ApiResult<(i64, Vec<Event>)> {
    let mut conn = state.store.pool().begin().await?;
    // Fell behind what the log keeps (a slow reader, or a burst): start over from the present.
    if !events::can_resume(&mut conn, seen).await? {
        let current = events::revision(&mut conn).await?;
        return Ok((current.max(seen.saturating_add(1)), vec![resync(current)]));
    }
    // Each event carries its plan's summary as stored now: a reader that catches up sees where
    // every plan stands, not each step on the way.
    let rows: Vec<(i64, String, String)> = sqlx::query_as(
        "SELECT e.revision, e.kind, p.summary FROM plan_events e JOIN plans p ON p.id = e.plan_id
         WHERE e.revision > $1 AND p.summary IS NOT NULL ORDER BY e.revision LIMIT $2",
    )
    .bind(seen)
    .bind(BATCH)
    .fetch_all(&mut *conn)
    .await?;
    let mut last = seen;
    let mut out = Vec::with_capacity(rows.len());
    for (revision, kind, summary) in rows {
        last = revision;
        out.push(
            Event::default()
                .id(revision.to_string())
                .event(kind)
                .data(summary),
        );
    }
    Ok((last, out))
}
