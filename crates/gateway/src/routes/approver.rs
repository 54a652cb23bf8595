//! Approver side: enrollment, the pending queue, plan reads.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::header::{ETAG, IF_NONE_MATCH};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use countersign_proto::approvals::{EnrollRequest, EnrollResponse, PlanRecord};
use countersign_proto::digest::sha256;
use countersign_proto::enrollment::{
    self, BoundEnrollRequest, BoundEnrollResponse, IdentityProof, IdentityRequest,
};
use serde::Deserialize;

use super::no_store;
use crate::accounts::{self, Approver};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult, Body};
use crate::{events, plans, queue, AppState};

pub async fn enroll(
    State(state): State<Arc<AppState>>,
    Body(request): Body<EnrollRequest>,
) -> ApiResult<Json<EnrollResponse>> {
    Ok(Json(
        accounts::enroll(&state.store, &state.gateway_id, &request).await?,
    ))
}

/// Proves this gateway's identity key over the caller's nonce (no token: consoles ask before
/// they enroll).
pub async fn identity(
    State(state): State<Arc<AppState>>,
    Body(request): Body<IdentityRequest>,
) -> ApiResult<Json<IdentityProof>> {
    if !enrollment::nonce_is_valid(&request.nonce) {
        return Err(ApiError::validation(
            "/nonce",
            "The nonce is 16 to 128 base64url characters.",
        ));
    }
    Ok(Json(IdentityProof::sign(
        &state.identity,
        &state.gateway_id,
        &request.nonce,
    )))
}

pub async fn enroll_bound(
    State(state): State<Arc<AppState>>,
    Body(request): Body<BoundEnrollRequest>,
) -> ApiResult<Json<BoundEnrollResponse>> {
    Ok(Json(
        accounts::enroll_bound(&state.store, &state.gateway_id, &state.identity, &request).await?,
    ))
}

/// An agent's budget, so approvers see what a plan's cost leaves of it.
pub async fn wallet(
    State(state): State<Arc<AppState>>,
    _approver: Approver,
    Path(agent_id): Path<String>,
) -> ApiResult<Json<serde_json::Value>> {
    let mut conn = state.store.pool().acquire().await?;
    let known: Option<String> = sqlx::query_scalar("SELECT id FROM agents WHERE id = $1")
        .bind(&agent_id)
        .fetch_optional(&mut *conn)
        .await?;
    if known.is_none() {
        return Err(ApiError::not_found("agent"));
    }
    let wallet = crate::wallet::load(&mut conn, &agent_id).await?;
    Ok(Json(serde_json::json!({
        "agent_id": agent_id,
        "limit_credits": wallet.limit,
        "spent_credits": wallet.spent,
        "remaining_credits": countersign_proto::Credits::new(wallet.remaining()),
    })))
}

pub async fn rotate_key(
    State(state): State<Arc<AppState>>,
    approver: Approver,
    Body(proof): Body<countersign_proto::dsse::Envelope>,
) -> ApiResult<Json<countersign_proto::keys::RotatedKey>> {
    Ok(Json(
        accounts::rotate_key(&state.store, &state.gateway_id, &approver, &proof).await?,
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalsQuery {
    status: Option<String>,
    limit: Option<u32>,
    cursor: Option<String>,
}

/// The queue. A conditional poll is answered from the queue revision alone, so it costs the same
/// whatever the queue holds; the ETag names the revision (and the page asked for), never the clock.
pub async fn approvals(
    State(state): State<Arc<AppState>>,
    _approver: Approver,
    query: Result<Query<ApprovalsQuery>, axum::extract::rejection::QueryRejection>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let query = super::plans::query(query)?;
    if query.status.as_deref().is_some_and(|s| s != "pending") {
        return Err(ApiError::validation(
            "/status",
            "Only status=pending is listed.",
        ));
    }
    let limit = query.limit.unwrap_or(queue::MAX_PAGE);
    if !(1..=queue::MAX_PAGE).contains(&limit) {
        return Err(ApiError::validation(
            "/limit",
            format!("limit is 1 to {}.", queue::MAX_PAGE),
        ));
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
    let mut conn = state.store.pool().acquire().await?;
    let current = etag_of(events::revision(&mut conn).await?);
    drop(conn);
    let mut response = if if_none_match.is_some_and(|v| v.split(',').any(|t| t.trim() == current)) {
        with_etag(StatusCode::NOT_MODIFIED.into_response(), &current)?
    } else {
        let page = queue::page(&state.store, limit, query.cursor.as_deref()).await?;
        let response = (
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            page.body,
        )
            .into_response();
        with_etag(response, &etag_of(page.revision))?
    };
    response
        .headers_mut()
        .insert("x-poll-interval", HeaderValue::from(state.poll_interval));
    Ok(response)
}

fn with_etag(mut response: Response, etag: &str) -> ApiResult<Response> {
    response.headers_mut().insert(
        ETAG,
        HeaderValue::from_str(etag).map_err(anyhow::Error::from)?,
    );
    Ok(response)
}

pub async fn plan(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    Ok(no_store(read_plan(&state, &caller, &id).await?))
}

/// A plan with its status, approvals and what moved: for any approver, and for its own agent.
pub async fn read_plan(state: &AppState, caller: &Caller, plan_id: &str) -> ApiResult<PlanRecord> {
    let mut conn = state.store.pool().begin().await?;
    let plan = plans::load(&mut conn, plan_id)
        .await?
        .ok_or_else(|| ApiError::not_found("plan"))?;
    super::plans::ensure_may_read(caller, &plan)?;
    plans::record(&mut conn, plan).await
}
