//! The OpenAI-compatible adapter: `POST /v1/chat/completions` and `POST /v1/audio/speech`, and
//! the normalizer from their answers to seed 002's envelope.

use base64::Engine;
use countersign_proto::envelope::Usage;
use countersign_proto::ErrorCode;
use serde_json::{json, Map, Value};

use crate::http::{self, Repeat};
use crate::{provider_fields, Failure, Output, Provider, Providers, Spent};
use countersign_pack::ApiError;

const OPENAI: Provider = Provider::OpenAi;

/// The largest audio answer kept: it travels inside the envelope, base64-encoded.
pub const AUDIO_LIMIT: usize = 8 * 1024 * 1024;

/// Paid work: sent again only when the provider says nothing was done.
async fn post(
    providers: &Providers,
    path: &str,
    request: &Value,
) -> Result<reqwest::Response, Failure> {
    http::send(providers, OPENAI, Repeat::Unsafe, |client, endpoint| {
        client
            .post(format!("{}{path}", endpoint.base_url))
            .json(request)
    })
    .await
}

/// Sends a chat completion request and normalizes its answer. An error status says the
/// provider did nothing; a success it cannot make sense of may have been billed.
pub async fn chat(providers: &Providers, request: &Value) -> Result<Output, Failure> {
    let response = post(providers, "/v1/chat/completions", request).await?;
    let status = response.status();
    if !status.is_success() {
        let body = http::body(OPENAI, response, http::JSON_LIMIT).await?;
        return Err(error(status.as_u16(), &body).into());
    }
    let answer = http::json(OPENAI, response)
        .await
        .map_err(Failure::unknown)?;
    normalize_chat(&answer)
}

/// Sends a speech request; the answer is the audio itself.
pub async fn speech(providers: &Providers, request: &Value) -> Result<Output, Failure> {
    let response = post(providers, "/v1/audio/speech", request).await?;
    let status = response.status();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    if !status.is_success() {
        let body = http::body(OPENAI, response, http::JSON_LIMIT).await?;
        return Err(error(status.as_u16(), &body).into());
    }
    let audio = http::body(OPENAI, response, AUDIO_LIMIT)
        .await
        .map_err(Failure::unknown)?;
    normalize_speech(&content_type, &audio).map_err(Failure::unknown)
}

/// A chat completion in the envelope's terms. A refusal or a filtered answer is no success, but
/// its tokens were billed; an answer cut at `max_tokens` is a success, and says so in
/// `metadata.finish_reason`. A success body without the documented fields may have been billed.
pub fn normalize_chat(answer: &Map<String, Value>) -> Result<Output, Failure> {
    let usage = answer.get("usage").and_then(Value::as_object);
    let count = |key: &str| usage.and_then(|u| u.get(key)).and_then(Value::as_u64);
    let spent = match (count("prompt_tokens"), count("completion_tokens")) {
        (Some(input), Some(output)) => Spent::Tokens { input, output },
        _ => Spent::Unknown,
    };
    let fail = |error: ApiError| Failure { error, spent };
    let choice = answer
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .and_then(Value::as_object)
        .ok_or_else(|| fail(http::malformed(OPENAI, "no choices")))?;
    let message = choice
        .get("message")
        .and_then(Value::as_object)
        .ok_or_else(|| fail(http::malformed(OPENAI, "the choice has no message")))?;
    let finish_reason = choice.get("finish_reason").and_then(Value::as_str);
    if let Some(refusal) = message.get("refusal").and_then(Value::as_str) {
        return Err(fail(refused(
            format!("The model refused: {refusal}"),
            "refusal",
        )));
    }
    if finish_reason == Some("content_filter") {
        return Err(fail(refused(
            "The provider's content filter withheld the answer.".to_owned(),
            "content_filter",
        )));
    }
    let content = match message.get("content") {
        Some(Value::String(text)) => text.clone(),
        _ => {
            return Err(fail(http::malformed(
                OPENAI,
                "the message has no text content",
            )))
        }
    };
    let Spent::Tokens {
        input: input_tokens,
        output: output_tokens,
    } = spent
    else {
        return Err(fail(http::malformed(OPENAI, "no token usage")));
    };
    let mut metadata = Map::new();
    for (from, to) in [
        ("model", "model"),
        ("id", "response_id"),
        ("system_fingerprint", "system_fingerprint"),
        ("service_tier", "service_tier"),
    ] {
        if let Some(value) = answer.get(from).filter(|v| !v.is_null()) {
            metadata.insert(to.to_owned(), value.clone());
        }
    }
    if let Some(reason) = finish_reason {
        metadata.insert("finish_reason".to_owned(), json!(reason));
    }
    metadata.insert(
        "provider_fields".to_owned(),
        provider_fields(
            answer,
            &[
                "choices",
                "model",
                "id",
                "system_fingerprint",
                "service_tier",
            ],
        ),
    );
    Ok(Output {
        content,
        usage: Usage {
            input_tokens,
            output_tokens,
            ..Usage::default()
        },
        metadata,
        ..Output::default()
    })
}

