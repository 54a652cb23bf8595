//! The Countersign reference gateway: agents preview and invoke capabilities, approvers countersign
//! plans, and only an approved plan that is still current executes.

pub mod accounts;
mod auth;
mod bounds;
pub mod capabilities;
pub mod co_approver;
pub mod demo;
pub mod embedded;
mod error;
pub mod events;
pub mod identity;
pub mod ids;
pub mod limits;
pub mod mail;
pub mod mcp;
mod names;
pub mod openapi;
pub mod plans;
pub mod previews;
pub mod providers;
pub mod queue;
pub mod quotas;
pub mod revocation;
mod routes;
pub mod scopes;
pub mod sim;
pub mod store;
pub mod throttle;
pub mod tls;
pub mod wallet;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;

pub use error::{ApiError, ApiResult};
pub use limits::Limits;
pub use routes::external::recover_interrupted;
pub use store::Store;
pub use throttle::Throttle;

/// Request bodies above this are refused with `payload_too_large` (PROTOCOL section 4).
pub const BODY_LIMIT: usize = 1024 * 1024;

pub struct AppState {
    pub store: Store,
    pub gateway_id: String,
    /// Signs identity proofs and enrollment receipts; invites carry its fingerprint.
    pub identity: ed25519_dalek::SigningKey,
    pub name: String,
    /// Seconds a console should wait between polls of the approval queue.
    pub poll_interval: u32,
    /// How often an idle event stream says it is alive.
    pub heartbeat: Duration,
    /// Caps per agent and rates per token.
    pub limits: Limits,
    pub throttle: Throttle,
    /// Where provider capabilities' calls go.
    pub providers: providers::Providers,
}

impl AppState {
    pub async fn new(store: Store, name: &str) -> anyhow::Result<Arc<AppState>> {
        AppState::with_limits(store, name, Limits::default()).await
    }

    pub async fn with_limits(
        store: Store,
        name: &str,
        limits: Limits,
    ) -> anyhow::Result<Arc<AppState>> {
        AppState::with_providers(store, name, limits, providers::Providers::none()).await
    }

    pub async fn with_providers(
        store: Store,
        name: &str,
        limits: Limits,
        providers: providers::Providers,
    ) -> anyhow::Result<Arc<AppState>> {
        let gateway_id = store.gateway_id().await?;
        let identity = identity::load_or_create(&store).await?;
        queue::backfill(&store)
            .await
            .map_err(|e| anyhow::anyhow!("the queue could not be rebuilt: {}", e.message))?;
        let state = Arc::new(AppState {
            store,
            gateway_id,
            identity,
            name: name.to_owned(),
            poll_interval: 5,
            heartbeat: Duration::from_secs(15),
            throttle: Throttle::new(&limits),
            limits,
            providers,
        });
        queue::spawn_sweeper(&state);
        Ok(state)
    }
}

pub fn app(state: Arc<AppState>) -> Router {
    use routes::{agent, approver, decisions, events, invoke, plans};
    Router::new()
        .route("/v1/gateway", get(agent::gateway))
        .route("/v1/capabilities", get(agent::capabilities))
        .route("/v1/capabilities/{id}", get(agent::describe))
        .route("/v1/capabilities/{id}/dry_run", post(agent::dry_run))
        .route("/v1/capabilities/{id}/invoke", post(invoke::invoke))
        .route("/v1/gateway/identity", post(approver::identity))
        .route("/v1/approvers/enroll", post(approver::enroll))
        .route("/v1/approvers/enroll/bound", post(approver::enroll_bound))
        .route("/v1/approvers/keys", post(approver::rotate_key))
        .route("/v1/agents/{id}/wallet", get(approver::wallet))
        .route("/v1/approvals", get(approver::approvals))
        .route("/v1/plans/{id}", get(approver::plan))
        .route("/v1/plans/{id}/decisions", post(decisions::decide))
        .route("/v1/plans/{id}/refresh", post(plans::refresh))
        .route(
            "/v1/plans/{id}/effects/{effect}/subjects",
            get(plans::subjects),
        )
        .route("/v1/events", get(events::events))
        .route("/v1/audit", get(plans::audit))
        .route("/v1/openapi.json", get(crate::openapi::serve))
        .merge(crate::mcp::routes(state.clone()))
        .fallback(error::fallback)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            throttle::limit,
        ))
        .layer(axum::middleware::from_fn(error::trace))
        .with_state(state)
}
