//! The gateway over the Model Context Protocol, for agents that speak MCP rather than the HTTP
//! API: streamable HTTP at `/mcp` (the agent's bearer token on every request) and stdio (one
//! agent, authenticated at start). Both reach the engine the HTTP routes use.

mod calls;
mod elicit;
mod http;
mod tasks;
mod tools;

use std::sync::Arc;

use axum::http::request::Parts;
use countersign_proto::ErrorCode;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, GetTaskParams, GetTaskResult,
    Implementation, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities,
    ServerConfig,
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
    countersign_wait with its plan_id until it is decided, then countersign_execute (a client \
    that declares the tasks extension gets a task instead, which completes with the result once \
    a person approves). Errors come back as {success: false, error: {code, message, details}}; plan_stale means what the plan read \
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
    ) -> ApiResult<CallToolResponse> {
        let agent = self.agent(context).await?;
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let called = match request.name.as_ref() {
            tools::EXECUTE => calls::execute(&self.state, &agent, arguments, trace_id)
                .await?
                .into(),
            tools::WAIT => {
                let cancelled = context.ct.cancelled();
                calls::wait(&self.state, &agent, arguments, cancelled)
                    .await?
                    .into()
            }
            name => {
                let capability = self.state.registry.get(name).ok_or_else(|| {
                    ApiError::new(ErrorCode::NotFound, format!("No tool is called {name}."))
                })?;
                match &request.request_state {
                    Some(plan_id) => {
                        calls::resume(&self.state, &agent, capability, arguments, plan_id).await?
                    }
                    None => {
                        calls::capability(&self.state, &agent, capability, arguments, trace_id)
                            .await?
                    }
                }
            }
        };
        match called {
            calls::Called::Answer(answer) => Ok(calls::tool_result(answer).into()),
            calls::Called::Waiting(waiting) => self.waiting(&agent, waiting, context).await,
        }
    }

    /// A plan that waits for people, as the client can hear of it: its user asked to open the
    /// plan (once), then a task for a client that takes tasks, today's answer for any other.
    async fn waiting(
        &self,
        agent: &Agent,
        waiting: calls::Waiting,
        context: &RequestContext<RoleServer>,
    ) -> ApiResult<CallToolResponse> {
        let capabilities = context.client_capabilities();
        if elicit::declared(capabilities.as_ref()) && !waiting.resumed {
            if speaks_2026(context) {
                return Ok(elicit::within(&waiting.plan).into());
            }
            // Only stdio keeps a channel back to the client; over HTTP every request stands alone.
            if self.token.is_some() {
                elicit::send(context, &waiting.plan);
            }
        }
        // The tasks extension is 2026-07-28's: an earlier session that declares it is served
        // as every session of its version is.
        if speaks_2026(context) && capabilities.is_some_and(|c| c.supports_tasks()) {
            return Ok(tasks::created(&self.state, agent, &waiting.plan.plan_id)
                .await?
                .into());
        }
        Ok(calls::tool_result(waiting.answer()).into())
    }
}

impl ServerHandler for McpGateway {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
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
        let (response, outcome) = match self.call(request, &context, &trace_id).await {
            Ok(response) => {
                let outcome = match &response {
                    CallToolResponse::Task(_) => "task",
                    CallToolResponse::InputRequired(_) => "input_required",
                    _ => "ok",
                };
                (response, outcome.to_owned())
            }
            Err(error) => {
                let code = error.code.to_string();
                (calls::refusal(error, &trace_id).into(), code)
            }
        };
        metrics::counter!("countersign_mcp_calls_total", "tool" => tool, "outcome" => outcome)
            .increment(1);
        Ok(response)
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let agent = self.agent(&context).await.map_err(unauthenticated)?;
        let trace_id = ids::random_id("trc_", 8);
        tasks::get(&self.state, &agent, &request.task_id, &trace_id).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let agent = self.agent(&context).await.map_err(unauthenticated)?;
        tasks::cancel(&self.state, &agent, &request.task_id).await
    }
}

/// Whether the request speaks 2026-07-28 or later: the server asks the client within a call, and
/// answers with tasks.
fn speaks_2026(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// Over stdio a revoked token ends every request here; over HTTP none reaches this far.
fn unauthenticated(error: ApiError) -> ErrorData {
    ErrorData::invalid_request(
        format!("{}: {}", error.code, error.message),
        Some(serde_json::json!({"code": error.code})),
    )
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
