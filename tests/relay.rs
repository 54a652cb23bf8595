//! A relay between console and gateway: an HTTP proxy that records every request and who sent a
//! credential, and can rewrite, forge and lose what travels, as a party in the middle would. An
//! answer it leaves alone streams through (the event stream among them).

use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, IF_NONE_MATCH};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

/// A path (or the start of one) and what to do to the JSON that travels on it.
pub type Rewrite = Option<(&'static str, fn(&mut Value))>;

/// What the relay does to the traffic of one path.
#[derive(Default)]
pub struct Tamper {
    /// Rewrites the JSON request sent to this path.
    pub request: Rewrite,
    /// Rewrites the JSON answer of this path.
    pub answer: Rewrite,
    /// Answers this path itself (status, body), without asking the gateway.
    pub forged: Mutex<Option<(&'static str, u16, String)>>,
    /// Passes this path's request to the gateway, then loses its answer (a 502 instead).
    pub lost: Mutex<Option<&'static str>>,
}

struct RelayState {
    upstream: String,
    http: reqwest::Client,
    tamper: Tamper,
    /// Every request, in order.
    seen: Mutex<Vec<Seen>>,
}

struct Seen {
    method: String,
    path: String,
    authorized: bool,
}

/// A relay between console and gateway: an HTTP proxy that can rewrite and forge.
pub struct Relay {
    pub url: String,
    state: Arc<RelayState>,
}

impl Relay {
    pub async fn start(upstream: &str, tamper: Tamper) -> anyhow::Result<Relay> {
        let state = Arc::new(RelayState {
            upstream: upstream.to_owned(),
            http: reqwest::Client::new(),
            tamper,
            seen: Mutex::new(Vec::new()),
        });
        let router = axum::Router::new()
            .fallback(relay)
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        tokio::spawn(async move { axum::serve(listener, router).await });
        Ok(Relay { url, state })
    }

    pub fn forge(&self, path: &'static str, status: u16, body: &str) {
        *self.state.tamper.forged.lock().unwrap() = Some((path, status, body.to_owned()));
    }

    pub fn lose_answers(&self, path: &'static str) {
        *self.state.tamper.lost.lock().unwrap() = Some(path);
    }

    /// The paths of the requests that reached the relay with an `Authorization` header.
    pub fn authorized(&self) -> Vec<String> {
        let seen = self.state.seen.lock().unwrap();
        seen.iter()
            .filter(|s| s.authorized)
            .map(|s| s.path.clone())
            .collect()
    }

    /// Every request that reached the relay, as `METHOD /path` (no query), in order.
    pub fn requests(&self) -> Vec<String> {
        let seen = self.state.seen.lock().unwrap();
        seen.iter()
            .map(|s| format!("{} {}", s.method, s.path))
            .collect()
    }

    pub fn pass(&self) {
        *self.state.tamper.forged.lock().unwrap() = None;
        *self.state.tamper.lost.lock().unwrap() = None;
    }
}

fn applies(rule: Rewrite, path: &str) -> bool {
    rule.is_some_and(|(on, _)| path.starts_with(on))
}

fn rewritten(rule: Rewrite, path: &str, bytes: Vec<u8>) -> Vec<u8> {
    match rule {
        Some((on, rewrite)) if path.starts_with(on) => {
            let mut value: Value = serde_json::from_slice(&bytes).unwrap();
            rewrite(&mut value);
            serde_json::to_vec(&value).unwrap()
        }
        _ => bytes,
    }
}

async fn relay(State(relay): State<Arc<RelayState>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_owned();
    relay.seen.lock().unwrap().push(Seen {
        method: parts.method.to_string(),
        path: path.clone(),
        authorized: parts.headers.contains_key(AUTHORIZATION),
    });
    let forged = relay.tamper.forged.lock().unwrap().clone();
    if let Some((_, status, body)) = forged.filter(|(on, ..)| *on == path) {
        let status = StatusCode::from_u16(status).unwrap();
        return (status, [(CONTENT_TYPE, "application/json")], body).into_response();
    }
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap()
        .to_vec();
    let bytes = rewritten(relay.tamper.request, &path, bytes);
    let target = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut forwarded = relay
        .http
        .request(parts.method.clone(), format!("{}{target}", relay.upstream))
        .body(bytes);
    for name in [AUTHORIZATION, CONTENT_TYPE, IF_NONE_MATCH, ACCEPT] {
        if let Some(value) = parts.headers.get(&name) {
            forwarded = forwarded.header(name, value);
        }
    }
    let answer = forwarded.send().await.unwrap();
    if *relay.tamper.lost.lock().unwrap() == Some(path.as_str()) {
        drop(answer);
        let page = "<html>502 Bad gateway</html>";
        return (StatusCode::BAD_GATEWAY, [(CONTENT_TYPE, "text/html")], page).into_response();
    }
    let status = answer.status();
    if !(status.is_success() && applies(relay.tamper.answer, &path)) {
        let kind = answer.headers().get(CONTENT_TYPE).cloned();
        let chunks = futures_util::stream::unfold(answer, |mut answer| async move {
            answer
                .chunk()
                .await
                .transpose()
                .map(|chunk| (chunk, answer))
        });
        let mut passed = Response::new(Body::from_stream(chunks));
        *passed.status_mut() = status;
        if let Some(kind) = kind {
            passed.headers_mut().insert(CONTENT_TYPE, kind);
        }
        return passed;
    }
    let bytes = answer.bytes().await.unwrap().to_vec();
    let bytes = rewritten(relay.tamper.answer, &path, bytes);
    (status, [(CONTENT_TYPE, "application/json")], bytes).into_response()
}
