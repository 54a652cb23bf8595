//! API errors in the seed 002 envelope, and the trace id every response carries.

use axum::body::Bytes;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request};
use axum::http::header::{CONTENT_TYPE, RETRY_AFTER};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use countersign_proto::error::ErrorEnvelope;
use countersign_proto::plan::{Violation, ViolationDetail};
use countersign_proto::ErrorCode;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::ids;
use countersign_proto::strict_json;

#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    pub details: Value,
    /// The model provider whose failure this reports; `None` is the gateway itself ("system").
    pub provider: Option<&'static str>,
    /// Whether this very request may succeed later, where the code alone would say otherwise
    /// (a provider's rate limit on a plan the failed call used up).
    pub retryable: Option<bool>,
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
            details: Value::Object(Default::default()),
            provider: None,
            retryable: None,
        }
    }

    pub fn from_provider(mut self, provider: &'static str) -> Self {
        self.provider = Some(provider);
        self
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }

    pub fn not_found(what: &str) -> Self {
        ApiError::new(ErrorCode::NotFound, format!("No such {what}."))
    }

    /// A `validation_error` whose `details.violations` has seed 000's violation form.
    pub fn validation(pointer: &str, message: impl Into<String>) -> Self {
        let message = message.into();
        let violation = Violation {
            code: "validation_error".to_owned(),
            message: message.clone(),
            hint: "Call describe(id) and resend a request that matches the protocol.".to_owned(),
            retryable: false,
            schema_pointer: pointer.to_owned(),
            details: vec![ViolationDetail {
                schema_pointer: pointer.to_owned(),
                message: message.clone(),
            }],
            audit_id: None,
        };
        ApiError::new(ErrorCode::ValidationError, message)
            .with_details(serde_json::json!({ "violations": [violation] }))
    }
}

/// SQLite's primary result codes for a database that cannot take writes now.
const SQLITE_READONLY: i64 = 8;
const SQLITE_FULL: i64 = 13;

impl From<sqlx::Error> for ApiError {
    fn from(e: sqlx::Error) -> Self {
        tracing::error!(error = %e, "store error");
        if takes_no_writes(&e) {
            return ApiError::new(
                ErrorCode::StorageUnavailable,
                "The gateway's store takes no writes now (full, read-only or unreachable); \
                 nothing was written. Try again later.",
            );
        }
        ApiError::new(
            ErrorCode::Internal,
            "The gateway could not complete the request.",
        )
    }
}

/// Whether the store refused a write because it is full, read-only or gone, rather than because
/// of the request.
fn takes_no_writes(e: &sqlx::Error) -> bool {
    let sqlx::Error::Database(db) = e else {
        return false;
    };
    if let Some(pg) = db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>() {
        // read_only_sql_transaction, disk_full, cannot_connect_now, and connection exceptions.
        let code = pg.code();
        return matches!(code, "25006" | "53100" | "57P03") || code.starts_with("08");
    }
    // Extended codes carry the primary one in their low byte (SQLITE_READONLY_DBMOVED, …).
    let primary = db
        .code()
        .and_then(|c| c.parse::<i64>().ok())
        .map(|c| c & 0xff);
    matches!(primary, Some(SQLITE_FULL | SQLITE_READONLY))
}

impl From<anyhow::Error> for ApiError {
    fn from(e: anyhow::Error) -> Self {
        tracing::error!(error = %e, "internal error");
        ApiError::new(
            ErrorCode::Internal,
            "The gateway could not complete the request.",
        )
    }
}

impl From<serde_json::Error> for ApiError {
    fn from(e: serde_json::Error) -> Self {
        anyhow::Error::from(e).into()
    }
}

/// The body is written by [`trace`], which knows the trace id.
impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.code.http_status())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = status.into_response();
        response.extensions_mut().insert(self);
        response
    }
}

#[derive(Debug, Clone)]
pub struct TraceId(pub String);

/// Gives every request a trace id, answers with `X-Trace-Id`, and renders errors into the envelope.
pub async fn trace(mut request: Request, next: Next) -> Response {
    let trace_id = ids::random_id("trc_", 8);
    request.extensions_mut().insert(TraceId(trace_id.clone()));
    let method = request.method().clone();
    let mut response = next.run(request).await;
    let unrendered = response.extensions().get::<ApiError>().is_none();
    // The router's own answers (a body over the limit, a method the route lacks) speak the
    // error contract too; axum adds `Allow` to the latter outside this layer.
    if unrendered && response.status() == StatusCode::PAYLOAD_TOO_LARGE {
        response = ApiError::new(ErrorCode::PayloadTooLarge, "The request body is too large.")
            .into_response();
    }
    if unrendered && response.status() == StatusCode::METHOD_NOT_ALLOWED {
        response = ApiError::new(
            ErrorCode::MethodNotAllowed,
            format!("This endpoint does not answer {method}; `Allow` names what it does."),
        )
        .into_response();
    }
    if let Some(error) = response.extensions_mut().remove::<ApiError>() {
        let status = response.status();
        let retry_after = response.headers_mut().remove(RETRY_AFTER);
        let mut body = ErrorEnvelope::new(error.code, error.message, error.details, &trace_id);
        if let Some(provider) = error.provider {
            body = body.from_provider(provider);
        }
        if let Some(retryable) = error.retryable {
            body.error.retryable = retryable;
        }
        response = (status, axum::Json(body)).into_response();
        if let Some(value) = retry_after {
            response.headers_mut().insert(RETRY_AFTER, value);
        }
    }
    if let Ok(value) = HeaderValue::from_str(&trace_id) {
        response.headers_mut().insert("x-trace-id", value);
    }
    response
}

/// JSON body whose rejections speak the protocol: `payload_too_large` or `validation_error`.
pub struct Body<T>(pub T);

impl<S, T> FromRequest<S> for Body<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !json_content_type(req.headers()) {
            return Err(ApiError::validation(
                "",
                "The request body must be JSON (Content-Type: application/json).",
            ));
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(ErrorCode::PayloadTooLarge, "The request body is too large.")
            } else {
                ApiError::validation("", rejection.body_text())
            }
        })?;
        strict_json::check(&bytes).map_err(|why| {
            ApiError::validation("", format!("The request body is ambiguous: {why}."))
        })?;
        match axum::Json::<T>::from_bytes(&bytes) {
            Ok(axum::Json(value)) => Ok(Body(value)),
            Err(rejection) => Err(json_rejection(rejection)),
        }
    }
}

/// `application/json` or any `application/…+json`, parameters aside, as axum's own `Json` takes.
fn json_content_type(headers: &axum::http::HeaderMap) -> bool {
    let Some(value) = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let essence = value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

fn json_rejection(rejection: JsonRejection) -> ApiError {
    ApiError::validation(
        "",
        format!(
            "The request body does not match the schema: {}",
            rejection.body_text()
        ),
    )
}

pub async fn fallback() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "No such endpoint.")
}
