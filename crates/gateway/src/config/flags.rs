//! `serve`'s flags: one per setting, each `None` unless given, so that only what the command
//! line says overrides the file and the environment.

use std::net::SocketAddr;
use std::path::PathBuf;

use countersign_engine::accounts::limits::RateSetting;
use countersign_proto::Credits;
use serde::Serialize;

use super::Given;

/// Defaults and the environment's names: `countersign-gateway config check FILE` shows both.
#[derive(clap::Args, Serialize, Default)]
pub struct Flags {
    /// A TOML file of these settings (docs/operations.md); COUNTERSIGN_* variables override it,
    /// and flags override both.
    #[arg(long, value_name = "FILE")]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// Where to listen [default: 127.0.0.1:7780].
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    addr: Option<SocketAddr>,
    /// The store: sqlite:///path/gateway.db or postgres://user@host/db.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    database: Option<String>,
    /// PEM certificate chain to serve HTTPS with.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    tls_key: Option<PathBuf>,
    /// Serve /metrics on this address alone (plain HTTP) instead of beside the API.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    metrics_addr: Option<SocketAddr>,
    /// Seed the demo world if the store is empty.
    #[arg(long)]
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    demo: bool,
    /// The gateway's name, shown to approvers [default: Countersign gateway].
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    /// The SMTP relay executed plans' emails leave through: smtp://host:port,
    /// smtp://host?tls=required (STARTTLS) or smtps://host. Without it they stay queued.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    smtp_relay: Option<String>,
    /// The sender of those emails [default: Countersign <countersign@localhost>].
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    mail_from: Option<String>,
    /// Base URL of an OpenAI-compatible API (text.generate, speech.synthesize); its key from
    /// COUNTERSIGN_OPENAI_API_KEY or the keyring.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    openai_url: Option<String>,
    /// Base URL of a Replicate-style predictions API (image.generate, video.generate); its
    /// token from COUNTERSIGN_REPLICATE_API_TOKEN or the keyring.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    replicate_url: Option<String>,
    /// Provider plans that may cost more than this many credits wait for an approver
    /// [default: 1.00].
    #[arg(long, value_name = "CREDITS")]
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "text")]
    approve_provider_calls_above: Option<Credits>,
    /// A directory of `.rego` files (package countersign.approval) and an optional data.json;
    /// without it, each capability's own rule (docs/policy.md).
    #[arg(long, value_name = "DIR")]
    #[serde(skip_serializing_if = "Option::is_none")]
    policy: Option<PathBuf>,
    /// The heap, in MiB, past which a policy evaluation stops with `policy_error` instead of
    /// taking the machine's memory (a ceiling for the whole process).
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    policy_heap_limit_mb: Option<u64>,
    /// Plans one agent may have waiting for approval.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    max_pending_plans: Option<u32>,
    /// Subject rows one agent's plans may hold.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    max_subject_rows: Option<u64>,
    /// Requests per second per agent token and per address without a token: RATE[/BURST] or off.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "text")]
    rate_limit: Option<RateSetting>,
    /// Requests per second per approver token: RATE[/BURST] or off.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "text")]
    approver_rate_limit: Option<RateSetting>,
    /// Previews (dry runs, refreshes) one agent may have evaluated at once.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    max_previews_in_flight: Option<usize>,
    /// Event streams one approver may hold open.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    max_streams: Option<usize>,
    /// MCP waits (`countersign_wait`) one agent may hold open.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    max_waits: Option<usize>,
    /// On SIGTERM, how long requests and provider calls under way may take to finish
    /// [default: 30]; a call still out then is recorded as of unknown outcome.
    #[arg(long, value_name = "SECONDS")]
    #[serde(skip_serializing_if = "Option::is_none")]
    drain_seconds: Option<u64>,
    /// Log lines as text or json (one object per line) [default: text].
    #[arg(long, value_name = "FORMAT")]
    #[serde(skip_serializing_if = "Option::is_none")]
    log_format: Option<crate::telemetry::LogFormat>,
    /// Send spans over OTLP/HTTP to this endpoint (http://collector:4318/v1/traces).
    #[arg(long, value_name = "URL")]
    #[serde(skip_serializing_if = "Option::is_none")]
    otlp_endpoint: Option<String>,
    /// An MCP server to stand in front of, its tools approved call by call: NAME=COMMAND (run
    /// over stdio) or NAME=URL (streamable HTTP, its bearer token from
    /// COUNTERSIGN_MCP_<NAME>_TOKEN); repeat for more (docs/mcp-proxy.md).
    #[arg(long, value_name = "NAME=COMMAND|URL")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    mcp_upstream: Vec<String>,
}

impl Flags {
    /// What the command line gave, by setting.
    pub fn given(&self) -> Given {
        match serde_json::to_value(self).expect("flags serialize") {
            serde_json::Value::Object(given) => given,
            _ => unreachable!("flags are a struct"),
        }
    }
}

fn text<T: std::fmt::Display, S: serde::Serializer>(
    value: &Option<T>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(value) => s.collect_str(value),
        None => s.serialize_none(),
    }
}
