//! Standing approvals (`docs/standing.md`), and the approvers' public keys an exported history is
//! checked against offline.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use countersign_engine::accounts::{self, Approver};
use countersign_engine::standing::{self, Revoker};
use countersign_proto::approvals::ApproverKeys;
use countersign_proto::dsse::Envelope;
use countersign_proto::standing::{StandingApproval, StandingList};

use crate::schemas::{Refused, WriteRefused};
use crate::{AppState, Auth, HttpResult};

/// A standing approval: a DSSE envelope over a `countersign.standing/v1` statement, kept verbatim.
#[utoipa::path(post, path = "/v1/standing", request_body = Envelope,
    responses((status = 201, body = StandingApproval), WriteRefused))]
pub async fn create(
    State(state): State<Arc<AppState>>,
    Auth(approver): Auth<Approver>,
    body: Bytes,
) -> HttpResult<(StatusCode, Json<StandingApproval>)> {
    let created = standing::create(&state, &approver, &body).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

/// Every standing approval of the gateway, newest first, with its use.
#[utoipa::path(get, path = "/v1/standing",
    responses((status = 200, body = StandingList), Refused))]
pub async fn list(
    State(state): State<Arc<AppState>>,
    _approver: Auth<Approver>,
) -> HttpResult<Json<StandingList>> {
    Ok(Json(standing::list(&state.store).await?))
}

/// Revokes a standing approval of the caller's at once: its approvals of plans not yet run stop
/// counting.
#[utoipa::path(post, path = "/v1/standing/{id}/revoke", params(("id" = String, Path)),
    responses((status = 200, body = StandingApproval), WriteRefused))]
pub async fn revoke(
    State(state): State<Arc<AppState>>,
    Auth(approver): Auth<Approver>,
    Path(id): Path<String>,
) -> HttpResult<Json<StandingApproval>> {
    Ok(Json(
        standing::revoke(
            &state.store,
            state.registry,
            Revoker::Signer(&approver),
            &id,
        )
        .await?,
    ))
}

/// Every approver key the gateway accepted, revoked ones with when.
#[utoipa::path(get, path = "/v1/approvers/keys",
    responses((status = 200, body = ApproverKeys), Refused))]
pub async fn keys(
    State(state): State<Arc<AppState>>,
    _approver: Auth<Approver>,
) -> HttpResult<Json<ApproverKeys>> {
    Ok(Json(accounts::public_keys(&state).await?))
}
