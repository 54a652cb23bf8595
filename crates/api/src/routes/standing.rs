//! Standing approvals (`docs/standing.md`), and the approvers' public keys an exported history is
//! checked against offline.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use countersign_engine::accounts::{self, Approver};
use countersign_engine::approval::standing::{self, Revoker};
use countersign_proto::approvals::ApproverKeys;
use countersign_proto::dsse::Envelope;
use countersign_proto::standing::{StandingApproval, StandingList};

use serde::Deserialize;

use crate::error::query;
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageQuery {
    cursor: Option<String>,
    limit: Option<u32>,
}

/// A page of the gateway's standing approvals, newest first, each with the plans it let run and
/// those it approved that have not run.
#[utoipa::path(get, path = "/v1/standing",
    params(("cursor" = Option<String>, Query, description = "A previous page's next_cursor"),
           ("limit" = Option<u32>, Query, minimum = 1, maximum = 100,
            description = "At most this many (default 100)")),
    responses((status = 200, body = StandingList), Refused))]
pub async fn list(
    State(state): State<Arc<AppState>>,
    _approver: Auth<Approver>,
    page: Result<Query<PageQuery>, QueryRejection>,
) -> HttpResult<Json<StandingList>> {
    let page = query(page)?;
    let limit = page.limit.unwrap_or(standing::MAX_PAGE);
    Ok(Json(
        standing::list(
            &state.store,
            (&**state).into(),
            page.cursor.as_deref(),
            limit,
        )
        .await?,
    ))
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
            (&state.store, state.registry),
            (&**state).into(),
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
