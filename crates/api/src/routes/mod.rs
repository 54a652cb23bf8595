//! HTTP handlers, one file per part of the API; each is one engine call, and carries the
//! OpenAPI description of its operation.

pub mod agent;
pub mod approver;
pub mod decisions;
pub mod events;
pub mod invoke;
pub mod plans;

use axum::http::header::CACHE_CONTROL;
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// JSON that no cache may keep: previews and plan reads.
pub fn no_store<T: Serialize>(body: T) -> Response {
    let mut response = axum::Json(body).into_response();
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