/// Speech audio as one `files` entry, carried inline as a `data:` URL with its digest.
pub fn normalize_speech(content_type: &str, audio: &[u8]) -> Result<Output, ApiError> {
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let extension = match mime.as_str() {
        "audio/wav" | "audio/x-wav" | "audio/wave" => "wav",
        "audio/mpeg" | "audio/mp3" => "mp3",
        "audio/ogg" | "audio/opus" => "opus",
        "audio/flac" => "flac",
        "audio/aac" => "aac",
        _ => return Err(http::malformed(OPENAI, format!("audio as {mime:?}"))),
    };
    if audio.is_empty() {
        return Err(http::malformed(OPENAI, "no audio"));
    }
    let encoded = base64::engine::general_purpose::STANDARD.encode(audio);
    let file = json!({
        "name": format!("speech.{extension}"),
        "mime_type": mime,
        "size_bytes": audio.len(),
        "sha256": countersign_proto::digest::sha256(audio),
        "url": format!("data:{mime};base64,{encoded}"),
    });
    let mut metadata = Map::new();
    metadata.insert("mime_type".to_owned(), json!(mime));
    Ok(Output {
        content: format!("Synthesized {} of {extension} audio.", bytes(audio.len())),
        metadata,
        files: vec![file],
        ..Output::default()
    })
}

fn bytes(n: usize) -> String {
    if n >= 1024 * 1024 {
        format!("{:.1} MiB", n as f64 / (1024.0 * 1024.0))
    } else if n >= 1024 {
        format!("{:.1} KiB", n as f64 / 1024.0)
    } else {
        format!("{n} bytes")
    }
}

fn refused(message: String, reason: &str) -> ApiError {
    ApiError::new(ErrorCode::ProviderRefused, message)
        .with_details(json!({ "reason": reason }))
        .from_provider(OPENAI.name())
}

/// An error answer: the status decides the code, the documented `error` object refines it.
/// The provider's message is passed on, except for a rejected key, where it may quote the key.
pub fn error(status: u16, body: &[u8]) -> ApiError {
    let status_code =
        reqwest::StatusCode::from_u16(status).unwrap_or(reqwest::StatusCode::INTERNAL_SERVER_ERROR);
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let object = parsed.as_ref().and_then(|v| v.get("error"));
    let field = |key: &str| object.and_then(|o| o.get(key)).and_then(Value::as_str);
    let provider_code = field("code").or_else(|| field("type"));
    let code = match provider_code {
        Some("content_policy_violation" | "content_filter") => ErrorCode::ProviderRefused,
        Some("insufficient_quota" | "invalid_api_key") => ErrorCode::ProviderMisconfigured,
        _ => http::code_for(status_code),
    };
    let message = match (code, field("message")) {
        (ErrorCode::ProviderMisconfigured, _) => {
            format!("openai refused this gateway's key or account (HTTP {status}).")
        }
        (_, Some(message)) => format!("openai: {message}"),
        (_, None) => format!("openai answered HTTP {status}."),
    };
    ApiError::new(code, message)
        .with_details(json!({
            "provider_status": status,
            "provider_code": provider_code,
            "param": field("param"),
        }))
        .from_provider(OPENAI.name())
}
