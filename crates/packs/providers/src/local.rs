//! A local model provider for the demo and the tests: the same HTTP APIs the adapters speak
//! (OpenAI-style chat completions and speech, Replicate-style predictions), answering
//! deterministically from the request, so that `make run` and the tests need no network.
//!
//! A prompt can ask for the provider's unhappy paths: `[[rate-limit]]` (429),
//! `[[content-filter]]` (a filtered answer), `[[garbled]]` (an answer without choices),
//! `[[fail]]` (a failed prediction), `[[slow]]` (a prediction that never finishes, for the
//! budget cut-off).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::{Path, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use rust_decimal::prelude::ToPrimitive;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use countersign_pack::ids;

use crate::{prices, Endpoint, Providers, Secret};

struct Prediction {
    model: String,
    input: Value,
    polls: u32,
    canceled: bool,
}

struct Local {
    url: String,
    key: String,
    requests: AtomicU64,
    sent: Mutex<Vec<Sent>>,
    predictions: Mutex<HashMap<String, Prediction>>,
}

/// One request as the provider received it, for tests that hold what was sent against what the
/// plan said would be.
#[derive(Debug, Clone)]
pub struct Sent {
    pub method: String,
    pub path: String,
    /// The JSON body; `Null` for a request without one.
    pub body: Value,
}

/// The largest request body the local provider takes.
const BODY_LIMIT: usize = 1024 * 1024;

/// The running local provider; stops when dropped.
pub struct LocalProviders {
    pub url: String,
    local: Arc<Local>,
    task: JoinHandle<()>,
}

impl LocalProviders {
    /// Serves on `127.0.0.1:<free port>` with a fresh key.
    pub async fn start() -> anyhow::Result<LocalProviders> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let local = Arc::new(Local {
            url: url.clone(),
            key: ids::random_id("key_", 16),
            requests: AtomicU64::new(0),
            sent: Mutex::new(Vec::new()),
            predictions: Mutex::new(HashMap::new()),
        });
        let router = Router::new()
            .route("/v1/chat/completions", post(chat))
            .route("/v1/audio/speech", post(speech))
            .route("/v1/models/{owner}/{name}/predictions", post(create))
            .route("/v1/predictions/{id}", get(prediction))
            .route("/v1/predictions/{id}/cancel", post(cancel))
            .route("/files/{id}/{file}", get(file))
            .layer(axum::middleware::from_fn_with_state(local.clone(), count))
            .with_state(local.clone());
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, router).await {
                tracing::error!(error = %e, "local provider stopped");
            }
        });
        Ok(LocalProviders { url, local, task })
    }

    /// The key it accepts, for a gateway in another process (given it in its environment).
    pub fn key(&self) -> &str {
        &self.local.key
    }

    /// Requests it has received, of any kind.
    pub fn requests(&self) -> u64 {
        self.local.requests.load(Ordering::SeqCst)
    }

    /// Every request received, in order, with its body.
    pub fn sent(&self) -> Vec<Sent> {
        self.local
            .sent
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default()
    }

    /// Both providers' endpoints, here, with this server's key.
    pub fn providers(&self) -> Providers {
        let endpoint = || Endpoint::new(&self.url, Secret::new(self.local.key.clone()));
        Providers::new(Some(endpoint()), Some(endpoint()))
    }
}

impl Drop for LocalProviders {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn count(State(local): State<Arc<Local>>, request: Request, next: Next) -> Response {
    local.requests.fetch_add(1, Ordering::SeqCst);
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, BODY_LIMIT).await else {
        return openai_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "The request is too large.",
            "request_too_large",
        );
    };
    if let Ok(mut sent) = local.sent.lock() {
        sent.push(Sent {
            method: parts.method.to_string(),
            path: parts.uri.path().to_owned(),
            body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        });
    }
    let request = Request::from_parts(parts, axum::body::Body::from(bytes));
    let authorized = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        == Some(format!("Bearer {}", local.key).as_str());
    if !authorized && !request.uri().path().starts_with("/files/") {
        return openai_error(
            StatusCode::UNAUTHORIZED,
            "Incorrect API key provided.",
            "invalid_api_key",
        );
    }
    next.run(request).await
}

