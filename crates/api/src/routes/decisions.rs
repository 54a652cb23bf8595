//! Signed decisions, checked by the engine in the order of PROTOCOL section 3.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::Json;
use countersign_engine::accounts::Approver;
use countersign_engine::approval::decisions;
use countersign_proto::approvals::DecisionResponse;
use countersign_proto::dsse::Envelope;

use crate::schemas::WriteRefused;
use crate::{AppState, Auth, HttpResult};

/// A signed decision: a DSSE envelope over a `countersign.decision/v1` statement, kept verbatim.
#[utoipa::path(post, path = "/v1/plans/{id}/decisions", params(("id" = String, Path)),
    request_body = Envelope,
    responses((status = 200, body = DecisionResponse), WriteRefused))]
pub async fn decide(
    State(state): State<Arc<AppState>>,
    Auth(approver): Auth<Approver>,
    Path(plan_id): Path<String>,
    body: Bytes,
) -> HttpResult<Json<DecisionResponse>> {
    Ok(Json(
        decisions::decide(&state, &approver, &plan_id, &body).await?,
    ))
}
