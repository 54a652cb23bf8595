//! The Replicate-style adapter: create a prediction, poll it from `starting` through
//! `processing` to `succeeded`, `failed` or `canceled`, cancel it when it would outrun its
//! approved budget, and normalize its outputs to the envelope's `images` or `videos`.

use std::time::{Duration, Instant};

use countersign_proto::envelope::Usage;
use countersign_proto::ErrorCode;
use serde_json::{json, Map, Value};

use crate::http::{self, Repeat};
use crate::{provider_fields, Failure, Output, Provider, Providers, Spent};
use countersign_pack::ApiError;

const REPLICATE: Provider = Provider::Replicate;

/// Which envelope array a model's outputs go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Modality {
    Images,
    Videos,
}

/// Runs `input` on `model` and waits at most `longest` for its outputs. Once the prediction
/// exists, whatever goes wrong cancels it: it is never left running unwatched.
pub async fn predict(
    providers: &Providers,
    model: &str,
    input: &Value,
    modality: Modality,
    longest: Duration,
) -> Result<Output, Failure> {
    let response = http::send(providers, REPLICATE, Repeat::Unsafe, |client, endpoint| {
        client
            .post(format!(
                "{}/v1/models/{model}/predictions",
                endpoint.base_url
            ))
            .json(&json!({ "input": input }))
    })
    .await?;
    let status = response.status();
    if !status.is_success() {
        let body = http::body(REPLICATE, response, http::JSON_LIMIT).await?;
        return Err(error(status.as_u16(), &body).into());
    }
    // Created, so possibly running and billed, from here on.
    let mut prediction = http::json(REPLICATE, response)
        .await
        .map_err(Failure::unknown)?;
    let id = prediction
        .get("id")
        .and_then(Value::as_str)
        .filter(|id| {
            !id.is_empty()
                && id.len() <= 128
                && id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
        .ok_or_else(|| {
            Failure::unknown(http::malformed(
                REPLICATE,
                "the prediction has no usable id",
            ))
        })?
        .to_owned();
    let deadline = Instant::now() + longest;
    loop {
        match settled(&prediction, modality) {
            Ok(Some(end)) => return end,
            Ok(None) => {}
            Err(e) => return Err(cancel(providers, &id, e).await),
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(cancel(providers, &id, cut_off(&id)).await);
        }
        tokio::time::sleep(providers.poll_every.min(left)).await;
        let left = deadline.saturating_duration_since(Instant::now());
        prediction = match tokio::time::timeout(left, poll(providers, &id)).await {
            Ok(Ok(prediction)) => prediction,
            Ok(Err(e)) => return Err(cancel(providers, &id, e).await),
            Err(_) => return Err(cancel(providers, &id, cut_off(&id)).await),
        };
    }
}

/// The prediction as it stands, read at the configured base URL, never at a URL the answer names.
async fn poll(providers: &Providers, id: &str) -> Result<Map<String, Value>, ApiError> {
    let response = http::send(providers, REPLICATE, Repeat::Safe, |client, endpoint| {
        client.get(format!("{}/v1/predictions/{id}", endpoint.base_url))
    })
    .await
    .map_err(|f| f.error)?;
    let status = response.status();
    if !status.is_success() {
        let body = http::body(REPLICATE, response, http::JSON_LIMIT).await?;
        return Err(error(status.as_u16(), &body));
    }
    http::json(REPLICATE, response).await
}

fn cut_off(id: &str) -> ApiError {
    ApiError::new(
        ErrorCode::ProviderTimeout,
        "The prediction ran as long as its approved maximum pays for and was canceled.",
    )
    .with_details(json!({ "prediction_id": id, "cut_off": true }))
    .from_provider(REPLICATE.name())
}

/// Cancels a prediction the gateway stops watching; what it ran is not known, so it is charged
/// as the budget allowed. A cancel that fails is logged: the provider's own limits are all
/// that is left then.
async fn cancel(providers: &Providers, id: &str, error: ApiError) -> Failure {
    let sent = http::send(providers, REPLICATE, Repeat::Safe, |client, endpoint| {
        client.post(format!("{}/v1/predictions/{id}/cancel", endpoint.base_url))
    })
    .await;
    match sent {
        Ok(response) if response.status().is_success() => {}
        Ok(response) => {
            tracing::warn!(prediction = id, status = %response.status(), "cancel refused")
        }
        Err(e) => tracing::warn!(prediction = id, error = %e.error.message, "cancel failed"),
    }
    Failure::unknown(error)
}

/// A prediction's end, or `None` while it is still `starting` or `processing`; an answer that
/// is not a prediction is an error, and the caller cancels.
pub fn settled(
    prediction: &Map<String, Value>,
    modality: Modality,
) -> Result<Option<Result<Output, Failure>>, ApiError> {
    let status = prediction
        .get("status")
        .and_then(Value::as_str)
        .ok_or_else(|| http::malformed(REPLICATE, "the prediction has no status"))?;
    let predict_ms = prediction
        .get("metrics")
        .and_then(|m| m.get("predict_time"))
        .and_then(Value::as_f64)
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| (s * 1000.0).round() as u64);
    // What a prediction that ended without output billed: its time, when it says.
    let spent = predict_ms.map_or(Spent::Unknown, Spent::PredictMs);
    let id = prediction.get("id").cloned().unwrap_or(Value::Null);
    let end = match status {
        "starting" | "processing" => return Ok(None),
        "succeeded" => {
            normalize(prediction, modality, predict_ms).map_err(|error| Failure { error, spent })
        }
        "failed" => {
            let why = prediction
                .get("error")
                .and_then(Value::as_str)
                .unwrap_or("no reason given");
            Err(Failure {
                error: ApiError::new(
                    ErrorCode::ProviderRefused,
                    format!("The prediction failed: {why}"),
                )
                .with_details(json!({ "prediction_id": id }))
                .from_provider(REPLICATE.name()),
                spent,
            })
        }
        "canceled" => Err(Failure {
            error: ApiError::new(
                ErrorCode::ProviderUnavailable,
                "The provider canceled the prediction.",
            )
            .with_details(json!({ "prediction_id": id }))
            .from_provider(REPLICATE.name()),
            spent,
        }),
        other => return Err(http::malformed(REPLICATE, format!("status {other:?}"))),
    };
    Ok(Some(end))
}

/// A succeeded prediction: each output URL one entry of `images` or `videos`.
pub fn normalize(
    prediction: &Map<String, Value>,
    modality: Modality,
    predict_ms: Option<u64>,
) -> Result<Output, ApiError> {
    let urls: Vec<&str> = match prediction.get("output") {
        Some(Value::String(url)) => vec![url.as_str()],
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .ok_or_else(|| http::malformed(REPLICATE, "an output is not a URL"))
            })
            .collect::<Result<_, _>>()?,
        _ => {
            return Err(http::malformed(
                REPLICATE,
                "a succeeded prediction has no output",
            ))
        }
    };
    if urls.is_empty() {
        return Err(http::malformed(
            REPLICATE,
            "a succeeded prediction has no output",
        ));
    }
    let entries: Vec<Value> = urls
        .iter()
        .map(|url| {
            let scheme = url.split(':').next().unwrap_or("");
            if scheme != "https" && scheme != "http" {
                return Err(http::malformed(REPLICATE, "an output URL is not http(s)"));
            }
            Ok(json!({ "url": url, "mime_type": mime_of(url) }))
        })
        .collect::<Result<_, _>>()?;
    let (noun, images, videos) = match modality {
        Modality::Images => ("image", entries, Vec::new()),
        Modality::Videos => ("video", Vec::new(), entries),
    };
    let count = images.len() + videos.len();
    let mut metadata = Map::new();
    for (from, to) in [
        ("id", "prediction_id"),
        ("model", "model"),
        ("version", "version"),
    ] {
        if let Some(value) = prediction.get(from).filter(|v| !v.is_null()) {
            metadata.insert(to.to_owned(), value.clone());
        }
    }
    let mut usage = Usage::default();
    if let Some(ms) = predict_ms {
        metadata.insert("duration_ms".to_owned(), json!(ms));
        usage.units.insert("predict_ms".to_owned(), ms);
    }
    metadata.insert(
        "provider_fields".to_owned(),
        provider_fields(
            prediction,
            &["id", "model", "version", "output", "status", "input"],
        ),
    );
    Ok(Output {
        content: format!(
            "Generated {count} {noun}{}.",
            if count == 1 { "" } else { "s" }
        ),
        usage,
        metadata,
        images,
        videos,
        files: Vec::new(),
    })
}