fn openai_error(status: StatusCode, message: &str, code: &str) -> Response {
    let body = json!({"error": {"message": message, "type": "invalid_request_error",
                                "param": null, "code": code}});
    (status, Json(body)).into_response()
}

fn tokens(text: &str) -> u64 {
    text.chars().count().div_ceil(4) as u64
}

async fn chat(Json(request): Json<Value>) -> Response {
    let model = request["model"].as_str().unwrap_or("gpt-4o-mini");
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let last = messages
        .last()
        .and_then(|m| m["content"].as_str())
        .unwrap_or("");
    if last.contains("[[rate-limit]]") {
        return openai_error(
            StatusCode::TOO_MANY_REQUESTS,
            "Rate limit reached for requests.",
            "rate_limit_exceeded",
        );
    }
    if last.contains("[[garbled]]") {
        return Json(json!({"id": "chatcmpl-demo", "object": "chat.completion"})).into_response();
    }
    let prompt_tokens: u64 = messages
        .iter()
        .map(|m| tokens(m["content"].as_str().unwrap_or("")) + 4)
        .sum::<u64>()
        + 3;
    let max_tokens = request["max_tokens"].as_u64().unwrap_or(256);
    let filtered = last.contains("[[content-filter]]");
    let full = format!(
        "Demo answer from {model}. You wrote {} characters, beginning “{}”. A real provider would \
         answer here; this one answers the same way every time.",
        last.chars().count(),
        last.chars().take(60).collect::<String>()
    );
    let cut: String = full
        .chars()
        .take(usize::try_from(max_tokens.saturating_mul(4)).unwrap_or(usize::MAX))
        .collect();
    let finish_reason = match (filtered, cut.len() < full.len()) {
        (true, _) => "content_filter",
        (false, true) => "length",
        (false, false) => "stop",
    };
    let content = if filtered { Value::Null } else { json!(cut) };
    let completion_tokens = if filtered { 0 } else { tokens(&cut) };
    Json(json!({
        "id": format!("chatcmpl-demo{}", hex::encode(&Sha256::digest(last.as_bytes())[..6])),
        "object": "chat.completion",
        "created": 1_764_547_200,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content,
                     "refusal": null}, "logprobs": null, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
        "system_fingerprint": "fp_countersign_demo"
    }))
    .into_response()
}

/// 8 kHz, 8-bit mono WAV: a short tone per character, pitched by the character.
fn wav(text: &str) -> Vec<u8> {
    const RATE: u32 = 8000;
    let per_char = (RATE / 20) as usize;
    let mut samples = Vec::with_capacity(text.chars().count() * per_char);
    for c in text.chars() {
        let pitch = 220.0 + f64::from(u32::from(c) % 48) * 15.0;
        for n in 0..per_char {
            let t = n as f64 / f64::from(RATE);
            let value = if c.is_whitespace() {
                0.0
            } else {
                (t * pitch * std::f64::consts::TAU).sin() * 60.0
            };
            samples.push((128.0 + value) as u8);
        }
    }
    let data = samples.len() as u32;
    let mut out = Vec::with_capacity(44 + samples.len());
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + data).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&RATE.to_le_bytes());
    out.extend_from_slice(&RATE.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&8u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&data.to_le_bytes());
    out.extend_from_slice(&samples);
    out
}

async fn speech(Json(request): Json<Value>) -> Response {
    if request["response_format"].as_str().unwrap_or("mp3") != "wav" {
        return openai_error(
            StatusCode::BAD_REQUEST,
            "The demo provider speaks wav only.",
            "unsupported_format",
        );
    }
    let input = request["input"].as_str().unwrap_or("");
    ([(header::CONTENT_TYPE, "audio/wav")], wav(input)).into_response()
}

