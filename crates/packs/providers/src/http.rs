//! One HTTP exchange with a provider: the key in its header, a timeout, and a bounded number
//! of attempts when the provider says to come back or could not be reached. A request that may
//! have been processed is never sent twice: that would be paid twice.

use std::time::Duration;

use countersign_proto::ErrorCode;
use reqwest::{RequestBuilder, Response, StatusCode};

use crate::{Endpoint, Failure, Provider, Providers, Spent};
use countersign_pack::ApiError;

/// Whether a request may run twice without doing its work twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repeat {
    /// Reads (a prediction's status): any failure to answer is worth another attempt.
    Safe,
    /// Paid work: only answers that say nothing was done (429, 503) or a connection that never
    /// opened are attempted again.
    Unsafe,
}

/// The longest a provider's `Retry-After` is waited for inside one call.
const LONGEST_WAIT: Duration = Duration::from_secs(10);

pub(super) async fn send(
    providers: &Providers,
    provider: Provider,
    repeat: Repeat,
    build: impl Fn(&reqwest::Client, &Endpoint) -> RequestBuilder,
) -> Result<Response, Failure> {
    let endpoint = providers.endpoint(provider)?;
    let mut attempt = 1;
    loop {
        let request = build(&providers.client, endpoint)
            .bearer_auth(endpoint.key.expose())
            .timeout(providers.request_timeout);
        let last = attempt >= providers.attempts;
        match request.send().await {
            Ok(response) => {
                let status = response.status();
                let again = status == StatusCode::TOO_MANY_REQUESTS
                    || status == StatusCode::SERVICE_UNAVAILABLE
                    || (repeat == Repeat::Safe && status.is_server_error());
                if !again || last {
                    return Ok(response);
                }
                tokio::time::sleep(wait(attempt, retry_after(&response))).await;
            }
            Err(e) => {
                let again = e.is_connect() || (repeat == Repeat::Safe && e.is_timeout());
                if !again || last {
                    // A paid request that timed out may have been processed.
                    let spent = if e.is_timeout() && repeat == Repeat::Unsafe {
                        Spent::Unknown
                    } else {
                        Spent::Nothing
                    };
                    return Err(Failure {
                        error: unreachable(provider, e),
                        spent,
                    });
                }
                tokio::time::sleep(wait(attempt, None)).await;
            }
        }
        attempt += 1;
    }
}

fn retry_after(response: &Response) -> Option<Duration> {
    let seconds: u64 = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_secs(seconds))
}

fn wait(attempt: u32, asked: Option<Duration>) -> Duration {
    let backoff = Duration::from_millis(250 << attempt.min(6));
    asked.unwrap_or(backoff).min(LONGEST_WAIT)
}

/// The provider did not answer: a timeout, or no connection.
fn unreachable(provider: Provider, e: reqwest::Error) -> ApiError {
    let name = provider.name();
    let error = if e.is_timeout() {
        ApiError::new(
            ErrorCode::ProviderTimeout,
            format!("{name} did not answer in time."),
        )
    } else {
        ApiError::new(
            ErrorCode::ProviderUnavailable,
            format!("{name} could not be reached."),
        )
    };
    tracing::warn!(provider = name, error = %e.without_url(), "provider call failed");
    error.from_provider(name)
}

/// The error contract's code for a provider's HTTP status, before its body says more.
pub(super) fn code_for(status: StatusCode) -> ErrorCode {
    match status.as_u16() {
        // Redirects are not followed (they would carry the key): the base URL is wrong.
        300..=399 | 401 | 403 | 404 => ErrorCode::ProviderMisconfigured,
        408 | 504 => ErrorCode::ProviderTimeout,
        429 => ErrorCode::ProviderRateLimited,
        400..=499 => ErrorCode::ProviderRefused,
        _ => ErrorCode::ProviderUnavailable,
    }
}

/// A body that cannot be what the provider documents.
pub(super) fn malformed(provider: Provider, why: impl std::fmt::Display) -> ApiError {
    ApiError::new(
        ErrorCode::ProviderBadResponse,
        format!(
            "{} answered with a body it does not document: {why}.",
            provider.name()
        ),
    )
    .from_provider(provider.name())
}

/// A success body read whole, within `limit` bytes.
pub(super) async fn body(
    provider: Provider,
    mut response: Response,
    limit: usize,
) -> Result<Vec<u8>, ApiError> {
    let mut bytes = Vec::new();
    loop {
        let chunk = response.chunk().await.map_err(|e| {
            if e.is_timeout() {
                ApiError::new(
                    ErrorCode::ProviderTimeout,
                    format!("{} stopped sending its answer.", provider.name()),
                )
                .from_provider(provider.name())
            } else {
                malformed(provider, "the answer broke off")
            }
        })?;
        let Some(chunk) = chunk else {
            return Ok(bytes);
        };
        if bytes.len() + chunk.len() > limit {
            return Err(malformed(
                provider,
                format!("the answer exceeds {limit} bytes"),
            ));
        }
        bytes.extend_from_slice(&chunk);
    }
}

/// A JSON success body.
pub(super) async fn json(
    provider: Provider,
    response: Response,
) -> Result<serde_json::Map<String, serde_json::Value>, ApiError> {
    let bytes = body(provider, response, JSON_LIMIT).await?;
    match serde_json::from_slice(&bytes) {
        Ok(serde_json::Value::Object(map)) => Ok(map),
        Ok(_) => Err(malformed(provider, "not a JSON object")),
        Err(e) => Err(malformed(provider, e)),
    }
}

/// The largest JSON answer read from a provider.
pub(super) const JSON_LIMIT: usize = 4 * 1024 * 1024;