fn mime_of(url: &str) -> &'static str {
    let path = url
        .split(['?', '#'])
        .next()
        .unwrap_or(url)
        .to_ascii_lowercase();
    match path.rsplit('.').next() {
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("webp") => "image/webp",
        Some("svg") => "image/svg+xml",
        Some("gif") => "image/gif",
        Some("mp4") => "video/mp4",
        Some("webm") => "video/webm",
        _ => "application/octet-stream",
    }
}

/// An error answer in problem-details form (`title`, `detail`, `status`, `invalid_fields`).
pub fn error(status: u16, body: &[u8]) -> ApiError {
    let status_code =
        reqwest::StatusCode::from_u16(status).unwrap_or(reqwest::StatusCode::INTERNAL_SERVER_ERROR);
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let detail = parsed
        .as_ref()
        .and_then(|v| v.get("detail"))
        .and_then(Value::as_str);
    let code = http::code_for(status_code);
    let message = match (code, detail) {
        (ErrorCode::ProviderMisconfigured, _) => {
            format!("replicate refused this gateway's token or model (HTTP {status}).")
        }
        (_, Some(detail)) => format!("replicate: {detail}"),
        (_, None) => format!("replicate answered HTTP {status}."),
    };
    let invalid = parsed
        .as_ref()
        .and_then(|v| v.get("invalid_fields"))
        .cloned()
        .unwrap_or(Value::Null);
    ApiError::new(code, message)
        .with_details(json!({ "provider_status": status, "invalid_fields": invalid }))
        .from_provider(REPLICATE.name())
}
