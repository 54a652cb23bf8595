//! The provider adapters against answers written from the providers' public API documentation
//! (`tests/fixtures/providers/`, see its README): each is served over real HTTP by a scripted
//! server, so status codes, headers, retries and timeouts are exercised as well as the bodies.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use countersign_engine::ApiError;
use countersign_pack::Output;
use countersign_proto::ErrorCode;
use countersign_providers::replicate::{self, Modality};
use countersign_providers::{openai, Endpoint, Failure, Providers, Secret, Spent};
use serde_json::{json, Value};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/providers");

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{FIXTURES}/{name}")).unwrap()
}

fn parsed(name: &str) -> Value {
    serde_json::from_str(&fixture(name)).unwrap()
}

/// One scripted answer: status, content type, body; `delay` before answering.
#[derive(Clone)]
struct Answer {
    status: u16,
    content_type: &'static str,
    body: Vec<u8>,
    delay: Duration,
}

fn json_answer(status: u16, name: &str) -> Answer {
    Answer {
        status,
        content_type: "application/json",
        body: fixture(name).into_bytes(),
        delay: Duration::ZERO,
    }
}

/// A server that answers requests in order from its script (the last answer repeats), and
/// remembers each request's method, path and authorization header.
struct Scripted {
    providers: Providers,
    seen: Arc<Mutex<Vec<String>>>,
    count: Arc<AtomicUsize>,
}

