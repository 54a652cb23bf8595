//! The gateway's HTTP API: the axum router `app(state)` over the engine, bearer-token auth,
//! per-caller rate limits, the error contract of seed 002 on every answer, and the OpenAPI
//! description of it all. Each handler is one call of an engine function.
//!
//! It depends on the engine and the pack interface, and never on MCP, SMTP, TLS or any pack:
//! the server composes those around it, and the desktop's embedded demo serves it alone.

mod auth;
mod error;
pub mod observe;
pub mod openapi;
mod routes;
mod schemas;
pub mod throttle;

use std::ops::Deref;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;
use countersign_engine::accounts::Caller;
use countersign_engine::execution::inflight::InFlight;
use countersign_engine::store::recent::Recent;
use countersign_engine::Engine;

pub use auth::{bearer, resolved, Auth};
pub use error::{respond, Body, HttpError, HttpResult, TraceId};
pub use throttle::Throttle;

/// Request bodies above this are refused with `payload_too_large` (PROTOCOL section 4).
pub const BODY_LIMIT: usize = 1024 * 1024;

/// The engine, and what serving it over HTTP adds.
pub struct AppState {
    pub engine: Arc<Engine>,
    /// Seconds a console should wait between polls of the approval queue.
    pub poll_interval: u32,
    /// How often an idle event stream says it is alive.
    pub heartbeat: Duration,
    pub throttle: Throttle,
    /// Event streams open, per approver.
    pub streams: Arc<InFlight>,
    /// MCP waits open, per agent: here rather than in the MCP service, so that every router made
    /// over this state counts them together.
    pub waits: Arc<InFlight>,
    /// The OpenAPI description as served, made once.
    openapi: OnceLock<String>,
    /// Callers found for token hashes, served again to reads (`throttle::limit`).
    pub callers: Recent<[u8; 32], Caller>,
    /// The queue's revision, which a conditional poll compares (`routes::approver`).
    pub revision: Recent<(), i64>,
}

/// How long a caller found for a token is served again to a read: a token revoked by another
/// process (the admin commands on a SQLite store) reads for at most this long; a write always
/// asks the store, and a revocation in this process, or another instance's, is seen at once.
pub const CALLER_MAX_AGE: Duration = Duration::from_secs(1);
/// How long the queue's revision is compared without reading it again, when nothing committed.
pub const REVISION_MAX_AGE: Duration = Duration::from_millis(100);
/// Token hashes kept at once.
const CALLERS_KEPT: usize = 10_000;

/// The HTTP state reads as the engine it serves.
impl Deref for AppState {
    type Target = Engine;

    fn deref(&self) -> &Engine {
        &self.engine
    }
}

impl AppState {
    /// The state for `engine`, with rate limits from its limits, a 5 s poll interval and a 15 s
    /// heartbeat.
    pub fn new(engine: Arc<Engine>) -> Arc<AppState> {
        AppState::with_heartbeat(engine, Duration::from_secs(15))
    }

    /// [`AppState::new`] whose event streams say they are alive every `heartbeat`. Idle rate
    /// buckets are forgotten for as long as the state lives.
    pub fn with_heartbeat(engine: Arc<Engine>, heartbeat: Duration) -> Arc<AppState> {
        let state = Arc::new(AppState {
            throttle: Throttle::new(&engine.limits),
            callers: Recent::new(&engine.store, CALLER_MAX_AGE, CALLERS_KEPT),
            revision: Recent::new(&engine.store, REVISION_MAX_AGE, 1),
            streams: InFlight::new("event streams", engine.limits.max_streams),
            waits: InFlight::new("waits", engine.limits.max_waits),
            engine,
            poll_interval: 5,
            heartbeat,
            openapi: OnceLock::new(),
        });
        let weak: Weak<AppState> = Arc::downgrade(&state);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                let Some(state) = weak.upgrade() else {
                    return;
                };
                state.throttle.forget_idle();
            }
        });
        state
    }
}

/// `GET /metrics` alone, outside the limits like the probes: beside the API, or on a listener of
/// its own (the server's `metrics_addr`). Recording starts when this is made.
pub fn metrics(state: Arc<AppState>) -> Router {
    observe::install();
    Router::new()
        .route("/metrics", get(observe::serve))
        .with_state(state)
}

/// The HTTP API.
pub fn app(state: Arc<AppState>) -> Router {
    app_with(state, Router::new())
}

/// The HTTP API with `more` routes beside it (the server's `/mcp`), behind the same limits,
/// trace ids and error contract.
pub fn app_with(state: Arc<AppState>, more: Router<Arc<AppState>>) -> Router {
    use routes::{
        agent, approver, decisions, events, health, invoke, mail, plans, standing, stats,
    };
    Router::new()
        .route("/v1/gateway", get(agent::gateway))
        .route("/v1/capabilities", get(agent::capabilities))
        .route("/v1/capabilities/{id}", get(agent::describe))
        .route("/v1/capabilities/{id}/dry_run", post(agent::dry_run))
        .route("/v1/capabilities/{id}/invoke", post(invoke::invoke))
        .route("/v1/gateway/identity", post(approver::identity))
        .route("/v1/approvers/enroll", post(approver::enroll))
        .route("/v1/approvers/enroll/bound", post(approver::enroll_bound))
        .route(
            "/v1/approvers/keys",
            post(approver::rotate_key).get(standing::keys),
        )
        .route("/v1/approvers/me", get(approver::me))
        .route("/v1/agents/{id}/wallet", get(approver::wallet))
        .route("/v1/approvals", get(approver::approvals))
        .route("/v1/plans/{id}", get(plans::plan))
        .route("/v1/plans/{id}/decisions", post(decisions::decide))
        .route("/v1/plans/{id}/refresh", post(plans::refresh))
        .route("/v1/plans/{id}/amend", post(plans::amend))
        .route("/v1/plans/{id}/mail/{message}", post(mail::remedy))
        .route("/v1/standing", post(standing::create).get(standing::list))
        .route("/v1/standing/{id}/revoke", post(standing::revoke))
        .route(
            "/v1/plans/{id}/effects/{effect}/subjects",
            get(plans::subjects),
        )
        .route("/v1/events", get(events::events))
        .route("/v1/stats", get(stats::stats))
        .route("/v1/audit", get(plans::audit))
        .route("/v1/openapi.json", get(openapi::serve))
        .merge(more)
        .fallback(error::fallback)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            throttle::limit,
        ))
        .layer(axum::middleware::from_fn(observe::http))
        .layer(axum::middleware::from_fn(error::trace))
        // Outside the limits: a supervisor's probe never waits behind agents, nor counts as one.
        .route("/healthz", get(health::live))
        .route("/readyz", get(health::ready))
        .with_state(state)
}
