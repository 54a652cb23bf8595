//! `countersign-cli hook claude-code`: a coding agent's `PreToolUse` hook (docs/agent-hook.md).
//! It reads the hook's JSON on standard input, previews the tool call at the gateway as the agent
//! (`agent.tool_call`, with the text of the file the call writes), waits for the plan's decision,
//! releases an approved plan with what it observes of the file now, and prints the agent's
//! decision on standard output. It answers `allow` only for a plan that was approved and
//! released, whose digest is the one it previewed and checked; anything else is `deny` with the
//! reason (or `ask`, when the gateway cannot be reached and `--offline ask` says so). It always
//! exits 0 with a decision, so the agent never runs a call on a hook's failure.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Subcommand;
use countersign_proto::agent_call::{resource, revision, written_files, ID};
use countersign_proto::digest::plan_digest;
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Subcommand)]
pub enum HookAgent {
    /// Claude Code's `PreToolUse` command hook: its JSON on standard input, the decision on
    /// standard output.
    ClaudeCode {
        /// A file holding the agent's token (default: `COUNTERSIGN_AGENT_TOKEN`).
        #[arg(long)]
        token_file: Option<PathBuf>,
        /// How long to wait for a person's decision, in seconds, before denying the call.
        #[arg(long, default_value_t = 600)]
        timeout: u64,
        /// What to answer when the gateway cannot be reached.
        #[arg(long, value_enum, default_value = "deny")]
        offline: Offline,
    },
}

/// Runs the hook `agent` asks for against the gateway at `url`: the decision to print.
pub async fn run(agent: &HookAgent, url: Option<String>, ca_cert: Option<PathBuf>) -> Answer {
    let HookAgent::ClaudeCode {
        token_file,
        timeout,
        offline,
    } = agent;
    claude_code(Options {
        url,
        token_file: token_file.clone(),
        timeout: Duration::from_secs(*timeout),
        offline: *offline,
        ca_cert,
    })
    .await
}

/// What the hook does when the gateway cannot be reached.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Offline {
    /// Refuse the call.
    Deny,
    /// Leave it to the agent's own prompt.
    Ask,
}

struct Options {
    pub url: Option<String>,
    pub token_file: Option<PathBuf>,
    pub timeout: Duration,
    pub offline: Offline,
    pub ca_cert: Option<PathBuf>,
}

/// The agent's decision, as Claude Code reads it.
pub struct Answer {
    decision: &'static str,
    reason: String,
}

impl Answer {
    fn allow(reason: String) -> Answer {
        Answer {
            decision: "allow",
            reason,
        }
    }

    fn deny(reason: impl Into<String>) -> Answer {
        Answer {
            decision: "deny",
            reason: reason.into(),
        }
    }

    pub fn to_json(&self) -> Value {
        json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": self.decision,
            "permissionDecisionReason": self.reason,
        }})
    }
}

/// The hook's input (Claude Code's `PreToolUse` payload); other members are ignored.
#[derive(Deserialize)]
struct HookInput {
    hook_event_name: String,
    cwd: String,
    tool_name: String,
    tool_input: Value,
}

/// Why a call to the gateway did not give an answer.
enum Failed {
    /// It could not be reached (or did not answer).
    Unreachable(String),
    /// It answered with an error: its code and message.
    Refused(String, String),
}

/// Runs the hook on `stdin`'s payload: the decision to print.
async fn claude_code(options: Options) -> Answer {
    // Claude Code runs the call when a hook fails with any status but 2: a panic must block it.
    std::panic::set_hook(Box::new(|info| {
        eprintln!("Countersign's hook failed ({info}); the call is refused.");
        std::process::exit(2);
    }));
    let mut raw = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut raw) {
        return Answer::deny(format!(
            "Countersign: the hook's input could not be read: {e}"
        ));
    }
    let input: HookInput = match serde_json::from_str(&raw) {
        Ok(input) => input,
        Err(e) => {
            return Answer::deny(format!(
                "Countersign: the hook's input is not a PreToolUse payload: {e}"
            ))
        }
    };
    if input.hook_event_name != "PreToolUse" {
        return Answer::deny(format!(
            "Countersign answers PreToolUse only, not {}.",
            input.hook_event_name
        ));
    }
    let gateway = match Gateway::new(&options) {
        Ok(gateway) => gateway,
        Err(message) => return Answer::deny(format!("Countersign: {message}")),
    };
    match decide(&gateway, &input, options.timeout).await {
        Ok(answer) => answer,
        Err(Failed::Unreachable(why)) => match options.offline {
            Offline::Ask => Answer {
                decision: "ask",
                reason: format!("Countersign cannot reach its gateway ({why}): decide here."),
            },
            Offline::Deny => Answer::deny(format!(
                "Countersign cannot reach its gateway ({why}), and the call waits for it."
            )),
        },
        Err(Failed::Refused(code, message)) => {
            Answer::deny(format!("Countersign refused the call [{code}]: {message}"))
        }
    }
}

