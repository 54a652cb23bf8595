//! The gateway over the Model Context Protocol, for agents that speak MCP rather than the HTTP
//! API: streamable HTTP at `/mcp` (the agent's bearer token on every request) and stdio (one
//! agent, authenticated at start). Both reach the engine the HTTP routes use.

mod calls;
mod http;
mod tools;

use std::sync::Arc;

use axum::http::request::Parts;
use countersign_proto::error::ErrorEnvelope;
use countersign_proto::ErrorCode;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;

pub use http::routes;
pub use tools::annotations;

use countersign_api::AppState;
use countersign_engine::accounts::{self, Agent, Caller};
use countersign_engine::{ids, ApiError, ApiResult};

const INSTRUCTIONS: &str = "Countersign previews every write before it happens. A capability tool \
    that needs a human answers with a plan waiting for approval instead of a result: call \
    countersign_wait with its plan_id until it is decided, then countersign_execute. Errors come \
    back as {success: false, error: {code, message, details}}; plan_stale means what the plan read \
    has changed: call the capability again for a fresh plan.";

#[derive(Clone)]
pub struct McpGateway {
    state: Arc<AppState>,
    /// The tools of this gateway's capabilities, made once.
    tools: Arc<[rmcp::model::Tool]>,
    /// `countersign_wait` calls open, per agent, over every session.
    /// The stdio server's agent token, checked on every call as a header would be (it may be
    /// revoked mid-session); over HTTP each request carries its own.
    token: Option<String>,
}

impl McpGateway {
    async fn agent(&self, context: &RequestContext<RoleServer>) -> ApiResult<Agent> {
        if let Some(token) = &self.token {
            return accounts::caller(&self.state.store, token)
                .await?
                .into_agent();
        }
        context
            .extensions
            .get::<Parts>()
            .and_then(|parts| parts.extensions.get::<Agent>().cloned())
            .ok_or_else(|| ApiError::new(ErrorCode::Unauthenticated, "No agent token was given."))
    }

    async fn call(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        trace_id: &str,
    ) -> ApiResult<calls::Answer> {
        let agent = self.agent(context).await?;
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        match request.name.as_ref() {
            tools::EXECUTE => calls::execute(&self.state, &agent, arguments, trace_id).await,
            tools::WAIT => {
                let cancelled = context.ct.cancelled();
                calls::wait(&self.state, &agent, arguments, cancelled).await
            }
            name => {
                let capability = self.state.registry.get(name).ok_or_else(|| {
                    ApiError::new(ErrorCode::NotFound, format!("No tool is called {name}."))
                })?;
                calls::capability(&self.state, &agent, capability, arguments, trace_id).await
            }
        }
    }
}

impl ServerHandler for McpGateway {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "countersign-gateway",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    /// Every failure is a tool result in the protocol's error contract, never a JSON-RPC error:
    /// the session goes on, and the model reads why.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let trace_id = ids::random_id("trc_", 8);
        // A name no tool has is counted as `unknown`: agents choose it, and labels stay few.
        let tool = match request.name.as_ref() {
            tools::EXECUTE => tools::EXECUTE,
            tools::WAIT => tools::WAIT,
            name => self.state.registry.get(name).map_or("unknown", |c| c.id()),
        };
        let (result, outcome) = match self.call(request, &context, &trace_id).await {
            Ok(answer) => {
                let mut result = CallToolResult::structured(answer.structured);
                result.content = vec![ContentBlock::text(answer.text)];
                (result, "ok".to_owned())
            }
            Err(error) => {
                let code = error.code.to_string();
                (refusal(error, &trace_id), code)
            }
        };
        metrics::counter!("countersign_mcp_calls_total", "tool" => tool, "outcome" => outcome)
            .increment(1);
        Ok(result.into())
    }
}

fn refusal(error: ApiError, trace_id: &str) -> CallToolResult {
    let text = format!("{}: {}", error.code, error.message);
    let envelope = ErrorEnvelope::new(error.code, error.message, error.details, trace_id);
    let mut result = CallToolResult::structured_error(
        serde_json::to_value(envelope).unwrap_or_else(|_| Value::Object(Default::default())),
    );
    result.content = vec![ContentBlock::text(text)];
    result
}

/// Serves MCP on stdin/stdout for the agent holding `token` until the client closes the pipe.
/// A token that is not an agent's is refused before anything is served.
pub async fn serve_stdio(state: Arc<AppState>, token: &str) -> anyhow::Result<()> {
    accounts::caller(&state.store, token)
        .await
        .and_then(Caller::into_agent)
        .map_err(|e| anyhow::anyhow!("{}: {}", e.code, e.message))?;
    let server = McpGateway {
        tools: tools::all(state.registry, state.policy.is_builtin()),
        state,
        token: Some(token.to_owned()),
    };
    server
        .serve(rmcp::transport::stdio())
        .await?
        .waiting()
        .await?;
    Ok(())
}
