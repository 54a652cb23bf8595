//! The outbox against a loopback server that answers what each case needs and keeps every body it
//! receives: each kind of answer (a code this console knows or not, `internal`, a body that is no
//! error envelope), resends byte for byte across a restart, and two journals on one file.

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::post;
use axum::Router;
use countersign_console::client::GatewayClient;
use countersign_console::error::ConsoleError;
use countersign_console::signing::journal::{Delivery, Journal};
use countersign_proto::decision::Decision;
use countersign_proto::dsse;
use ed25519_dalek::SigningKey;

type Answer = Arc<Mutex<(StatusCode, &'static str)>>;
type Received = Arc<Mutex<Vec<Bytes>>>;

async fn gateway(answer: Answer) -> String {
    gateway_keeping(answer, Received::default()).await
}

/// A decisions endpoint answering `answer`, keeping each body in `received`.
async fn gateway_keeping(answer: Answer, received: Received) -> String {
    let router = Router::new().route(
        "/v1/plans/{id}/decisions",
        post(move |body: Bytes| {
            let (answer, received) = (answer.clone(), received.clone());
            async move {
                received.lock().unwrap().push(body);
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
async fn retryable_unknown_5xx_and_garbled_answers_keep_the_entry_pending() {
    let answer: Answer = Arc::new(Mutex::new((StatusCode::OK, "")));
    let client = GatewayClient::new(&gateway(answer.clone()).await, Some("t".into())).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (journal, id) = one_entry(&dir).await;
    let internal = r#"{"success": false, "error": {"code": "internal", "message": "x"},
        "provider": "system", "metadata": {"trace_id": "t"}}"#;
    let newer_5xx = r#"{"success": false, "error": {"code": "store_offline", "message": "x"},
        "provider": "system", "metadata": {"trace_id": "t"}}"#;
    let full = r#"{"success": false, "error": {"code": "storage_unavailable", "message": "x"},
        "provider": "system", "metadata": {"trace_id": "t"}}"#;
    let limited = r#"{"success": false, "error": {"code": "rate_limited", "message": "x"},
        "provider": "system", "metadata": {"trace_id": "t"}}"#;
    let cases = [
        (StatusCode::INTERNAL_SERVER_ERROR, internal),
        (StatusCode::SERVICE_UNAVAILABLE, full),
        (StatusCode::TOO_MANY_REQUESTS, limited),
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

const ACCEPTED: &str = r#"{"plan_id": "plan_1", "status": "approved",
    "approvals": {"required": 1, "received": []}}"#;

#[tokio::test]
async fn a_restart_between_writing_and_sending_sends_the_same_bytes_once_answered() {
    let answer: Answer = Arc::new(Mutex::new((StatusCode::BAD_GATEWAY, "<html>down</html>")));
    let received = Received::default();
    let url = gateway_keeping(answer.clone(), received.clone()).await;
    let client = GatewayClient::new(&url, Some("t".into())).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (journal, id) = one_entry(&dir).await;
    let written = journal.get(id).await.unwrap().envelope;
    // The process ends after writing, before sending.
    drop(journal);

    let journal = Journal::open(&dir.path().join("journal.db")).await.unwrap();
    let flushed = journal.flush(&client, "gw_1").await.unwrap();
    assert_eq!(flushed.waiting, 1, "a 502 proxy page keeps it pending");
    drop(journal);
    let journal = Journal::open(&dir.path().join("journal.db")).await.unwrap();
    *answer.lock().unwrap() = (StatusCode::OK, ACCEPTED);
    let flushed = journal.flush(&client, "gw_1").await.unwrap();
    assert_eq!(flushed.answered, 1);
    let flushed = journal.flush(&client, "gw_1").await.unwrap();
    assert_eq!((flushed.answered, flushed.waiting), (0, 0), "settled");

    let bodies = received.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2, "sent once per flush until answered");
    assert_eq!(bodies[0], bodies[1], "resent byte for byte");
    let sent: serde_json::Value = serde_json::from_slice(&bodies[0]).unwrap();
    assert_eq!(sent, written, "the envelope written before the restart");
    let entry = journal.get(id).await.unwrap();
    assert_eq!((entry.state.as_str(), entry.attempts), ("answered", 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_journals_on_one_file_settle_an_entry_once() {
    let answer: Answer = Arc::new(Mutex::new((StatusCode::OK, ACCEPTED)));
    let received = Received::default();
    let url = gateway_keeping(answer, received.clone()).await;
    let client = GatewayClient::new(&url, Some("t".into())).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (first, id) = one_entry(&dir).await;
    let second = Journal::open(&dir.path().join("journal.db")).await.unwrap();

    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let mut tasks = tokio::task::JoinSet::new();
    for journal in [first, second] {
        let (barrier, client) = (barrier.clone(), client.clone());
        tasks.spawn(async move {
            barrier.wait().await;
            let delivery = journal.deliver(&client, id).await.unwrap();
            (journal, matches!(delivery, Delivery::Answered(_)))
        });
    }
    let mut journals = Vec::new();
    while let Some(done) = tasks.join_next().await {
        let (journal, answered) = done.unwrap();
        assert!(answered);
        journals.push(journal);
    }
    let bodies = received.lock().unwrap().clone();
    assert!(
        bodies.windows(2).all(|w| w[0] == w[1]),
        "whoever sent it, the same bytes"
    );
    let entry = journals[0].get(id).await.unwrap();
    assert_eq!(entry.state, "answered");
    assert_eq!(entry.attempts, 1, "settled once");
}