async fn decide(gateway: &Gateway, input: &HookInput, timeout: Duration) -> Result<Answer, Failed> {
    let files = written_files(&input.tool_name, &input.tool_input, &input.cwd);
    let mut texts = BTreeMap::new();
    for path in &files {
        if let Some(real) = escapes(path, &input.cwd) {
            return Ok(Answer::deny(format!(
                "Countersign: {path} is {real} through a symbolic link, outside the working \
                 directory: the approver would read one path and the agent write another."
            )));
        }
        match read_text(path) {
            Ok(text) => texts.insert(path.clone(), text),
            Err(why) => return Ok(Answer::deny(format!("Countersign: {why}"))),
        };
    }
    let mut params = json!({"tool_name": input.tool_name, "tool_input": input.tool_input,
                            "cwd": input.cwd});
    if !files.is_empty() {
        params["files"] = json!(texts);
    }
    let plan = gateway
        .post(
            &format!("/v1/capabilities/{ID}/dry_run"),
            &json!({ "params": params }),
        )
        .await?;
    if let Some(refusal) = mismatch(&plan, &params) {
        return Ok(Answer::deny(format!("Countersign: {refusal}")));
    }
    let plan_id = plan["plan_id"].as_str().unwrap_or_default().to_owned();
    if plan["executable"] != true {
        let why = plan["validation"]
            .as_array()
            .and_then(|v| v.iter().find(|e| e["blocks_execution"] == true))
            .and_then(|e| e["message"].as_str())
            .unwrap_or("the plan is blocked");
        return Ok(Answer::deny(format!("Countersign: {why} ({plan_id})")));
    }
    let mut approved_by = Vec::new();
    if plan["would_require_approval"] == true {
        let started = Instant::now();
        let record = loop {
            let record = gateway.get(&format!("/v1/plans/{plan_id}")).await?;
            if record["status"] != "pending_approval" {
                break record;
            }
            if started.elapsed() >= timeout {
                return Ok(Answer::deny(format!(
                    "Countersign: no decision within {} s on {plan_id}.",
                    timeout.as_secs()
                )));
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        };
        let received = record["approvals"]["received"].as_array().cloned();
        let received = received.unwrap_or_default();
        match record["status"].as_str().unwrap_or_default() {
            "approved" => {
                approved_by = received
                    .iter()
                    .filter(|e| e["decision"] == "approve")
                    .filter_map(|e| e["display_name"].as_str().map(str::to_owned))
                    .collect();
            }
            "rejected" => {
                let why = received
                    .iter()
                    .filter(|e| e["decision"] == "reject")
                    .map(|e| {
                        format!(
                            "{}: {}",
                            e["display_name"].as_str().unwrap_or("an approver"),
                            e["reason"].as_str().unwrap_or("no reason given")
                        )
                    })
                    .collect::<Vec<_>>();
                let why = match (why.is_empty(), record["approvals"]["denied"].as_array()) {
                    (false, _) => why.join("; "),
                    (true, Some(denied)) if !denied.is_empty() => denied
                        .iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join("; "),
                    _ => "no reason given".to_owned(),
                };
                return Ok(Answer::deny(format!(
                    "Countersign: rejected ({plan_id}). {why}"
                )));
            }
            other => {
                return Ok(Answer::deny(format!(
                    "Countersign: the plan is {other}, not approved ({plan_id}); preview the call again."
                )))
            }
        }
    }
    // What the agent sees of the file now: a file changed since the preview makes the plan stale.
    let mut observed = BTreeMap::new();
    for path in &files {
        match read_text(path) {
            Ok(text) => observed.insert(resource(path), revision(text.as_deref())),
            Err(why) => return Ok(Answer::deny(format!("Countersign: {why}"))),
        };
    }
    let body = json!({"plan_id": plan_id, "observed": observed});
    let released = match gateway
        .post(&format!("/v1/capabilities/{ID}/invoke"), &body)
        .await
    {
        Ok(released) => released,
        Err(Failed::Refused(code, message)) if code == "plan_stale" => {
            return Ok(Answer::deny(format!(
                "Countersign: stale: {message} Preview the call again."
            )))
        }
        Err(failed) => return Err(failed),
    };
    let metadata = &released["metadata"];
    if metadata["release"] != "allow"
        || metadata["plan_id"] != plan["plan_id"]
        || metadata["plan_digest"] != plan["plan_digest"]
    {
        return Ok(Answer::deny(format!(
            "Countersign: the gateway's release is not for the plan previewed ({plan_id})."
        )));
    }
    let by = if approved_by.is_empty() {
        "its policy needs nobody".to_owned()
    } else {
        format!("approved by {}", approved_by.join(", "))
    };
    Ok(Answer::allow(format!("Countersign: {by} ({plan_id}).")))
}

/// Why a preview is not the plan of this call: another capability or request, or a digest that
/// is not its own.
fn mismatch(plan: &Value, params: &Value) -> Option<String> {
    if plan["valid"] == false {
        let why = plan["violations"][0]["message"]
            .as_str()
            .unwrap_or("invalid");
        return Some(format!("the gateway refused the call's input: {why}"));
    }
    if plan["capability_id"] != ID || &plan["request"]["params"] != params {
        return Some("the gateway's plan is for another call.".to_owned());
    }
    match plan_digest(plan) {
        Ok(digest) if plan["plan_digest"] == digest.as_str() => None,
        _ => Some("the gateway's plan does not match its digest.".to_owned()),
    }
}

/// Where `path`, inside the working directory as written, really is when a symbolic link takes
/// it outside; `None` when it stays inside (or lies outside as written, which the plan shows).
fn escapes(path: &str, cwd: &str) -> Option<String> {
    let real_cwd = std::fs::canonicalize(cwd).ok()?;
    if !std::path::Path::new(path).starts_with(cwd) {
        return None;
    }
    // The nearest part of the path that exists, resolved, with the rest as written.
    let mut existing = std::path::Path::new(path);
    let mut rest = Vec::new();
    let resolved = loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            break real;
        }
        rest.push(existing.file_name()?);
        existing = existing.parent()?;
    };
    let real = rest.iter().rev().fold(resolved, |p, part| p.join(part));
    (!real.starts_with(&real_cwd)).then(|| real.display().to_string())
}

