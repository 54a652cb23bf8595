//! `GET /v1/stats`: how approvals are going, for approvers (docs/operations.md, "Decision
//! analytics").

use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::Json;
use countersign_engine::accounts::Approver;
use countersign_engine::approval::stats;
use countersign_engine::{ids, ApiError};
use countersign_proto::stats::Stats;
use serde::Deserialize;

use crate::error::query;
use crate::schemas::Refused;
use crate::{AppState, Auth, HttpResult};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatsQuery {
    since: Option<String>,
}

/// Plans decided over the last `since` (`7d` by default; `24h`, `90m`; at most 366 days): per
/// capability, per approver and per day, with the approvals sooner than a plan can be read.
#[utoipa::path(get, path = "/v1/stats",
    params(("since" = Option<String>, Query,
        pattern = "^((36[0-6]|3[0-5][0-9]|[12][0-9]{2}|[1-9][0-9]?)d|[1-9][0-9]{0,2}h|[1-9][0-9]{0,3}m)$")),
    responses((status = 200, body = Stats), Refused))]
pub async fn stats(
    State(state): State<Arc<AppState>>,
    _approver: Auth<Approver>,
    query_string: Result<Query<StatsQuery>, QueryRejection>,
) -> HttpResult<Json<Stats>> {
    let query = query(query_string)?;
    let window = stats::parse_window(query.since.as_deref().unwrap_or("7d"))
        .map_err(|message| ApiError::validation("/since", message))?;
    Ok(Json(
        stats::window(&state.store, ids::now() - window).await?,
    ))
}
