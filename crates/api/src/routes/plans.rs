//! A plan, its parts and history, and a fresh preview of it.

use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::Json;
use countersign_engine::accounts::{Approver, Caller};
use countersign_engine::{plan::reads, plan::refresh as fresh};
use countersign_proto::approvals::{AmendRequest, PlanRecord};
use countersign_proto::guard::SubjectPage;
use serde::Deserialize;

use crate::error::query;
use crate::schemas::{Refused, WriteRefused};
use crate::{AppState, Auth, Body, HttpResult};

/// A plan with its status, approvals and what moved.
#[utoipa::path(get, path = "/v1/plans/{id}", params(("id" = String, Path)),
    responses((status = 200, body = PlanRecord), Refused))]
pub async fn plan(
    State(state): State<Arc<AppState>>,
    Auth(caller): Auth<Caller>,
    Path(id): Path<String>,
) -> HttpResult<Response> {
    Ok(Json(reads::plan(&state, &caller, &id).await?).into_response())
}

/// A fresh preview of a stale plan, superseding it.
#[utoipa::path(post, path = "/v1/plans/{id}/refresh", params(("id" = String, Path)),
    responses((status = 200, body = PlanRecord), WriteRefused))]
pub async fn refresh(
    State(state): State<Arc<AppState>>,
    Auth(caller): Auth<Caller>,
    Path(plan_id): Path<String>,
) -> HttpResult<Response> {
    Ok(Json(fresh::run(&state, &caller, &plan_id).await?).into_response())
}

/// An approver's change to a plan's request, previewed as its successor (`docs/amend.md`).
#[utoipa::path(post, path = "/v1/plans/{id}/amend", params(("id" = String, Path)),
    request_body = AmendRequest,
    responses((status = 200, body = PlanRecord), WriteRefused))]
pub async fn amend(
    State(state): State<Arc<AppState>>,
    Auth(approver): Auth<Approver>,
    Path(plan_id): Path<String>,
    Body(request): Body<AmendRequest>,
) -> HttpResult<Response> {
    let record = fresh::amend(&state, &approver, &plan_id, request.params).await?;
    Ok(Json(record).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageQuery {
    cursor: Option<String>,
    limit: Option<u32>,
}

/// One page of an effect's subjects, ids ascending.
#[utoipa::path(get, path = "/v1/plans/{id}/effects/{effect}/subjects",
    params(("id" = String, Path), ("effect" = String, Path), ("cursor" = Option<String>, Query),
           ("limit" = Option<u32>, Query)),
    responses((status = 200, body = SubjectPage), Refused))]
pub async fn subjects(
    State(state): State<Arc<AppState>>,
    Auth(caller): Auth<Caller>,
    Path((plan_id, effect_id)): Path<(String, String)>,
    page: Result<Query<PageQuery>, QueryRejection>,
) -> HttpResult<Response> {
    let page = query(page)?;
    let (cursor, limit) = (page.cursor.as_deref(), page.limit);
    let page = reads::subjects(&state, &caller, &plan_id, &effect_id, cursor, limit).await?;
    Ok(([(CONTENT_TYPE, "application/json")], page).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    plan_id: String,
}

/// A plan's previews, decisions and executions, with their journals.
#[utoipa::path(get, path = "/v1/audit", params(("plan_id" = String, Query)),
    responses((status = 200, body = Object), Refused))]
pub async fn audit(
    State(state): State<Arc<AppState>>,
    Auth(caller): Auth<Caller>,
    audit_query: Result<Query<AuditQuery>, QueryRejection>,
) -> HttpResult<Response> {
    let AuditQuery { plan_id } = query(audit_query)?;
    Ok(Json(reads::audit(&state, &caller, &plan_id).await?).into_response())
}