fn prediction_body(local: &Local, id: &str, p: &Prediction) -> Value {
    let prompt = p.input["prompt"].as_str().unwrap_or("");
    let video = prices::video_models().iter().any(|m| m.model == p.model);
    let (status, error) = if p.canceled {
        ("canceled", Value::Null)
    } else if p.polls == 0 {
        ("starting", Value::Null)
    } else if p.polls == 1 || prompt.contains("[[slow]]") {
        ("processing", Value::Null)
    } else if prompt.contains("[[fail]]") {
        (
            "failed",
            json!("NSFW content detected. Try a different prompt."),
        )
    } else {
        ("succeeded", Value::Null)
    };
    let units = if video {
        p.input["duration"].as_u64().unwrap_or(1)
    } else {
        p.input["num_outputs"].as_u64().unwrap_or(1)
    };
    let price = prices::image_models()
        .into_iter()
        .chain(prices::video_models())
        .find(|m| m.model == p.model);
    // Midway through the price table's range per unit: inside what was approved.
    let predict_time = price.map_or(1.0, |m| {
        let (low, high) = m.seconds_per_unit;
        ((low + high) / rust_decimal::Decimal::TWO * rust_decimal::Decimal::from(units))
            .to_f64()
            .unwrap_or(1.0)
    });
    let output = (status == "succeeded").then(|| {
        let urls: Vec<String> = (0..units.clamp(1, 4))
            .map(|n| format!("{}/files/{id}/{n}.svg", local.url))
            .collect();
        if video {
            json!(urls[0])
        } else {
            json!(urls)
        }
    });
    let finished = matches!(status, "succeeded" | "failed" | "canceled");
    json!({
        "id": id, "model": p.model, "version": "demo", "input": p.input,
        "logs": "", "output": output, "error": error, "status": status,
        "data_removed": false, "created_at": "2026-12-01T00:00:00.000Z",
        "metrics": if finished { json!({"predict_time": predict_time}) } else { json!({}) },
        "urls": {"get": format!("{}/v1/predictions/{id}", local.url),
                 "cancel": format!("{}/v1/predictions/{id}/cancel", local.url)}
    })
}

async fn create(
    State(local): State<Arc<Local>>,
    Path((owner, name)): Path<(String, String)>,
    Json(request): Json<Value>,
) -> Response {
    let model = format!("{owner}/{name}");
    let input = request["input"].clone();
    let id = ids::random_id("demo", 10);
    let p = Prediction {
        model,
        input,
        polls: 0,
        canceled: false,
    };
    let body = prediction_body(&local, &id, &p);
    let mut predictions = lock(&local);
    // Bounded: past it, the demo answers as a busy provider would.
    if predictions.len() >= KEPT {
        return openai_error(
            StatusCode::TOO_MANY_REQUESTS,
            "The demo provider is full.",
            "busy",
        );
    }
    predictions.insert(id, p);
    (StatusCode::CREATED, Json(body)).into_response()
}

/// Predictions the demo provider keeps; a demo day makes a few hundred.
const KEPT: usize = 10_000;

fn lock(local: &Local) -> std::sync::MutexGuard<'_, HashMap<String, Prediction>> {
    local.predictions.lock().unwrap_or_else(|e| e.into_inner())
}

fn not_found() -> Response {
    let body = json!({"title": "Not found", "detail": "No such prediction.", "status": 404});
    (StatusCode::NOT_FOUND, Json(body)).into_response()
}

async fn prediction(State(local): State<Arc<Local>>, Path(id): Path<String>) -> Response {
    let mut predictions = lock(&local);
    let Some(p) = predictions.get_mut(&id) else {
        return not_found();
    };
    p.polls += 1;
    Json(prediction_body(&local, &id, p)).into_response()
}

async fn cancel(State(local): State<Arc<Local>>, Path(id): Path<String>) -> Response {
    let mut predictions = lock(&local);
    let Some(p) = predictions.get_mut(&id) else {
        return not_found();
    };
    p.canceled = true;
    Json(prediction_body(&local, &id, p)).into_response()
}

/// An output: an SVG whose colours come from the prompt.
async fn file(
    State(local): State<Arc<Local>>,
    Path((id, file)): Path<(String, String)>,
) -> Response {
    let prompt = match lock(&local).get(&id) {
        Some(p) => p.input["prompt"].as_str().unwrap_or("").to_owned(),
        None => return not_found(),
    };
    let hash = Sha256::digest(format!("{prompt}/{file}").as_bytes());
    let colour = |n: usize| format!("#{}", hex::encode(&hash[n..n + 3]));
    let svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"256\" height=\"256\">\
         <rect width=\"256\" height=\"256\" fill=\"{}\"/><circle cx=\"128\" cy=\"128\" r=\"80\" \
         fill=\"{}\"/></svg>",
        colour(0),
        colour(3)
    );
    ([(header::CONTENT_TYPE, "image/svg+xml")], svg).into_response()
}
