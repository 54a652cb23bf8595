//! The HTTP API as an OpenAPI 3.1 description, served at `GET /v1/openapi.json`. Bodies are the
//! wire types of `countersign-proto` (their JSON Schemas derived from the Rust types); each
//! operation is declared on its handler, so a handler that changes what it takes or answers
//! changes the description. Every failure is the seed 002 error envelope. `docs/openapi.json` is
//! the demo gateway's description committed; a test holds the two equal. What the derive cannot
//! say is added to it: the bounds the server enforces (`constraints`), so that a client generated
//! from the description sends only what is accepted, and how one answer's ids lead to the next
//! operations (`links`).

mod constraints;
mod links;

use std::sync::Arc;

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use countersign_engine::Registry;
use countersign_proto::error::ErrorEnvelope;
use serde_json::Value;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::routes::{
    agent, approver, decisions, events, health, invoke, mail, plans, standing, stats,
};
use crate::schemas::{DryRunAnswer, Wallet};
use crate::AppState;

#[derive(OpenApi)]
#[openapi(
    info(title = "Countersign gateway", description = "Dry runs, plans, signed decisions, execution (spec/PROTOCOL.md)."),
    paths(agent::gateway, agent::capabilities, agent::describe, agent::dry_run, invoke::invoke,
          approver::identity, approver::enroll, approver::enroll_bound, approver::rotate_key,
          approver::me,
          approver::wallet, approver::approvals, plans::plan, decisions::decide, plans::refresh,
          plans::amend, mail::remedy, standing::create, standing::list, standing::revoke, standing::keys,
          plans::subjects, events::events, plans::audit, serve, health::live, health::ready,
          stats::stats),
    components(schemas(ErrorEnvelope, DryRunAnswer, Wallet)),
    modifiers(&Bearer),
    security(("bearer" = [])),
)]
struct Api;

/// The bearer scheme, which the derive cannot say.
struct Bearer;

impl Modify for Bearer {
    fn modify(&self, api: &mut utoipa::openapi::OpenApi) {
        let components = api.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The description of a gateway serving `registry`'s capabilities.
pub fn description(registry: &'static Registry) -> Value {
    let mut api = serde_json::to_value(Api::openapi()).expect("the description serializes");
    constraints::apply(&mut api, registry);
    links::apply(&mut api);
    api
}

/// This description, as text made on the first request: it never changes while the gateway runs.
#[utoipa::path(get, path = "/v1/openapi.json", operation_id = "openapi", security(()),
    responses((status = 200, body = Object)))]
pub async fn serve(State(state): State<Arc<AppState>>) -> Response {
    let text = state
        .openapi
        .get_or_init(|| description(state.registry).to_string());
    ([(CONTENT_TYPE, "application/json")], text.clone()).into_response()
}
