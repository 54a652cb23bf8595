//! Bearer-token extractors: who is calling, and may they call this.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::http::{Extensions, HeaderMap};
use countersign_proto::ErrorCode;

use crate::accounts::{self, Agent, Approver};
use crate::error::ApiError;
use crate::AppState;

/// Either kind of caller.
#[derive(Clone)]
pub enum Caller {
    Agent(Agent),
    Approver(Approver),
}

pub fn bearer(headers: &HeaderMap) -> Result<&str, ApiError> {
    headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| ApiError::new(ErrorCode::Unauthenticated, "A bearer token is required."))
}

/// The caller [`crate::throttle::limit`] found for the request's token, which every routed request
/// passes: the token is looked up once.
pub fn resolved(headers: &HeaderMap, extensions: &Extensions) -> Result<Caller, ApiError> {
    bearer(headers)?;
    extensions
        .get::<Caller>()
        .cloned()
        .ok_or_else(unknown_token)
}

fn unknown_token() -> ApiError {
    ApiError::new(ErrorCode::Unauthenticated, "The bearer token is unknown.")
}

/// Who holds `token`: an agent, an approver, or nobody (`unauthenticated`).
pub async fn caller(state: &AppState, token: &str) -> Result<Caller, ApiError> {
    if let Some(caller) = accounts::by_token(state.store.pool(), token).await? {
        return Ok(caller);
    }
    Err(unknown_token())
}

impl Caller {
    /// The agent behind an agent token; approvers neither preview nor invoke.
    pub fn into_agent(self) -> Result<Agent, ApiError> {
        match self {
            Caller::Agent(agent) => Ok(agent),
            Caller::Approver(_) => Err(ApiError::new(
                ErrorCode::Forbidden,
                "Approver tokens cannot preview or invoke capabilities.",
            )),
        }
    }
}

impl FromRequestParts<Arc<AppState>> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        _state: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        resolved(&parts.headers, &parts.extensions)
    }
}

impl FromRequestParts<Arc<AppState>> for Agent {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        Caller::from_request_parts(parts, state).await?.into_agent()
    }
}

impl FromRequestParts<Arc<AppState>> for Approver {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        match Caller::from_request_parts(parts, state).await? {
            Caller::Approver(approver) => Ok(approver),
            Caller::Agent(_) => Err(ApiError::new(
                ErrorCode::Forbidden,
                "Agent tokens cannot read the approval queue or decide plans.",
            )),
        }
    }
}
