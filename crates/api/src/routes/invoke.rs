//! Execution: only an approved plan that is still current, and exactly what it planned.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::{Extension, Json};
use countersign_engine::accounts::Agent;
use countersign_engine::execution::invoke;
use countersign_proto::envelope::SuccessEnvelope;
use countersign_proto::plan::InvokeRequest;

use crate::schemas::WriteRefused;
use crate::{AppState, Auth, Body, HttpResult, TraceId};

/// Execute an approved, current plan, or params that need nobody.
#[utoipa::path(post, path = "/v1/capabilities/{id}/invoke", params(("id" = String, Path)),
    request_body = InvokeRequest,
    responses((status = 200, body = SuccessEnvelope), WriteRefused))]
pub async fn invoke(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    Extension(TraceId(trace_id)): Extension<TraceId>,
    Auth(agent): Auth<Agent>,
    Body(request): Body<InvokeRequest>,
) -> HttpResult<Json<SuccessEnvelope>> {
    Ok(Json(
        invoke::run(&state.engine, &id, &trace_id, &agent, request).await?,
    ))
}