/// A file's text (`None`: it does not exist), or why it cannot be previewed.
fn read_text(path: &str) -> Result<Option<String>, String> {
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| format!("{path} is not UTF-8 text; it cannot be shown to an approver.")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{path} cannot be read: {e}")),
    }
}

/// The gateway, as the agent whose token the hook holds.
struct Gateway {
    http: reqwest::Client,
    url: String,
    token: String,
}

impl Gateway {
    fn new(options: &Options) -> Result<Gateway, String> {
        let url = options
            .url
            .clone()
            .ok_or("no gateway: set COUNTERSIGN_GATEWAY_URL or pass --url")?;
        // https://, or http:// to this machine only: the token never crosses in the clear.
        countersign_console::transport::check_url(&url).map_err(|e| e.to_string())?;
        let token = match &options.token_file {
            Some(file) => std::fs::read_to_string(file)
                .map_err(|e| format!("the token file {} cannot be read: {e}", file.display()))?,
            None => std::env::var("COUNTERSIGN_AGENT_TOKEN")
                .map_err(|_| "no agent token: set COUNTERSIGN_AGENT_TOKEN or pass --token-file")?,
        };
        let mut http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(5));
        // A proxy from the environment would carry the token off this machine in the clear.
        let host = reqwest::Url::parse(&url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_default();
        if countersign_proto::loopback::is_loopback_host(&host) {
            http = http.no_proxy();
        }
        if let Some(ca) = &options.ca_cert {
            let pem = std::fs::read(ca)
                .map_err(|e| format!("the CA file {} cannot be read: {e}", ca.display()))?;
            let cert = reqwest::Certificate::from_pem(&pem)
                .map_err(|e| format!("the CA file {} is not PEM: {e}", ca.display()))?;
            http = http.add_root_certificate(cert);
        }
        Ok(Gateway {
            http: http.build().map_err(|e| e.to_string())?,
            url: url.trim_end_matches('/').to_owned(),
            token: token.trim().to_owned(),
        })
    }

    async fn get(&self, path: &str) -> Result<Value, Failed> {
        self.send(self.http.get(format!("{}{path}", self.url)))
            .await
    }

    async fn post(&self, path: &str, body: &Value) -> Result<Value, Failed> {
        self.send(self.http.post(format!("{}{path}", self.url)).json(body))
            .await
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> Result<Value, Failed> {
        let reply = request
            .bearer_auth(&self.token)
            .send()
            .await
            .map_err(|e| Failed::Unreachable(e.to_string()))?;
        let status = reply.status();
        let body: Value = reply
            .json()
            .await
            .map_err(|e| Failed::Unreachable(format!("its answer is not JSON: {e}")))?;
        if status.is_success() {
            return Ok(body);
        }
        let error = &body["error"];
        Err(Failed::Refused(
            error["code"].as_str().unwrap_or("unknown").to_owned(),
            error["message"].as_str().unwrap_or("no message").to_owned(),
        ))
    }
}
