//! Approver side: enrollment, the gateway's identity, keys, wallets, the pending queue.

use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::header::{CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use countersign_engine::accounts::{self, Approver};
use countersign_engine::{
    accounts::identity, approval::teams, plan::reads, queue, queue::events, ApiError,
};
use countersign_proto::approvals::{ApprovalList, ApproverProfile, EnrollRequest, EnrollResponse};
use countersign_proto::digest::sha256;
use countersign_proto::dsse::Envelope;
use countersign_proto::enrollment::{
    BoundEnrollRequest, BoundEnrollResponse, IdentityProof, IdentityRequest,
};
use countersign_proto::keys::RotatedKey;
use serde::Deserialize;

use crate::error::query;
use crate::schemas::{Refused, Wallet};
use crate::{AppState, Auth, Body, HttpResult};

/// Enroll an approver key with a single-use code.
#[utoipa::path(post, path = "/v1/approvers/enroll", request_body = EnrollRequest, security(()),
    responses((status = 200, body = EnrollResponse), Refused))]
pub async fn enroll(
    State(state): State<Arc<AppState>>,
    Body(request): Body<EnrollRequest>,
) -> HttpResult<Json<EnrollResponse>> {
    Ok(Json(
        accounts::enroll(&state.store, &state.gateway_id, &request).await?,
    ))
}

/// The gateway's identity key, proven over the caller's nonce (no token: consoles ask before
/// they enroll).
#[utoipa::path(post, path = "/v1/gateway/identity", request_body = IdentityRequest, security(()),
    responses((status = 200, body = IdentityProof), Refused))]
pub async fn identity(
    State(state): State<Arc<AppState>>,
    Body(request): Body<IdentityRequest>,
) -> HttpResult<Json<IdentityProof>> {
    Ok(Json(identity::prove(&state, &request)?))
}

/// Enroll bound to the gateway's identity: the code proven, not sent.
#[utoipa::path(post, path = "/v1/approvers/enroll/bound", request_body = BoundEnrollRequest,
    security(()),
    responses((status = 200, body = BoundEnrollResponse), Refused))]
pub async fn enroll_bound(
    State(state): State<Arc<AppState>>,
    Body(request): Body<BoundEnrollRequest>,
) -> HttpResult<Json<BoundEnrollResponse>> {
    let enrolled =
        accounts::enroll_bound(&state.store, &state.gateway_id, &state.identity, &request);
    Ok(Json(enrolled.await?))
}

/// An agent's budget, so approvers see what a plan's cost leaves of it.
#[utoipa::path(get, path = "/v1/agents/{id}/wallet", params(("id" = String, Path)),
    responses((status = 200, body = Wallet), Refused))]
pub async fn wallet(
    State(state): State<Arc<AppState>>,
    _approver: Auth<Approver>,
    Path(agent_id): Path<String>,
) -> HttpResult<Json<serde_json::Value>> {
    Ok(Json(reads::wallet(&state, &agent_id).await?))
}

/// The calling approver as the approval policy sees them: their person and teams, and the risk
/// flags the policy lets a standing approval cover.
#[utoipa::path(get, path = "/v1/approvers/me",
    responses((status = 200, body = ApproverProfile), Refused))]
pub async fn me(
    State(state): State<Arc<AppState>>,
    Auth(approver): Auth<Approver>,
) -> HttpResult<Json<ApproverProfile>> {
    let mut conn = state.store.pool().acquire().await.map_err(ApiError::from)?;
    let mut profile = teams::profile(&mut conn, &approver)
        .await
        .map_err(ApiError::from)?;
    profile.standing_flags = Some(state.policy.coverable().to_vec());
    Ok(Json(profile))
}

/// Rotate the calling approver's key, proven with the current one.
#[utoipa::path(post, path = "/v1/approvers/keys", request_body = Envelope,
    responses((status = 200, body = RotatedKey), Refused))]
pub async fn rotate_key(
    State(state): State<Arc<AppState>>,
    Auth(approver): Auth<Approver>,
    Body(proof): Body<Envelope>,
) -> HttpResult<Json<RotatedKey>> {
    let rotated = accounts::rotate_key(&state.store, &state.gateway_id, &approver, &proof);
    Ok(Json(rotated.await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalsQuery {
    status: Option<String>,
    limit: Option<u32>,
    cursor: Option<String>,
}

/// The approval queue; `If-None-Match` with the last ETag answers 304 when nothing changed. A
/// conditional poll is answered from the queue revision alone, so it costs the same whatever the
/// queue holds; the ETag names the revision (and the page asked for), never the clock.
#[utoipa::path(get, path = "/v1/approvals",
    params(("status" = Option<String>, Query), ("limit" = Option<u32>, Query),
           ("cursor" = Option<String>, Query), ("If-None-Match" = Option<String>, Header)),
    responses((status = 200, body = ApprovalList), (status = 304, description = "Unchanged."), Refused))]
pub async fn approvals(
    State(state): State<Arc<AppState>>,
    _approver: Auth<Approver>,
    query_string: Result<Query<ApprovalsQuery>, QueryRejection>,
    headers: HeaderMap,
) -> HttpResult<Response> {
    let query = query(query_string)?;
    if query.status.as_deref().is_some_and(|s| s != "pending") {
        return Err(ApiError::validation("/status", "Only status=pending is listed.").into());
    }
    let limit = query.limit.unwrap_or(queue::MAX_PAGE);
    if !(1..=queue::MAX_PAGE).contains(&limit) {
        let message = format!("limit is 1 to {}.", queue::MAX_PAGE);
        return Err(ApiError::validation("/limit", message).into());
    }
    let page_tag = (query.limit.is_some() || query.cursor.is_some()).then(|| {
        let page = format!("{limit}\n{}", query.cursor.as_deref().unwrap_or(""));
        sha256(page.as_bytes())["sha256:".len()..][..16].to_owned()
    });
    let etag_of = |revision: i64| match &page_tag {
        Some(tag) => format!("\"{revision}-{tag}\""),
        None => format!("\"{revision}\""),
    };
    let if_none_match = headers.get(IF_NONE_MATCH).and_then(|v| v.to_str().ok());
    let current = etag_of(revision(&state).await?);
    let mut response = if if_none_match.is_some_and(|v| v.split(',').any(|t| t.trim() == current)) {
        with_etag(StatusCode::NOT_MODIFIED.into_response(), &current)?
    } else {
        let page = queue::page(&state.store, limit, query.cursor.as_deref()).await?;
        let response = ([(CONTENT_TYPE, "application/json")], page.body).into_response();
        with_etag(response, &etag_of(page.revision))?
    };
    response
        .headers_mut()
        .insert("x-poll-interval", HeaderValue::from(state.poll_interval));
    Ok(response)
}

/// The queue's revision: read again only when something committed since, or after
/// [`crate::REVISION_MAX_AGE`] (a write by another process that sends no notice).
async fn revision(state: &AppState) -> Result<i64, ApiError> {
    if let Some(revision) = state.revision.get(&()) {
        return Ok(revision);
    }
    let stamp = state.revision.stamp();
    let mut conn = state.store.pool().acquire().await?;
    let revision = events::revision(&mut conn).await?;
    state.revision.put((), stamp, revision);
    Ok(revision)
}

fn with_etag(mut response: Response, etag: &str) -> HttpResult<Response> {
    let value = HeaderValue::from_str(etag).map_err(|e| ApiError::from(anyhow::Error::from(e)))?;
    response.headers_mut().insert(ETAG, value);
    Ok(response)
}
