//! `GET /metrics`: the gateway's metrics in Prometheus's text format (docs/operations.md), from
//! the `metrics` facade through its Prometheus exporter. What is counted as it happens (requests,
//! plan changes, policy time, store waits) is recorded where it happens; what is a state (plans
//! pending, the mail outbox, open streams, the store's pools) is read at each scrape.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use countersign_engine::{telemetry, ApiError};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

use crate::AppState;

/// The route of approvers' decisions, whose refusals are counted by code.
const DECISIONS: &str = "/v1/plans/:id/decisions";

/// The process's recorder, installed on first use; `None` if another recorder was installed.
fn handle() -> Option<&'static PrometheusHandle> {
    static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new()
                .set_buckets(&[
                    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
                    30.0, 60.0, 300.0, 900.0, 3600.0, 14400.0, 86400.0,
                ])
                .expect("buckets are given")
                .build_recorder();
            let handle = recorder.handle();
            metrics::set_global_recorder(recorder).ok().map(|()| handle)
        })
        .as_ref()
}

/// Starts recording: a gateway that serves `/metrics` calls it before it serves anything.
pub fn install() {
    handle();
}

/// Counts and times each request by its route's template (never the path, which holds ids),
/// method and status.
pub async fn http(request: Request, next: Next) -> Response {
    // `{id}` written `:id`: braces inside a label value trip common exposition parsers.
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched".to_owned(), |p| {
            p.as_str().replace('{', ":").replace('}', "")
        });
    let method = request.method().as_str().to_owned();
    let started = Instant::now();
    let response = next.run(request).await;
    let status = response.status().as_u16().to_string();
    metrics::histogram!(
        "countersign_http_request_duration_seconds",
        "route" => route.clone(),
        "method" => method.clone(),
    )
    .record(started.elapsed().as_secs_f64());
    if route == DECISIONS {
        if let Some(error) = response.extensions().get::<ApiError>() {
            metrics::counter!("countersign_decisions_refused_total", "code" => error.code.to_string())
                .increment(1);
        }
    }
    metrics::counter!(
        "countersign_http_requests_total",
        "route" => route,
        "method" => method,
        "status" => status,
    )
    .increment(1);
    response
}

/// The exposition, with the states read now.
pub async fn serve(State(state): State<Arc<AppState>>) -> Response {
    let Some(handle) = handle() else {
        return (
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            "another metrics recorder is installed in this process\n",
        )
            .into_response();
    };
    if let Err(e) = read_states(&state).await {
        tracing::warn!(
            "metrics: the store's states could not be read: {}",
            e.message
        );
        metrics::counter!("countersign_metrics_state_errors_total").increment(1);
    }
    (
        [(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        handle.render(),
    )
        .into_response()
}

async fn read_states(state: &AppState) -> countersign_engine::ApiResult<()> {
    metrics::gauge!("countersign_event_streams_open").set(state.streams.total() as f64);
    metrics::gauge!("countersign_mcp_waits_open").set(state.waits.total() as f64);
    telemetry::record_states(&state.store, state.registry).await
}
