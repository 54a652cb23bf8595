//! Server-sent events read off a gateway's `/v1/events` response.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use std::sync::Arc;

use countersign_api::AppState;
use countersign_engine::{Engine, Limits, Store};
use http_body_util::BodyExt as _;
use tower::ServiceExt as _;

use super::Gateway;

/// Reads server-sent events off a response body.
pub struct Events {
    body: Body,
    buffer: String,
}

#[derive(Debug)]
pub struct Sse {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: String,
    /// The reconnection time the server asked for, in milliseconds.
    pub retry: Option<String>,
}

impl Events {
    pub async fn open(gw: &Gateway, token: &str, last_event_id: Option<&str>) -> Events {
        let mut request =
            Request::get("/v1/events").header("authorization", format!("Bearer {token}"));
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id);
        }
        let response = countersign_gateway::router(gw.state.clone())
            .oneshot(request.body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        Events {
            body: response.into_body(),
            buffer: String::new(),
        }
    }

    /// The stream of the gateway serving at `base` (another process).
    pub async fn open_at(base: &str, token: &str, last_event_id: Option<&str>) -> Events {
        let mut request = reqwest::Client::new()
            .get(format!("{base}/v1/events"))
            .bearer_auth(token);
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let chunks = futures_util::stream::unfold(response, |mut response| async move {
            match response.chunk().await {
                Ok(Some(chunk)) => Some((Ok::<_, reqwest::Error>(chunk), response)),
                Ok(None) | Err(_) => None,
            }
        });
        Events {
            body: Body::from_stream(chunks),
            buffer: String::new(),
        }
    }

    /// Whether the stream ends within `within`, whatever it sends before it does.
    pub async fn ends_within(mut self, within: Duration) -> bool {
        let to_the_end = async {
            while let Some(frame) = self.body.frame().await {
                if frame.is_err() {
                    return;
                }
            }
        };
        tokio::time::timeout(within, to_the_end).await.is_ok()
    }

    /// The next event (comments included as `event: None, data: ""` only if `comments`).
    pub async fn next(&mut self, comments: bool) -> Sse {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut sse = Sse {
                    id: None,
                    event: None,
                    data: String::new(),
                    retry: None,
                };
                let mut comment = false;
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        sse.id = Some(v.trim().to_owned());
                    } else if let Some(v) = line.strip_prefix("event:") {
                        sse.event = Some(v.trim().to_owned());
                    } else if let Some(v) = line.strip_prefix("data:") {
                        sse.data.push_str(v.trim());
                    } else if let Some(v) = line.strip_prefix("retry:") {
                        sse.retry = Some(v.trim().to_owned());
                    } else if line.starts_with(':') {
                        comment = true;
                    }
                }
                if comment && sse.event.is_none() && !comments {
                    continue;
                }
                return sse;
            }
            let frame = tokio::time::timeout(Duration::from_secs(10), self.body.frame())
                .await
                .expect("an event within 10 s")
                .expect("the stream stays open")
                .unwrap();
            if let Ok(data) = frame.into_data() {
                self.buffer.push_str(&String::from_utf8_lossy(&data));
            }
        }
    }
}

/// A gateway's state over `store` whose event streams send a heartbeat every `heartbeat`.
pub async fn beating(store: Store, heartbeat: Duration) -> Arc<AppState> {
    let registry = countersign_embedded::default_registry();
    let engine = Engine::start(store, "Test", Limits::default(), registry)
        .await
        .unwrap();
    AppState::with_heartbeat(engine, heartbeat)
}
