//! One upstream MCP server: its connection (re-opened after a failure, with backoff), the tools
//! it listed when the gateway started, and the input-schema digest each tool has now (read
//! again whenever the server says its tool list changed).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use countersign_proto::digest;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, JsonObject, Tool};
use rmcp::service::{NotificationContext, Peer, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};

use crate::hints::Hints;
use crate::spec::{Spec, Target};

/// The longest wait before a failed upstream is tried again.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
const FIRST_BACKOFF: Duration = Duration::from_millis(500);

/// A tool as the upstream listed it at start.
pub struct Listed {
    pub tool: Tool,
    /// `sha256` of the canonical JSON of its input schema.
    pub digest: String,
    pub hints: Hints,
}

/// Tool name to the digest of its input schema, as the upstream lists them now.
type Current = Arc<RwLock<HashMap<String, String>>>;

pub struct Upstream {
    name: &'static str,
    spec: Spec,
    listed: Vec<Listed>,
    current: Current,
    link: tokio::sync::Mutex<Link>,
}

struct Link {
    service: Option<RunningService<RoleClient, Listener>>,
    retry_at: Instant,
    backoff: Duration,
}

/// Why a read through one of the upstream's read-only tools gave nothing.
pub enum Unread {
    /// The upstream answered with an error: it cannot read that (outside its reach, missing).
    Refused(String),
    /// The upstream did not answer.
    Unavailable(String),
}

/// How long an adapter's read may take.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// How a call to the upstream ended, when it did not answer.
#[derive(Debug)]
pub enum CallError {
    /// Nothing reached the upstream: the call may be made again.
    NotSent(String),
    /// The upstream refused the request as a protocol error (unknown tool, bad arguments).
    Refused(String),
    /// The request may have reached the upstream and done its work.
    Lost(String),
}

impl Upstream {
    /// Connects to the upstream `spec` names and reads its tools; refused when it cannot be
    /// reached or lists no tools, so a gateway never starts with an upstream it cannot serve.
    pub async fn connect(spec: Spec) -> Result<Arc<Upstream>, String> {
        let current = Current::default();
        let service = open(&spec, Listener(current.clone())).await?;
        let tools = service
            .list_all_tools()
            .await
            .map_err(|e| format!("the MCP upstream {} did not list its tools: {e}", spec.name))?;
        let listed: Vec<Listed> = tools
            .into_iter()
            .map(|tool| Listed {
                digest: schema_digest(&tool),
                hints: Hints::of(tool.annotations.as_ref()),
                tool,
            })
            .collect();
        *current.write().expect("the tool list's lock") = listed
            .iter()
            .map(|l| (l.tool.name.to_string(), l.digest.clone()))
            .collect();
        tracing::info!(upstream = %spec.name, tools = listed.len(), "MCP upstream connected");
        Ok(Arc::new(Upstream {
            // One per upstream for the process: capability ids and providers name it.
            name: Box::leak(spec.name.clone().into_boxed_str()),
            spec,
            listed,
            current,
            link: tokio::sync::Mutex::new(Link {
                service: Some(service),
                retry_at: Instant::now(),
                backoff: FIRST_BACKOFF,
            }),
        }))
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    pub fn tools(&self) -> &[Listed] {
        &self.listed
    }

    /// The digest of `tool`'s input schema as the upstream lists it now; `None` once it is gone.
    pub fn digest_now(&self, tool: &str) -> Option<String> {
        self.current
            .read()
            .expect("the tool list's lock")
            .get(tool)
            .cloned()
    }

    /// Whether the upstream is connected now, trying once to connect again if it is not and its
    /// backoff has passed; why not, if it is not.
    pub async fn connected(&self) -> Result<(), String> {
        self.peer().await.map(drop)
    }

    /// Calls `tool` with `arguments`, waiting at most `timeout` for its answer.
    pub async fn call(
        &self,
        tool: &str,
        arguments: JsonObject,
        timeout: Duration,
    ) -> Result<CallToolResult, CallError> {
        let peer = self.peer().await.map_err(CallError::NotSent)?;
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = Some(arguments);
        match tokio::time::timeout(timeout, peer.call_tool(params)).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(ServiceError::McpError(e))) => Err(CallError::Refused(e.message.to_string())),
            Ok(Err(ServiceError::TransportSend(e))) => Err(CallError::NotSent(format!(
                "the request could not be sent to {}: {e}",
                self.name
            ))),
            Ok(Err(e)) => Err(CallError::Lost(format!(
                "{} did not answer: {e}",
                self.name
            ))),
            Err(_) => Err(CallError::Lost(format!(
                "{} did not answer within {} s",
                self.name,
                timeout.as_secs()
            ))),
        }
    }

    /// Whether the upstream lists `tool` as read-only, taking every one of `params`.
    pub fn reads_with(&self, tool: &str, params: &[&str]) -> bool {
        self.listed.iter().any(|listed| {
            let properties = listed.tool.input_schema.get("properties");
            listed.tool.name == tool
                && listed.hints.read_only
                && params
                    .iter()
                    .all(|p| properties.and_then(|ps| ps.get(*p)).is_some())
        })
    }

    /// The text `tool`, one of the upstream's read-only tools, answers for `arguments`.
    pub async fn read(&self, tool: &str, arguments: serde_json::Value) -> Result<String, Unread> {
        let arguments = arguments.as_object().cloned().unwrap_or_default();
        match self.call(tool, arguments, READ_TIMEOUT).await {
            Ok(result) if result.is_error == Some(true) => Err(Unread::Refused(text_of(&result))),
            Ok(result) => Ok(text_of(&result)),
            Err(CallError::Refused(e)) => Err(Unread::Refused(e)),
            Err(CallError::NotSent(e) | CallError::Lost(e)) => Err(Unread::Unavailable(e)),
        }
    }

    async fn peer(&self) -> Result<Peer<RoleClient>, String> {
        let mut link = self.link.lock().await;
        if let Some(service) = &link.service {
            // The loop ends when the transport does (the child exited): its sender closes.
            if !service.is_closed() && !service.peer().is_transport_closed() {
                return Ok(service.peer().clone());
            }
            tracing::warn!(upstream = self.name, "MCP upstream connection closed");
            link.service = None;
        }
        let now = Instant::now();
        if now < link.retry_at {
            return Err(format!(
                "the MCP upstream {} is not connected; it is tried again in {} ms",
                self.name,
                (link.retry_at - now).as_millis()
            ));
        }
        match open(&self.spec, Listener(self.current.clone())).await {
            Ok(service) => {
                let peer = service.peer().clone();
                link.service = Some(service);
                link.backoff = FIRST_BACKOFF;
                refresh(&peer, &self.current).await;
                tracing::info!(upstream = self.name, "MCP upstream connected again");
                Ok(peer)
            }
            Err(e) => {
                link.retry_at = now + link.backoff;
                link.backoff = (link.backoff * 2).min(MAX_BACKOFF);
                Err(e)
            }
        }
    }
}

