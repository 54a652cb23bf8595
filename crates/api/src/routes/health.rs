//! Whether the process is up (`/healthz`) and whether it can serve (`/readyz`), for a supervisor
//! or a load balancer: no token, no rate limit, no store write (docs/operations.md).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use crate::AppState;

/// How long the store may take to answer a readiness check before it counts as unreachable.
const STORE_WITHIN: Duration = Duration::from_secs(2);
/// How long a part a pack needs may take to answer.
const PART_WITHIN: Duration = Duration::from_secs(2);

/// One part a gateway needs in order to serve.
#[derive(Debug, Serialize, ToSchema)]
pub struct Part {
    /// `store`, `migrations`, `policy`, or a part a pack needs (`mcp:files`, an upstream).
    pub part: String,
    pub ready: bool,
    /// What was found: whether the policy is the built-in one, and its digest; the migrations
    /// missing; never the store's error, which may name hosts (it goes to the log).
    pub detail: String,
}

/// Every part, and whether all are ready.
#[derive(Debug, Serialize, ToSchema)]
pub struct Readiness {
    pub ready: bool,
    pub parts: Vec<Part>,
}

/// The process answers.
#[utoipa::path(get, path = "/healthz", operation_id = "healthz", security(()),
    responses((status = 200, description = "The process is up.", body = String)))]
pub async fn live() -> &'static str {
    "ok\n"
}

/// The store answers and has every migration this binary carries, the policy is loaded, and
/// every outside part a pack needs (an MCP upstream) answers; 503 names each part not ready.
#[utoipa::path(get, path = "/readyz", operation_id = "readyz", security(()),
    responses((status = 200, body = Readiness), (status = 503, body = Readiness)))]
pub async fn ready(State(state): State<Arc<AppState>>) -> (StatusCode, Json<Readiness>) {
    let mut parts = Vec::with_capacity(3);
    match state.store.readiness(STORE_WITHIN).await {
        Ok(missing) => {
            parts.push(part("store", true, "answers".into()));
            let detail = match missing.is_empty() {
                true => "all applied".into(),
                false => format!("not applied: {missing:?}"),
            };
            parts.push(part("migrations", missing.is_empty(), detail));
        }
        Err(e) => {
            // The answer goes to anyone who asks: the error, which may name hosts, to the log.
            tracing::warn!("readiness: the store does not answer: {e}");
            parts.push(part("store", false, "does not answer".into()));
            parts.push(part(
                "migrations",
                false,
                "unknown: the store does not answer".into(),
            ));
        }
    }
    // A policy that does not load stops the gateway before it listens; serving, it is loaded.
    let policy = &state.policy;
    let origin = match policy.is_builtin() {
        true => "built-in",
        false => "loaded",
    };
    parts.push(part(
        "policy",
        true,
        format!("{origin}, {}", policy.digest()),
    ));
    for probe in state.registry.probes() {
        let (ready, detail) = match tokio::time::timeout(PART_WITHIN, probe.check()).await {
            Ok(Ok(detail)) => (true, detail),
            Ok(Err(detail)) => (false, detail),
            Err(_) => (
                false,
                format!("no answer within {} s", PART_WITHIN.as_secs()),
            ),
        };
        parts.push(Part {
            part: probe.part(),
            ready,
            detail,
        });
    }
    let ready = parts.iter().all(|p| p.ready);
    let status = match ready {
        true => StatusCode::OK,
        false => StatusCode::SERVICE_UNAVAILABLE,
    };
    (status, Json(Readiness { ready, parts }))
}

fn part(part: &str, ready: bool, detail: String) -> Part {
    Part {
        part: part.to_owned(),
        ready,
        detail,
    }
}
