//! How the outbox takes each kind of answer a gateway may give a decision: a code this console
//! knows or does not know, `internal`, and a body that is no error envelope at all. Against a
//! loopback server that answers what each case needs.

use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::post;
use axum::Router;
use countersign_console::client::GatewayClient;
use countersign_console::error::ConsoleError;
use countersign_console::journal::{Delivery, Journal};
use countersign_proto::decision::Decision;
use countersign_proto::dsse;
use ed25519_dalek::SigningKey;

type Answer = Arc<Mutex<(StatusCode, &'static str)>>;

async fn gateway(answer: Answer) -> String {
    let router = Router::new().route(
        "/v1/plans/{id}/decisions",
        post(move || {
            let answer = answer.clone();
            async move {
                let (status, body) = *answer.lock().unwrap();
                (status, [("content-type", "application/json")], body).into_response()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    url
}

async fn one_entry(dir: &tempfile::TempDir) -> (Journal, i64) {
    let journal = Journal::open(&dir.path().join("journal.db")).await.unwrap();
    let key = SigningKey::from_bytes(&[7; 32]);
    let envelope = dsse::sign(&key, "key_1", "application/vnd.test", b"{}");
    let id = journal
        .record("gw_1", "plan_1", Decision::Approve, &envelope, "pk")
        .await
        .unwrap();
    (journal, id)
}

const NEWER: &str = r#"{"success": false, "error": {"code": "plan_frozen",
    "message": "Plan plan_1 is frozen by an administrator.", "details": {"until": "tomorrow"}},
    "provider": "system", "metadata": {"trace_id": "trc_1"}}"#;

#[tokio::test]
async fn a_code_this_console_does_not_know_is_a_refusal_with_its_message() {
    let answer: Answer = Arc::new(Mutex::new((StatusCode::CONFLICT, NEWER)));
    let client = GatewayClient::new(&gateway(answer).await, Some("t".into())).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (journal, id) = one_entry(&dir).await;

    let Delivery::Refused(error) = journal.deliver(&client, id).await.unwrap() else {
        panic!("a 409 with a well-formed error is the gateway's answer");
    };
    assert_eq!(error.code(), "plan_frozen");
    assert_eq!(
        error.view().message,
        "Plan plan_1 is frozen by an administrator."
    );
    let entry = journal.get(id).await.unwrap();
    assert_eq!(entry.state, "refused");
    let kept = entry.answer.unwrap();
    assert_eq!(kept["code"], "plan_frozen");
    assert_eq!(kept["details"]["until"], "tomorrow");
}

#[tokio::test]
async fn internal_unknown_5xx_and_garbled_answers_keep_the_entry_pending() {
    let answer: Answer = Arc::new(Mutex::new((StatusCode::OK, "")));
    let client = GatewayClient::new(&gateway(answer.clone()).await, Some("t".into())).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (journal, id) = one_entry(&dir).await;
    let internal = r#"{"success": false, "error": {"code": "internal", "message": "x"},
        "provider": "system", "metadata": {"trace_id": "t"}}"#;
    let newer_5xx = r#"{"success": false, "error": {"code": "store_offline", "message": "x"},
        "provider": "system", "metadata": {"trace_id": "t"}}"#;
    let cases = [
        (StatusCode::INTERNAL_SERVER_ERROR, internal),
        (StatusCode::SERVICE_UNAVAILABLE, newer_5xx),
        (StatusCode::CONFLICT, "<html>proxy error</html>"),
        (
            StatusCode::CONFLICT,
            r#"{"error": {"code": "Not A Code!", "message": "x"}}"#,
        ),
        (StatusCode::OK, r#"{"plan_id": 5}"#),
    ];
    for (n, (status, body)) in cases.into_iter().enumerate() {
        *answer.lock().unwrap() = (status, body);
        let delivery = journal.deliver(&client, id).await.unwrap();
        assert!(
            matches!(delivery, Delivery::Queued(_)),
            "{status} {body}: stays queued"
        );
        let entry = journal.get(id).await.unwrap();
        assert_eq!(entry.state, "pending", "{body}");
        assert_eq!(entry.attempts as usize, n + 1);
    }
}

#[tokio::test]
async fn a_known_code_stays_typed() {
    let body = r#"{"success": false, "error": {"code": "plan_stale", "message": "moved"},
        "provider": "system", "metadata": {"trace_id": "t"}}"#;
    let answer: Answer = Arc::new(Mutex::new((StatusCode::CONFLICT, body)));
    let client = GatewayClient::new(&gateway(answer).await, Some("t".into())).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (journal, id) = one_entry(&dir).await;
    let Delivery::Refused(error) = journal.deliver(&client, id).await.unwrap() else {
        panic!("refused");
    };
    assert!(matches!(error, ConsoleError::Gateway { .. }));
    assert_eq!(error.code(), "plan_stale");
}
