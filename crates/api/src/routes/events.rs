//! `GET /v1/events`: the queue as a server-sent event stream, resumable by `Last-Event-ID`.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use countersign_engine::accounts::Approver;
use countersign_engine::approval::revocation;
use countersign_engine::execution::inflight::Slot;
use countersign_engine::queue::events::{self, Logged};
use countersign_engine::ApiError;
use futures_util::stream::{self, Stream};
use serde_json::json;
use tokio::sync::watch;

use crate::schemas::Refused;
use crate::{AppState, Auth, HttpResult};

/// How soon a stream whose approver was revoked in another process ends (one in this process is
/// woken by the revocation's commit).
const REVOCATION_CHECK: Duration = Duration::from_secs(1);

struct Feed {
    state: Arc<AppState>,
    /// The approver's place among their open streams, given back when the stream ends.
    _open: Slot,
    approver_id: String,
    seen: i64,
    ready: VecDeque<Event>,
    commits: watch::Receiver<u64>,
    /// Set when the gateway stops: the stream says so, and ends.
    draining: watch::Receiver<bool>,
    said_goodbye: bool,
}

/// The queue's changes as server-sent events, resumable with `Last-Event-ID`.
#[utoipa::path(get, path = "/v1/events",
    params(("Last-Event-ID" = Option<String>, Header)),
    responses((status = 200, content_type = "text/event-stream", description = "An event stream."), Refused))]
pub async fn events(
    State(state): State<Arc<AppState>>,
    Auth(approver): Auth<Approver>,
    headers: HeaderMap,
) -> HttpResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    let open = state.streams.enter(&approver.id)?;
    let commits = state.store.commits();
    let draining = state.shutdown.draining();
    // A header that is not text resumes nothing, like an id that is not one of ours.
    let last = headers
        .get("last-event-id")
        .map(|v| v.to_str().unwrap_or(""));
    let (seen, first) = events::start(&state.store, last)
        .await
        .map_err(ApiError::from)?;
    let heartbeat = state.heartbeat;
    let feed = Feed {
        state,
        _open: open,
        approver_id: approver.id,
        seen,
        ready: first.into_iter().map(event).collect(),
        commits,
        draining,
        said_goodbye: false,
    };
    let stream = stream::unfold(feed, |mut feed| async move {
        loop {
            if let Some(event) = feed.ready.pop_front() {
                return Some((Ok(event), feed));
            }
            if *feed.draining.borrow() {
                if feed.said_goodbye {
                    return None;
                }
                feed.said_goodbye = true;
                return Some((Ok(goodbye(feed.seen)), feed));
            }
            match events::after(&feed.state.store, feed.seen).await {
                Ok((seen, batch)) if seen > feed.seen => {
                    feed.seen = seen;
                    feed.ready.extend(batch.into_iter().map(event));
                    continue;
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = ?e, "event stream ends");
                    return None;
                }
            }
            tokio::select! {
                changed = feed.commits.changed() => if changed.is_err() { return None },
                _ = feed.draining.changed() => continue,
                () = tokio::time::sleep(REVOCATION_CHECK) => {}
            }
            // A revoked approver's stream ends: what it would tell is no longer theirs to see.
            let store = &feed.state.store;
            if !revocation::approver_active(store, &feed.approver_id)
                .await
                .unwrap_or(false)
            {
                return None;
            }
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(heartbeat).text("heartbeat")))
}

/// The last event of a stream whose gateway stops: reconnect in a second, with the last id seen,
/// to whichever instance answers (another behind the same address, or this one restarted).
fn goodbye(seen: i64) -> Event {
    Event::default()
        .event("shutdown")
        .retry(Duration::from_secs(1))
        .data(
            json!({ "reason": "the gateway is stopping", "revision": seen.to_string() })
                .to_string(),
        )
}

fn event(logged: Logged) -> Event {
    match logged {
        Logged::Change {
            revision,
            kind,
            summary,
        } => Event::default()
            .id(revision.to_string())
            .event(kind)
            .data(summary),
        // Tells a client to list the queue again: the log cannot bring it up to date.
        Logged::Resync { current } => Event::default()
            .id(current.to_string())
            .event("resync")
            .data(json!({ "revision": current.to_string() }).to_string()),
    }
}
