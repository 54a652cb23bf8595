//! The spans of one approved execution, through the same layer `serve` sends over OTLP, into the
//! SDK's in-memory exporter: one trace per request, parent-linked, with the execution's GenAI
//! attributes, and no params, token or person in any of them.

use axum::http::StatusCode;
use opentelemetry::trace::SpanId;
use opentelemetry::Value;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing_subscriber::layer::SubscriberExt as _;

use crate::common::{approve_by, retention, Gateway, RETENTION};

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

fn text(span: &SpanData, key: &str) -> String {
    attribute(span, key)
        .unwrap_or_else(|| panic!("{} has no {key}: {:?}", span.name, span.attributes))
        .as_str()
        .into_owned()
}

fn named<'a>(spans: &'a [SpanData], name: &str) -> Vec<&'a SpanData> {
    spans.iter().filter(|s| s.name == name).collect()
}

/// `wait`'s answer, or a failed test after ten seconds.
async fn within<T>(wait: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(std::time::Duration::from_secs(10), wait)
        .await
        .expect("the invoke's trace closes within ten seconds")
}

fn children<'a>(spans: &'a [SpanData], parent: &SpanData, name: &str) -> Vec<&'a SpanData> {
    let id: SpanId = parent.span_context.span_id();
    named(spans, name)
        .into_iter()
        .filter(|s| s.parent_span_id == id)
        .filter(|s| s.span_context.trace_id() == parent.span_context.trace_id())
        .collect()
}

#[tokio::test]
async fn an_approved_execution_is_traced_parent_linked_with_its_plan_and_no_secret() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    // The process's subscriber (nextest runs each test in a process of its own): sqlx's SQLite
    // workers end the spans of the statements they ran on threads of their own.
    let subscriber =
        tracing_subscriber::registry().with(countersign_gateway::telemetry::spans(&provider));
    tracing::subscriber::set_global_default(subscriber).expect("one subscriber per test process");

    let (gw, dana) = Gateway::with_approver("Dana").await;
    let plan = gw.preview(RETENTION, retention("prj_184", 14)).await;
    approve_by(&gw, &plan, &[&dana]).await;
    let executed = gw.execute(&plan).await;
    assert_eq!(executed.status, StatusCode::OK, "{}", executed.body);
    // A span ends when its last handle goes, and sqlx's SQLite workers hold the span a statement
    // ran in until they are done with its command, which may be just after the answer.
    let spans = within(async {
        loop {
            provider.force_flush().unwrap();
            let spans = exporter.get_finished_spans().unwrap();
            if !named(&spans, "POST /v1/capabilities/{id}/invoke").is_empty() {
                return spans;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;

    let invokes = named(&spans, "POST /v1/capabilities/{id}/invoke");
    let [invoke] = invokes[..] else {
        panic!("{} invoke requests traced", invokes.len())
    };
    assert_eq!(
        invoke.parent_span_id,
        SpanId::INVALID,
        "a request starts its trace"
    );
    assert_eq!(
        text(invoke, "countersign.trace_id"),
        executed.body["metadata"]["trace_id"].as_str().unwrap()
    );
    assert_eq!(text(invoke, "http.route"), "/v1/capabilities/{id}/invoke");
    assert_eq!(
        attribute(invoke, "http.response.status_code"),
        Some(&Value::I64(200))
    );
    let execution = format!("execute_tool {RETENTION}");
    let executions = children(&spans, invoke, &execution);
    let [execution] = executions[..] else {
        panic!("{} executions in the invoke's trace", executions.len())
    };
    assert_eq!(text(execution, "gen_ai.operation.name"), "execute_tool");
    assert_eq!(text(execution, "gen_ai.tool.name"), RETENTION);
    let plan_id = plan["plan_id"].as_str().unwrap();
    assert_eq!(text(execution, "countersign.plan.id"), plan_id);
    assert_eq!(text(execution, "gen_ai.tool.call.id"), plan_id);
    assert_eq!(
        text(execution, "countersign.plan.digest"),
        plan["plan_digest"].as_str().unwrap()
    );
    let decisions = text(execution, "countersign.decision.ids");
    let decided: i64 = sqlx::query_scalar("SELECT id FROM decisions WHERE plan_id = $1")
        .bind(plan_id)
        .fetch_one(gw.state.store.pool())
        .await
        .unwrap();
    assert_eq!(decisions, decided.to_string());
    assert!(
        !children(&spans, invoke, "store.write").is_empty(),
        "the execution's write is in the invoke's trace"
    );
    let previews = named(&spans, "POST /v1/capabilities/{id}/dry_run");
    let [preview] = previews[..] else {
        panic!("{} previews traced", previews.len())
    };
    let evaluations = children(&spans, preview, "policy.evaluate");
    assert_eq!(evaluations.len(), 1, "the preview's policy evaluation");
    assert!(text(evaluations[0], "countersign.policy.digest").starts_with("sha256:"));
    assert_ne!(
        preview.span_context.trace_id(),
        invoke.span_context.trace_id()
    );

    for span in &spans {
        for kv in &span.attributes {
            let value = kv.value.as_str();
            for secret in [
                &*gw.agent,
                &*dana.token,
                "prj_184",
                "retention_days",
                "Dana",
            ] {
                assert!(
                    !value.contains(secret),
                    "{}'s {} carries {secret}: {value}",
                    span.name,
                    kv.key
                );
            }
        }
    }
}

/// One export a collector received: its content type and body.
type Export = (String, Vec<u8>);

/// `serve --otlp-endpoint`: what reaches a collector, here an in-process HTTP receiver. OTLP's
/// protobuf holds strings as they are, so the span's name is read from the bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_sends_its_spans_to_the_otlp_endpoint() {
    use std::sync::{Arc, Mutex};

    use axum::routing::post;

    let received: Arc<Mutex<Vec<Export>>> = Arc::default();
    let collector = axum::Router::new().route(
        "/v1/traces",
        post({
            let received = received.clone();
            move |headers: axum::http::HeaderMap, body: axum::body::Bytes| async move {
                let kind = headers["content-type"].to_str().unwrap_or("").to_owned();
                received.lock().unwrap().push((kind, body.to_vec()));
                StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}/v1/traces", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, collector).await });

    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("gw.db").display());
    let (mut server, line) = crate::cli::serving(
        &["--addr", "127.0.0.1:0", "--database", &database],
        &[("COUNTERSIGN_OTLP_ENDPOINT", &endpoint)],
    );
    let url = line.trim().rsplit(' ').next().unwrap().to_owned();
    let refused = reqwest::get(format!("{url}/v1/gateway")).await.unwrap();
    assert_eq!(refused.status(), 401);
    let stopped = std::process::Command::new("kill")
        .args(["-INT", &server.id().to_string()])
        .status()
        .unwrap();
    assert!(stopped.success());
    let exit = tokio::task::spawn_blocking(move || server.wait().unwrap())
        .await
        .unwrap();
    assert!(exit.success(), "{exit:?}");

    let received = received.lock().unwrap();
    assert!(!received.is_empty(), "no export reached the collector");
    let contains = |needle: &str| {
        received
            .iter()
            .any(|(_, body)| body.windows(needle.len()).any(|w| w == needle.as_bytes()))
    };
    assert!(received
        .iter()
        .all(|(kind, _)| kind == "application/x-protobuf"));
    assert!(contains("GET /v1/gateway"), "the request's span");
    assert!(contains("countersign-gateway"), "the service's name");
}