async fn open(
    spec: &Spec,
    listener: Listener,
) -> Result<RunningService<RoleClient, Listener>, String> {
    let failed =
        |e: &dyn std::fmt::Display| format!("the MCP upstream {} failed to start: {e}", spec.name);
    match &spec.target {
        Target::Command(command) => {
            let mut child = tokio::process::Command::new("sh");
            // exec: the server is the child the transport ends, not a shell around it.
            child.arg("-c").arg(format!("exec {command}"));
            let (transport, stderr) = TokioChildProcess::builder(child)
                .stderr(std::process::Stdio::piped())
                .spawn()
                .map_err(|e| failed(&e))?;
            if let Some(stderr) = stderr {
                tokio::spawn(log_lines(spec.name.clone(), stderr));
            }
            listener.serve(transport).await.map_err(|e| failed(&e))
        }
        Target::Http { url, token } => {
            // rmcp's client is built on rustls without a provider of its own: without one
            // installed for the process it panics. Another part may have installed one first.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            if let Some(token) = token {
                config = config.auth_header(token.as_str());
            }
            let transport = StreamableHttpClientTransport::from_config(config);
            listener.serve(transport).await.map_err(|e| failed(&e))
        }
    }
}

/// The server's standard error, line by line, into the gateway's log under its name.
async fn log_lines(upstream: String, stderr: tokio::process::ChildStderr) {
    use tokio::io::AsyncBufReadExt as _;
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::info!(upstream = %upstream, "{line}");
    }
}

/// Reads the upstream's tools again into `current`; a failure leaves the last list in place.
async fn refresh(peer: &Peer<RoleClient>, current: &Current) {
    match peer.list_all_tools().await {
        Ok(tools) => {
            *current.write().expect("the tool list's lock") = tools
                .iter()
                .map(|t| (t.name.to_string(), schema_digest(t)))
                .collect()
        }
        Err(e) => tracing::warn!(error = %e, "an MCP upstream's tool list could not be read again"),
    }
}

/// The text parts of a result, one after another.
pub fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| match c {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn schema_digest(tool: &Tool) -> String {
    digest::jcs(tool.input_schema.as_ref())
        .map(|bytes| digest::sha256(&bytes))
        .unwrap_or_default()
}

/// The client side of an upstream connection: it reads the tool list again when the server says
/// it changed.
#[derive(Clone)]
struct Listener(Current);

impl ClientHandler for Listener {
    fn on_tool_list_changed(
        &self,
        context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        let current = self.0.clone();
        // Read in a task of its own: the connection's loop is what delivers the answer.
        tokio::spawn(async move { refresh(&context.peer, &current).await });
        std::future::ready(())
    }
}
