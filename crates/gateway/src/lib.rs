//! The Countersign reference gateway as a server: the HTTP API with MCP beside it (`/mcp`, and
//! stdio for one agent), the SMTP relay executed plans' emails leave through, HTTPS, and the
//! `countersign-gateway` commands (serve, the admin commands, the simulated agent).
//!
//! It composes what lies below it (`countersign-embedded`'s packs, the engine, the HTTP API) and
//! nothing depends on it but its own binary and tests.

pub mod config;
pub mod mcp;
pub mod policy_report;
pub mod serve;
pub mod smtp;
pub mod standing_report;
pub mod stats_report;
pub mod telemetry;
pub mod tls;

use std::sync::Arc;

use axum::Router;
use countersign_api::AppState;

/// What `serve` answers: the HTTP API with MCP at `/mcp` and `/metrics` beside it.
pub fn router(state: Arc<AppState>) -> Router {
    api(state.clone()).merge(countersign_api::metrics(state))
}

/// The HTTP API with MCP at `/mcp`, for a gateway that serves `/metrics` on a listener apart.
pub fn api(state: Arc<AppState>) -> Router {
    countersign_api::app_with(state.clone(), mcp::routes(state))
}
