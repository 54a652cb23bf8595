//! API errors in the seed 002 envelope, and the trace id every response carries.

use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{FromRequest, MatchedPath, Query, Request};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, RETRY_AFTER};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use countersign_engine::plan::bounds;
use countersign_engine::{ids, ApiError};
use countersign_proto::error::ErrorEnvelope;
use countersign_proto::strict_json;
use countersign_proto::ErrorCode;
use serde::de::DeserializeOwned;
use tracing::Instrument as _;

/// An [`ApiError`] as an HTTP answer: its status from its code, its body written by [`trace`],
/// which knows the trace id. Handlers answer `HttpResult`, and `?` on an engine call converts.
#[derive(Debug)]
pub struct HttpError(pub ApiError);

pub type HttpResult<T> = Result<T, HttpError>;

impl From<ApiError> for HttpError {
    fn from(e: ApiError) -> HttpError {
        HttpError(e)
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.0.code.http_status())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = status.into_response();
        response.extensions_mut().insert(self.0);
        response
    }
}

/// `error` as the HTTP answer it renders to.
pub fn respond(error: ApiError) -> Response {
    HttpError(error).into_response()
}

#[derive(Debug, Clone)]
pub struct TraceId(pub String);

/// Gives every request a trace id, answers with `X-Trace-Id`, and renders errors into the envelope.
pub async fn trace(mut request: Request, next: Next) -> Response {
    let trace_id = ids::random_id("trc_", 8);
    request.extensions_mut().insert(TraceId(trace_id.clone()));
    let method = request.method().clone();
    let matched = request.extensions().get::<MatchedPath>().cloned();
    let route = matched.as_ref().map_or("unmatched", |p| p.as_str());
    // One span per request, in the trace and around every log line it writes; the route's
    // template, never its path, which holds ids.
    let span = tracing::info_span!(
        "request",
        otel.name = %format_args!("{method} {route}"),
        otel.kind = "server",
        http.request.method = %method,
        http.route = route,
        http.response.status_code = tracing::field::Empty,
        countersign.trace_id = %trace_id,
    );
    let mut response = next.run(request).instrument(span.clone()).await;
    span.record(
        "http.response.status_code",
        i64::from(response.status().as_u16()),
    );
    let unrendered = response.extensions().get::<ApiError>().is_none();
    // The router's own answers (a body over the limit, a method the route lacks) speak the
    // error contract too; axum adds `Allow` to the latter outside this layer.
    if unrendered && response.status() == StatusCode::PAYLOAD_TOO_LARGE {
        response = respond(ApiError::new(
            ErrorCode::PayloadTooLarge,
            "The request body is too large.",
        ));
    }
    if unrendered && response.status() == StatusCode::METHOD_NOT_ALLOWED {
        response = respond(ApiError::new(
            ErrorCode::MethodNotAllowed,
            format!("This endpoint does not answer {method}; `Allow` names what it does."),
        ));
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
    // Previews, plans, the queue and their errors all depend on who asks and on state that
    // moves: no cache keeps any answer of this API (seed 004, PROTOCOL section 1).
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// JSON body whose rejections speak the protocol: `payload_too_large` or `validation_error`.
pub struct Body<T>(pub T);

impl<S, T> FromRequest<S> for Body<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = HttpError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !json_content_type(req.headers()) {
            return Err(HttpError(ApiError::validation(
                "",
                "The request body must be JSON (Content-Type: application/json).",
            )));
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
        // serde would read a struct from an array too: every body of this API is an object.
        if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return Err(HttpError(ApiError::validation(
                "",
                "The request body must be a JSON object.",
            )));
        }
        let mut reader = serde_json::Deserializer::from_slice(&bytes);
        let value = serde_path_to_error::deserialize(&mut reader)
            .map_err(|error| HttpError(schema_mismatch(&error)))?;
        reader
            .end()
            .map_err(|e| ApiError::validation("", format!("The request body is not JSON: {e}.")))?;
        Ok(Body(value))
    }
}

/// The member a body's mismatch lies in, by its own JSON pointer (seed 000): an unknown `dry`
/// beside `params` is `/dry`, a malformed `expected_revisions` is `/expected_revisions`.
fn schema_mismatch(error: &serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    use serde_path_to_error::Segment;
    let mut pointer = String::new();
    for segment in error.path() {
        let token = match segment {
            Segment::Seq { index } => index.to_string(),
            Segment::Map { key } => bounds::pointer_segment(key),
            Segment::Enum { variant } => variant.clone(),
            Segment::Unknown => continue,
        };
        pointer.push('/');
        pointer.push_str(&token);
    }
    ApiError::validation(
        &pointer,
        format!(
            "The request body does not match the schema: {}",
            error.inner()
        ),
    )
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

pub async fn fallback() -> HttpError {
    HttpError(ApiError::new(ErrorCode::NotFound, "No such endpoint."))
}

/// A query string that does not parse, as the protocol's `validation_error`.
pub fn query<T>(query: Result<Query<T>, QueryRejection>) -> HttpResult<T> {
    query
        .map(|Query(q)| q)
        .map_err(|e| HttpError(ApiError::validation("", e.body_text())))
}
