//! Provider keys come from the environment or the OS keyring (Secret Service here, under
//! `tests/with-keyring.sh` as `make test` runs it), are sent only as the bearer header, and are
//! never printed. One test, since it sets process environment variables.

use std::sync::{Arc, Mutex};

use axum::http::header;
use countersign_providers::{openai, Endpoint, Provider, Providers, KEYRING_SERVICE};
use serde_json::json;

/// A chat endpoint that answers the documented success and remembers the bearer header.
async fn chat_server() -> (String, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let keep = seen.clone();
    let body = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/providers/openai/chat_success.json"
    ))
    .unwrap();
    let handler = move |request: axum::extract::Request| {
        let (keep, body) = (keep.clone(), body.clone());
        async move {
            let auth = request.headers().get(header::AUTHORIZATION).cloned();
            keep.lock().unwrap().push(
                auth.and_then(|v| v.to_str().ok().map(str::to_owned))
                    .unwrap_or_default(),
            );
            ([(header::CONTENT_TYPE, "application/json")], body)
        }
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        axum::serve(listener, axum::Router::new().fallback(handler))
            .await
            .unwrap()
    });
    (url, seen)
}

async fn call_with(endpoint: Endpoint) -> Providers {
    let providers = Providers::new(Some(endpoint), None);
    let request = json!({"model": "gpt-4o-mini", "max_tokens": 8,
                         "messages": [{"role": "user", "content": "Hi"}]});
    openai::chat(&providers, &request).await.unwrap();
    providers
}

#[tokio::test]
async fn keys_come_from_the_environment_or_the_keyring_and_are_never_printed() {
    let (url, seen) = chat_server().await;
    let entry = keyring::Entry::new(KEYRING_SERVICE, Provider::OpenAi.name()).unwrap();
    std::env::remove_var(Provider::OpenAi.key_variable());

    let _ = entry.delete_credential();
    let missing = Endpoint::with_stored_key(Provider::OpenAi, &url)
        .unwrap_err()
        .to_string();
    assert!(missing.contains("COUNTERSIGN_OPENAI_API_KEY"), "{missing}");
    assert!(missing.contains(KEYRING_SERVICE), "{missing}");

    entry.set_password("sk-from-the-keyring").unwrap();
    let providers = call_with(Endpoint::with_stored_key(Provider::OpenAi, &url).unwrap()).await;
    assert!(!format!("{providers:?}").contains("sk-from-the-keyring"));

    std::env::set_var(Provider::OpenAi.key_variable(), "sk-from-the-environment");
    call_with(Endpoint::with_stored_key(Provider::OpenAi, &url).unwrap()).await;
    std::env::remove_var(Provider::OpenAi.key_variable());
    entry.delete_credential().unwrap();

    assert_eq!(
        *seen.lock().unwrap(),
        [
            "Bearer sk-from-the-keyring",
            "Bearer sk-from-the-environment"
        ]
    );
}
