//! Agent side: who the gateway is, what it offers, and previews.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use countersign_engine::accounts::{Agent, Caller};
use countersign_engine::plan::dry_run;
use countersign_proto::describe::{CapabilityList, Describe, GatewayInfo};
use countersign_proto::plan::DryRunRequest;
use countersign_proto::INTERFACE_VERSION;

use crate::schemas::{DryRunAnswer, Refused, WriteRefused};
use crate::{AppState, Auth, Body, HttpResult};

/// Who this gateway is.
#[utoipa::path(get, path = "/v1/gateway",
    responses((status = 200, body = GatewayInfo), Refused))]
pub async fn gateway(
    State(state): State<Arc<AppState>>,
    _caller: Auth<Caller>,
) -> Json<GatewayInfo> {
    Json(GatewayInfo {
        gateway_id: state.gateway_id.clone(),
        interface_version: INTERFACE_VERSION.to_owned(),
        name: state.name.clone(),
    })
}

/// Every capability's description.
#[utoipa::path(get, path = "/v1/capabilities",
    responses((status = 200, body = CapabilityList), Refused))]
pub async fn capabilities(
    State(state): State<Arc<AppState>>,
    _caller: Auth<Caller>,
) -> Json<CapabilityList> {
    Json(CapabilityList {
        items: state.registry.all().map(|c| state.describe(c)).collect(),
    })
}

/// One capability's description.
#[utoipa::path(get, path = "/v1/capabilities/{id}", params(("id" = String, Path)),
    responses((status = 200, body = Describe), Refused))]
pub async fn describe(
    State(state): State<Arc<AppState>>,
    _caller: Auth<Caller>,
    Path(id): Path<String>,
) -> HttpResult<Json<Describe>> {
    Ok(Json(state.describe(state.capability(&id)?)))
}

/// Preview a request against the current state; writes nothing but the preview audit.
#[utoipa::path(post, path = "/v1/capabilities/{id}/dry_run", params(("id" = String, Path)),
    request_body = DryRunRequest,
    responses((status = 200, body = DryRunAnswer), WriteRefused))]
pub async fn dry_run(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    Auth(agent): Auth<Agent>,
    Body(request): Body<DryRunRequest>,
) -> HttpResult<Response> {
    Ok(Json(dry_run::run(&state, &id, &agent, request).await?).into_response())
}