async fn scripted(script: Vec<Answer>) -> Scripted {
    let count = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (c, s) = (count.clone(), seen.clone());
    let handler = move |request: axum::extract::Request| {
        let (c, s, script) = (c.clone(), s.clone(), script.clone());
        async move {
            let n = c.fetch_add(1, Ordering::SeqCst);
            let auth = request
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned();
            s.lock().unwrap().push(format!(
                "{} {} {auth}",
                request.method(),
                request.uri().path()
            ));
            let answer = script[n.min(script.len() - 1)].clone();
            tokio::time::sleep(answer.delay).await;
            let status = StatusCode::from_u16(answer.status).unwrap();
            let response: Response = (
                status,
                [(header::CONTENT_TYPE, answer.content_type)],
                answer.body,
            )
                .into_response();
            response
        }
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let router = axum::Router::new().fallback(handler);
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let endpoint = || Endpoint::new(&url, Secret::new("sk-test-key"));
    let mut providers = Providers::new(Some(endpoint()), Some(endpoint()));
    providers.poll_every = Duration::from_millis(5);
    providers.attempts = 2;
    providers.request_timeout = Duration::from_millis(500);
    Scripted {
        providers,
        seen,
        count,
    }
}

fn chat_request() -> Value {
    json!({"model": "gpt-4o-mini", "max_tokens": 64,
           "messages": [{"role": "user", "content": "How tall is the Eiffel Tower?"}]})
}

async fn chat(answers: Vec<Answer>) -> (Result<Output, Failure>, Scripted) {
    let server = scripted(answers).await;
    (
        openai::chat(&server.providers, &chat_request()).await,
        server,
    )
}

fn code(result: Result<impl std::fmt::Debug, Failure>) -> (ErrorCode, ApiError) {
    let failure = result.expect_err("an error");
    (failure.error.code, failure.error)
}

fn spent(result: Result<impl std::fmt::Debug, Failure>) -> Spent {
    result.expect_err("an error").spent
}

#[tokio::test]
async fn a_chat_completion_becomes_content_usage_and_metadata() {
    let (output, server) = chat(vec![json_answer(200, "openai/chat_success.json")]).await;
    let output = output.unwrap();
    let answer = parsed("openai/chat_success.json");
    assert_eq!(output.content, answer["choices"][0]["message"]["content"]);
    assert_eq!(output.usage.input_tokens, answer["usage"]["prompt_tokens"]);
    assert_eq!(
        output.usage.output_tokens,
        answer["usage"]["completion_tokens"]
    );
    assert_eq!(output.metadata["model"], answer["model"]);
    assert_eq!(output.metadata["response_id"], answer["id"]);
    assert_eq!(output.metadata["finish_reason"], "stop");
    assert_eq!(output.metadata["provider_fields"]["usage"], answer["usage"]);
    assert!(output.images.is_empty() && output.files.is_empty() && output.videos.is_empty());
    let seen = server.seen.lock().unwrap().clone();
    assert_eq!(seen, ["POST /v1/chat/completions Bearer sk-test-key"]);
}

#[tokio::test]
async fn a_cut_answer_is_a_success_that_says_so() {
    let (output, _) = chat(vec![json_answer(200, "openai/chat_length.json")]).await;
    assert_eq!(output.unwrap().metadata["finish_reason"], "length");
}

#[tokio::test]
async fn unknown_provider_keys_survive_under_metadata() {
    let (output, _) = chat(vec![json_answer(200, "openai/chat_unknown_keys.json")]).await;
    let output = output.unwrap();
    let answer = parsed("openai/chat_unknown_keys.json");
    for key in [
        "provider",
        "x_request_id",
        "moderation_results",
        "experimental",
    ] {
        assert_eq!(
            output.metadata["provider_fields"][key], answer[key],
            "{key}"
        );
    }
}

#[tokio::test]
async fn refusals_and_filters_are_refused_not_successes() {
    let (filtered, _) = chat(vec![json_answer(200, "openai/chat_content_filter.json")]).await;
    let (c, e) = code(filtered);
    assert_eq!(
        (c, e.details["reason"].clone()),
        (ErrorCode::ProviderRefused, json!("content_filter"))
    );
    let (filtered, _) = chat(vec![json_answer(200, "openai/chat_content_filter.json")]).await;
    let usage = &parsed("openai/chat_content_filter.json")["usage"];
    let billed = Spent::Tokens {
        input: usage["prompt_tokens"].as_u64().unwrap(),
        output: usage["completion_tokens"].as_u64().unwrap(),
    };
    assert_eq!(
        spent(filtered),
        billed,
        "a filtered answer's tokens are billed"
    );
    let (refused, _) = chat(vec![json_answer(200, "openai/chat_refusal.json")]).await;
    let (c, e) = code(refused);
    assert_eq!(c, ErrorCode::ProviderRefused);
    let refusal = parsed("openai/chat_refusal.json")["choices"][0]["message"]["refusal"].clone();
    assert!(
        e.message.contains(refusal.as_str().unwrap()),
        "{}",
        e.message
    );
    let (policy, _) = chat(vec![json_answer(400, "openai/error_content_policy.json")]).await;
    assert_eq!(code(policy).0, ErrorCode::ProviderRefused);
}

#[tokio::test]
async fn a_body_without_choices_is_a_bad_response() {
    let (output, _) = chat(vec![json_answer(200, "openai/chat_malformed.json")]).await;
    let answered = chat(vec![json_answer(200, "openai/chat_malformed.json")])
        .await
        .0;
    let usage = &parsed("openai/chat_malformed.json")["usage"];
    assert_eq!(
        spent(answered),
        Spent::Tokens {
            input: usage["prompt_tokens"].as_u64().unwrap(),
            output: usage["completion_tokens"].as_u64().unwrap()
        },
        "the usage it reports is what was billed"
    );
    let (c, e) = code(output);
    assert_eq!(
        (c, e.code.http_status()),
        (ErrorCode::ProviderBadResponse, 502)
    );
    let garbage = Answer {
        status: 200,
        content_type: "application/json",
        body: b"{\"choices\": [".to_vec(),
        delay: Duration::ZERO,
    };
    let (output, _) = chat(vec![garbage]).await;
    let failure = output.unwrap_err();
    assert_eq!(failure.error.code, ErrorCode::ProviderBadResponse);
    assert_eq!(
        failure.spent,
        Spent::Unknown,
        "a 200 that makes no sense may have been billed"
    );
}

#[tokio::test]
async fn a_rate_limit_is_tried_again_a_bounded_number_of_times() {
    let (output, server) = chat(vec![json_answer(429, "openai/error_rate_limit.json")]).await;
    let failure = output.unwrap_err();
    assert_eq!(failure.spent, Spent::Nothing);
    let (c, e) = (failure.error.code, failure.error);
    assert_eq!(c, ErrorCode::ProviderRateLimited);
    assert!(c.retryable());
    assert_eq!(e.details["provider_code"], "rate_limit_exceeded");
    assert_eq!(server.count.load(Ordering::SeqCst), 2);

    let (output, server) = chat(vec![
        json_answer(429, "openai/error_rate_limit.json"),
        json_answer(200, "openai/chat_success.json"),
    ])
    .await;
    assert!(output.is_ok());
    assert_eq!(server.count.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_server_error_on_paid_work_is_not_sent_twice() {
    let (output, server) = chat(vec![json_answer(500, "openai/error_server.json")]).await;
    let (c, _) = code(output);
    assert_eq!(
        (c, c.http_status(), c.retryable()),
        (ErrorCode::ProviderUnavailable, 502, true)
    );
    assert_eq!(
        server.count.load(Ordering::SeqCst),
        1,
        "it may have been processed"
    );
}

#[tokio::test]
async fn a_rejected_key_is_misconfiguration_and_its_message_is_not_passed_on() {
    let (output, _) = chat(vec![json_answer(401, "openai/error_auth.json")]).await;
    let (c, e) = code(output);
    assert_eq!(
        (c, c.retryable()),
        (ErrorCode::ProviderMisconfigured, false)
    );
    assert!(!e.message.contains("sk-"), "{}", e.message);
    let (invalid, _) = chat(vec![json_answer(400, "openai/error_invalid_request.json")]).await;
    let (c, e) = code(invalid);
    assert_eq!(
        (c, e.details["param"].clone()),
        (ErrorCode::ProviderRefused, json!("messages"))
    );
}

#[tokio::test]
async fn a_provider_that_does_not_answer_in_time_is_a_timeout() {
    let mut slow = json_answer(200, "openai/chat_success.json");
    slow.delay = Duration::from_secs(2);
    let (output, server) = chat(vec![slow]).await;
    let failure = output.unwrap_err();
    assert_eq!(failure.spent, Spent::Unknown, "it may have been processed");
    let (c, e) = (failure.error.code, failure.error);
    assert_eq!((c, c.http_status()), (ErrorCode::ProviderTimeout, 504));
    assert_eq!(e.provider, Some("openai"));
    assert_eq!(
        server.count.load(Ordering::SeqCst),
        1,
        "a timed-out paid call is not repeated"
    );
}

#[tokio::test]
async fn an_unreachable_provider_is_unavailable() {
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let providers = Providers::new(Some(Endpoint::new(&url, Secret::new("k"))), None);
    let (c, _) = code(openai::chat(&providers, &chat_request()).await);
    assert_eq!(c, ErrorCode::ProviderUnavailable);
    let (c, _) = code(openai::chat(&Providers::none(), &chat_request()).await);
    assert_eq!(c, ErrorCode::ProviderMisconfigured);
}

#[tokio::test]
async fn speech_is_audio_as_a_file_and_its_errors_are_the_contract() {
    let audio = Answer {
        status: 200,
        content_type: "audio/mpeg",
        body: vec![0xff, 0xfb, 0x90, 0x64, 1, 2, 3],
        delay: Duration::ZERO,
    };
    let request = parsed("openai/speech_request.json");
    let server = scripted(vec![audio]).await;
    let output = openai::speech(&server.providers, &request).await.unwrap();
    assert_eq!(output.files[0]["mime_type"], "audio/mpeg");
    assert_eq!(output.files[0]["name"], "speech.mp3");
    assert_eq!(
        output.files[0]["url"],
        "data:audio/mpeg;base64,//uQZAECAw=="
    );
    assert_eq!(
        server.seen.lock().unwrap()[0],
        "POST /v1/audio/speech Bearer sk-test-key"
    );

    let server = scripted(vec![json_answer(
        400,
        "openai/speech_error_invalid_voice.json",
    )])
    .await;
    let (c, e) = code(openai::speech(&server.providers, &request).await);
    assert_eq!(
        (c, e.details["param"].clone()),
        (ErrorCode::ProviderRefused, json!("voice"))
    );

    let server = scripted(vec![json_answer(200, "openai/chat_success.json")]).await;
    let (c, _) = code(openai::speech(&server.providers, &request).await);
    assert_eq!(c, ErrorCode::ProviderBadResponse, "JSON is not audio");
}

async fn predict(answers: Vec<Answer>, modality: Modality) -> (Result<Output, Failure>, Scripted) {
    let server = scripted(answers).await;
    let input = json!({"prompt": "An astronaut riding a horse"});
    let finished = replicate::predict(
        &server.providers,
        "stability-ai/sdxl",
        &input,
        modality,
        Duration::from_secs(5),
    )
    .await;
    (finished, server)
}

#[tokio::test]
async fn a_prediction_is_polled_to_its_images() {
    let (output, server) = predict(
        vec![
            json_answer(201, "replicate/create_starting.json"),
            json_answer(200, "replicate/get_processing.json"),
            json_answer(200, "replicate/get_succeeded_image.json"),
        ],
        Modality::Images,
    )
    .await;
    let output = output.unwrap();
    let answer = parsed("replicate/get_succeeded_image.json");
    assert_eq!(output.images.len(), 2);
    assert_eq!(output.images[0]["url"], answer["output"][0]);
    assert_eq!(output.images[0]["mime_type"], "image/png");
    assert!(output.videos.is_empty() && output.files.is_empty());
    assert_eq!(output.usage.units["predict_ms"], 4478);
    assert_eq!(output.metadata["prediction_id"], answer["id"]);
    let id = answer["id"].as_str().unwrap();
    let seen = server.seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            "POST /v1/models/stability-ai/sdxl/predictions Bearer sk-test-key".to_owned(),
            format!("GET /v1/predictions/{id} Bearer sk-test-key"),
            format!("GET /v1/predictions/{id} Bearer sk-test-key"),
        ]
    );
}

#[tokio::test]
async fn a_video_output_is_one_url_in_videos() {
    let (output, _) = predict(
        vec![
            json_answer(201, "replicate/create_starting.json"),
            json_answer(200, "replicate/get_succeeded_video.json"),
        ],
        Modality::Videos,
    )
    .await;
    let output = output.unwrap();
    assert_eq!(output.videos.len(), 1);
    assert_eq!(output.videos[0]["mime_type"], "video/mp4");
    assert!(output.images.is_empty());
}

#[tokio::test]
async fn failed_and_canceled_predictions_are_the_contract_and_bill_their_time() {
    for (name, expected) in [
        ("replicate/get_failed.json", ErrorCode::ProviderRefused),
        (
            "replicate/get_canceled.json",
            ErrorCode::ProviderUnavailable,
        ),
    ] {
        let (ended, _) = predict(
            vec![
                json_answer(201, "replicate/create_starting.json"),
                json_answer(200, name),
            ],
            Modality::Images,
        )
        .await;
        let failure = ended.unwrap_err();
        assert_eq!(failure.error.code, expected, "{name}");
        let billed = parsed(name)["metrics"]["predict_time"].as_f64();
        let expected_spent = billed.map_or(Spent::Unknown, |s| {
            Spent::PredictMs((s * 1000.0).round() as u64)
        });
        assert_eq!(failure.spent, expected_spent, "{name}");
    }
}

#[tokio::test]
async fn a_prediction_the_gateway_cannot_follow_is_canceled_and_its_cost_unknown() {
    let id = parsed("replicate/create_starting.json")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for broken in [
        json_answer(200, "replicate/get_malformed.json"),
        json_answer(401, "replicate/error_auth.json"),
    ] {
        let (ended, server) = predict(
            vec![json_answer(201, "replicate/create_starting.json"), broken],
            Modality::Images,
        )
        .await;
        assert_eq!(spent(ended), Spent::Unknown);
        let seen = server.seen.lock().unwrap().clone();
        assert_eq!(
            seen.last().unwrap(),
            &format!("POST /v1/predictions/{id}/cancel Bearer sk-test-key"),
            "not left running"
        );
    }
}

#[tokio::test]
async fn unknown_prediction_keys_survive_under_metadata() {
    let (output, _) = predict(
        vec![
            json_answer(201, "replicate/create_starting.json"),
            json_answer(200, "replicate/get_unknown_keys.json"),
        ],
        Modality::Images,
    )
    .await;
    let output = output.unwrap();
    let answer = parsed("replicate/get_unknown_keys.json");
    for key in [
        "source",
        "deployment",
        "hardware",
        "billing",
        "webhook_status",
    ] {
        assert_eq!(
            output.metadata["provider_fields"][key], answer[key],
            "{key}"
        );
    }
}

#[tokio::test]
async fn prediction_errors_map_by_status_and_polls_survive_a_server_error() {
    for (status, name, expected) in [
        (
            429,
            "replicate/error_rate_limit.json",
            ErrorCode::ProviderRateLimited,
        ),
        (
            429,
            "replicate/error_rate_limit_detail_only.json",
            ErrorCode::ProviderRateLimited,
        ),
        (
            422,
            "replicate/error_invalid.json",
            ErrorCode::ProviderRefused,
        ),
        (
            401,
            "replicate/error_auth.json",
            ErrorCode::ProviderMisconfigured,
        ),
    ] {
        let (ended, _) = predict(vec![json_answer(status, name)], Modality::Images).await;
        let failure = ended.unwrap_err();
        assert_eq!(failure.error.code, expected, "{name}");
        assert_eq!(failure.spent, Spent::Nothing, "{name}: refused at creation");
        if status == 422 {
            assert_eq!(
                failure.error.details["invalid_fields"],
                parsed(name)["invalid_fields"]
            );
        }
    }
    // Reading a prediction again is safe, so a 502 while polling is tried again.
    let (ended, _) = predict(
        vec![
            json_answer(201, "replicate/create_starting.json"),
            json_answer(502, "openai/error_server.json"),
            json_answer(200, "replicate/get_succeeded_image.json"),
        ],
        Modality::Images,
    )
    .await;
    assert!(ended.is_ok());
}
