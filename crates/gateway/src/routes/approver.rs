//! Approver side: enrollment, the pending queue, plan reads.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::header::{ETAG, IF_NONE_MATCH};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use countersign_proto::approvals::{ApprovalList, EnrollRequest, EnrollResponse, PlanRecord};
use countersign_proto::digest::sha256;
use serde::Deserialize;

use super::no_store;
use crate::accounts::{self, Approver};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult, Body};
use crate::{events, ids, plans, AppState};

pub async fn enroll(
    State(state): State<Arc<AppState>>,
    Body(request): Body<EnrollRequest>,
) -> ApiResult<Json<EnrollResponse>> {
    Ok(Json(
        accounts::enroll(&state.store, &state.gateway_id, &request).await?,
    ))
}

/// An agent's budget, so approvers see what a plan's cost leaves of it.
pub async fn wallet(
    State(state): State<Arc<AppState>>,
    _approver: Approver,
    Path(agent_id): Path<String>,
) -> ApiResult<Json<serde_json::Value>> {
    let mut conn = state.store.pool().acquire().await?;
    let known: Option<String> = sqlx::query_scalar("SELECT id FROM agents WHERE id = ?")
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
}

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
    let list = pending(&state).await?;
    let body = serde_json::to_vec(&list)?;
    let etag = format!("\"{}\"", &sha256(&body)["sha256:".len()..][..24]);
    let mut response = if headers
        .get(IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag))
    {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response()
    };
    let headers = response.headers_mut();
    headers.insert(
        ETAG,
        HeaderValue::from_str(&etag).map_err(anyhow::Error::from)?,
    );
    headers.insert("x-poll-interval", HeaderValue::from(state.poll_interval));
    Ok(response)
}

/// Plans awaiting a decision, soonest expiry first; stale ones stay listed so they can be refreshed.
/// Read in one transaction: one snapshot, so no summary mixes states from before and after a write.
async fn pending(state: &AppState) -> ApiResult<ApprovalList> {
    let mut conn = state.store.pool().begin().await?;
    let revision = events::revision(&mut conn).await?.to_string();
    let ids_: Vec<String> = sqlx::query_scalar(
        "SELECT id FROM plans WHERE status IN ('pending_approval', 'stale') AND expires_at > ?
         ORDER BY expires_at, id",
    )
    .bind(ids::to_text(ids::now()))
    .fetch_all(&mut *conn)
    .await?;
    let mut items = Vec::with_capacity(ids_.len());
    for id in ids_ {
        if let Some(plan) = plans::load(&mut conn, &id).await? {
            items.push(plans::summary(&plans::record(&mut conn, plan).await?));
        }
    }
    Ok(ApprovalList { items, revision })
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
