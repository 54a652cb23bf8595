//! Bearer tokens: who is calling, and may they call this. The token is resolved once per request,
//! by [`crate::throttle::limit`]; the extractors here read what it found.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::http::{Extensions, HeaderMap};
use countersign_engine::accounts::{self, Agent, Approver, Caller};
use countersign_engine::ApiError;
use countersign_proto::ErrorCode;

use crate::error::HttpError;
use crate::AppState;

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
        .ok_or_else(accounts::unknown_token)
}

/// A handler's caller, of the kind it names: `Auth<Caller>` (anyone with a token),
/// `Auth<Agent>`, `Auth<Approver>`; the wrong kind is `forbidden`.
pub struct Auth<T>(pub T);

fn caller(parts: &Parts) -> Result<Caller, HttpError> {
    Ok(resolved(&parts.headers, &parts.extensions)?)
}

impl FromRequestParts<Arc<AppState>> for Auth<Caller> {
    type Rejection = HttpError;

    async fn from_request_parts(
        parts: &mut Parts,
        _state: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        caller(parts).map(Auth)
    }
}

impl FromRequestParts<Arc<AppState>> for Auth<Agent> {
    type Rejection = HttpError;

    async fn from_request_parts(
        parts: &mut Parts,
        _state: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        Ok(Auth(caller(parts)?.into_agent()?))
    }
}

impl FromRequestParts<Arc<AppState>> for Auth<Approver> {
    type Rejection = HttpError;

    async fn from_request_parts(
        parts: &mut Parts,
        _state: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        Ok(Auth(caller(parts)?.into_approver()?))
    }
}
