//! `/mcp` over streamable HTTP. The bearer token is checked before the MCP layer sees the
//! request, so a wrong token is an HTTP 401 in the protocol's error contract and no session
//! starts; the agent it names rides along in the request's extensions.

use std::sync::Arc;

use axum::extract::Request;
use axum::http::{header, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use countersign_api::{resolved, AppState, HttpResult, BODY_LIMIT};
use countersign_engine::ApiError;
use countersign_proto::strict_json;
use countersign_proto::ErrorCode;

use super::{tools, McpGateway};

/// Stateless: every request stands alone (the engine keeps all state in the store), so any
/// instance sharing the database can answer it. Any `Host` is accepted: a page that rebinds a
/// name to this address still has no agent token to send.
pub fn routes(state: Arc<AppState>) -> Router<Arc<AppState>> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_max_request_body_bytes(BODY_LIMIT)
        .disable_allowed_hosts();
    let tools = tools::all(state.registry, state.policy.is_builtin());
    let service = StreamableHttpService::new(
        move || {
            Ok(McpGateway {
                tools: tools.clone(),
                state: state.clone(),
                token: None,
            })
        },
        Arc::new(NeverSessionManager::default()),
        config,
    );
    Router::new()
        .route_service("/mcp", service)
        .route_layer(middleware::from_fn(authenticate))
}

/// The agent's token checked, and a body that names a key twice refused as the HTTP API refuses
/// one: a JSON-RPC message with two meanings is never handed to the MCP layer. A body that is not
/// a JSON-RPC message at all is answered as JSON-RPC says (rmcp would answer it in plain text).
async fn authenticate(mut request: Request, next: Next) -> HttpResult<Response> {
    let agent = resolved(request.headers(), request.extensions())?.into_agent()?;
    request.extensions_mut().insert(agent);
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, BODY_LIMIT)
        .await
        .map_err(|_| ApiError::new(ErrorCode::PayloadTooLarge, "The request body is too large."))?;
    if !bytes.is_empty() {
        strict_json::check(&bytes).map_err(|why| {
            ApiError::validation("", format!("The request body is ambiguous: {why}."))
        })?;
    }
    if parts.method == Method::POST {
        if let Some(refusal) = unreadable(&bytes) {
            return Ok(refusal);
        }
    }
    Ok(next
        .run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await)
}

/// JSON-RPC's answer to a body that is not JSON (`-32700`, parse error) or not a message a client
/// may send (`-32600`, invalid request): HTTP 400 with the JSON-RPC error, its id null since none
/// can be read.
fn unreadable(bytes: &[u8]) -> Option<Response> {
    let (code, message) = match serde_json::from_slice::<serde_json::Value>(bytes) {
        Err(e) => (-32700, format!("Parse error: {e}")),
        Ok(value) => match serde_json::from_value::<ClientJsonRpcMessage>(value) {
            Err(e) => (-32600, format!("Invalid request: {e}")),
            Ok(_) => return None,
        },
    };
    let body = serde_json::json!({"jsonrpc": "2.0", "id": null,
                                  "error": {"code": code, "message": message}});
    Some(
        (
            StatusCode::BAD_REQUEST,
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response(),
    )
}
