//! Targets that send bytes to the gateway as its clients do: a dry run's body to every
//! capability that previews, an approver's amendment of a plan, an agent's MCP `tools/call`.

use std::cell::RefCell;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use countersign_embedded::{default_registry, seed_demo};
use countersign_engine::{accounts, Capability, Limits, Store};
use countersign_proto::describe::DryRunMode;
use countersign_proto::dsse::encode_public_key;
use ed25519_dalek::SigningKey;
use serde_json::{json, Value};
use tower::ServiceExt as _;

use super::Depth;

/// A gateway (the HTTP API and MCP) over an in-memory demo world that takes request bodies: a
/// dry run's, sent to every capability that previews; an approver's amendment of a plan; an
/// agent's MCP `tools/call`. Each must be answered in the contract, never with a 5xx. It runs with
/// no rate limit and no queue caps: a limit would answer most inputs before parsing them. The
/// distinct outcomes of dry runs are counted, so a run that reaches too few fails.
pub struct RequestTarget {
    runtime: tokio::runtime::Runtime,
    router: axum::Router,
    agent: String,
    approver: String,
    capabilities: Vec<&'static str>,
    /// The plan amendments are sent for: each one previewed is amended next.
    amending: RefCell<String>,
    outcomes: RefCell<std::collections::BTreeSet<String>>,
}

/// A response: its status and its body as JSON (null when there is none).
type Answer = (StatusCode, Value);

impl RequestTarget {
    pub fn new() -> RequestTarget {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (state, agent) = runtime.block_on(async {
            let store = Store::open("sqlite::memory:").await.unwrap();
            seed_demo(&store).await.unwrap();
            let (_, agent) = accounts::add_agent(&store, "fuzz", None).await.unwrap();
            let registry = default_registry();
            let limits = Limits {
                rate: None,
                approver_rate: None,
                max_pending_plans: u32::MAX,
                max_subject_rows: u64::MAX,
                ..Limits::default()
            };
            let state = countersign_embedded::state(store, "Fuzz gateway", limits, registry);
            (state.await.unwrap(), agent)
        });
        let code = runtime
            .block_on(accounts::invite_approver(&state.store, "Fuzz", None))
            .unwrap();
        let capabilities = default_registry()
            .all()
            .filter(|c| c.describe().dry_run != DryRunMode::NotApplicable)
            .map(Capability::id)
            .collect();
        let mut target = RequestTarget {
            runtime,
            router: countersign_gateway::router(state),
            agent,
            approver: String::new(),
            capabilities,
            amending: RefCell::new(String::new()),
            outcomes: Default::default(),
        };
        let key = SigningKey::from_bytes(&[7; 32]);
        let body = json!({"enrollment_code": code, "display_name": "Fuzz",
                          "public_key": encode_public_key(&key.verifying_key())});
        let (_, enrolled) = target.send("/v1/approvers/enroll", "", body.to_string().as_bytes());
        target.approver = enrolled["token"].as_str().unwrap().to_owned();
        target.amend_anew();
        target
    }

    /// A new plan to amend: a retention change on prj_184 that waits for approval.
    fn amend_anew(&self) {
        let params = json!({"params": {"project": "prj_184", "retention_days": 14}});
        let uri = "/v1/capabilities/projects.settings.update/dry_run";
        let (_, plan) = self.send(uri, &self.agent, params.to_string().as_bytes());
        *self.amending.borrow_mut() = plan["plan_id"].as_str().unwrap().to_owned();
    }

    /// The distinct outcomes dry runs reached so far: a status with its error code, a plan made
    /// (per capability), or a preview refused as `valid: false`.
    pub fn outcomes(&self) -> Vec<String> {
        self.outcomes.borrow().iter().cloned().collect()
    }

    /// POSTs `bytes` to `uri` with bearer `token` (none when empty): the answer, which is never a
    /// 5xx and always JSON when it has a body.
    fn send(&self, uri: &str, token: &str, bytes: &[u8]) -> Answer {
        let mut request = Request::post(uri)
            .header("host", "gateway.example")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18");
        if !token.is_empty() {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let request = request.body(Body::from(bytes.to_vec())).unwrap();
        let (status, body) = self.runtime.block_on(async {
            let response = self.router.clone().oneshot(request).await.unwrap();
            let status = response.status();
            let body = axum::body::to_bytes(response.into_body(), usize::MAX)
                .await
                .unwrap();
            (status, body)
        });
        assert!(
            status.as_u16() < 500,
            "{uri} {status}: {}",
            String::from_utf8_lossy(&body)
        );
        let answer = match body.is_empty() {
            true => Value::Null,
            false => serde_json::from_slice(&body).unwrap_or_else(|e| {
                panic!(
                    "{uri} {status}: not JSON ({e}): {}",
                    String::from_utf8_lossy(&body)
                )
            }),
        };
        (status, answer)
    }

    /// A dry run's body, to every capability that previews: how far the deepest got.
    pub fn run(&self, bytes: &[u8]) -> Depth {
        self.capabilities
            .iter()
            .map(|capability| self.dry_run(capability, bytes))
            .max()
            .unwrap_or(Depth::Refused)
    }

    fn dry_run(&self, capability: &str, bytes: &[u8]) -> Depth {
        let uri = format!("/v1/capabilities/{capability}/dry_run");
        let (status, answer) = self.send(&uri, &self.agent, bytes);
        let (outcome, depth) = if let Some(code) = answer["error"]["code"].as_str() {
            let depth = match code {
                "validation_error" => Depth::Refused,
                _ => Depth::Parsed,
            };
            (format!("{} {code}", status.as_u16()), depth)
        } else if answer.get("plan_id").is_some() {
            (format!("plan of {capability}"), Depth::Through)
        } else if answer["valid"] == false {
            ("valid: false".to_owned(), Depth::Refused)
        } else {
            panic!("{capability}: outside the contract: {answer}")
        };
        assert!(
            answer.get("success") != Some(&Value::Bool(true)),
            "{capability}: a dry_run answered success: {answer}"
        );
        self.outcomes.borrow_mut().insert(outcome);
        depth
    }

    /// An amendment's body, for the plan last previewed (`docs/amend.md`): refused with a code, or
    /// previewed as its successor, which the next amendment is for.
    pub fn amend(&self, bytes: &[u8]) -> Depth {
        let uri = format!("/v1/plans/{}/amend", self.amending.borrow());
        let (status, answer) = self.send(&uri, &self.approver, bytes);
        if status == StatusCode::OK {
            // A successor that waits is amended next; one that needs nobody (it changes nothing)
            // takes no amendment, so a new plan is.
            match answer["status"] == "pending_approval" {
                true => {
                    let successor = answer["plan"]["plan_id"].as_str();
                    *self.amending.borrow_mut() =
                        successor.expect("an amendment's successor").to_owned();
                }
                false => self.amend_anew(),
            }
            return Depth::Through;
        }
        match answer["error"]["code"].as_str() {
            Some("validation_error") => Depth::Refused,
            Some(_) => Depth::Parsed,
            None => panic!("an amendment answered outside the contract: {status} {answer}"),
        }
    }

    /// An MCP request's body (a `tools/call`, or anything sent in its place), as the test agent:
    /// answered as JSON-RPC, a tool's result or an error, never a 5xx.
    pub fn mcp(&self, bytes: &[u8]) -> Depth {
        let (status, answer) = self.send("/mcp", &self.agent, bytes);
        if status == StatusCode::ACCEPTED {
            // A notification: read, and answered with nothing.
            return Depth::Parsed;
        }
        if !status.is_success() {
            let jsonrpc = answer["error"]["code"].is_i64();
            let contract = answer["error"]["code"].is_string();
            assert!(
                jsonrpc || contract,
                "/mcp {status} outside both contracts: {answer}"
            );
            return Depth::Refused;
        }
        let result = &answer["result"];
        if result.is_null() {
            // JSON-RPC's own refusals: parse error, invalid request, unknown method or params.
            assert!(answer["error"]["code"].is_i64(), "{answer}");
            return Depth::Refused;
        }
        match result["structuredContent"]["plan_id"].is_string() {
            true => Depth::Through,
            false => Depth::Parsed,
        }
    }
}

/// How many distinct outcomes a run of the request target must reach: fewer means the inputs
/// stopped at the door (a limit, a parse that refuses everything) instead of reaching the parsers
/// and the planning behind them. The corpus alone reaches more.
pub const OUTCOME_FLOOR: usize = 8;

/// Why a request run that reached `outcomes` went too shallow, if it did.
pub fn too_shallow(outcomes: &[String]) -> Option<String> {
    if let Some(throttled) = outcomes.iter().find(|o| o.starts_with("429")) {
        return Some(format!("inputs were refused before parsing ({throttled})"));
    }
    if !outcomes.iter().any(|o| o.starts_with("plan of")) {
        return Some("no input made a plan".to_owned());
    }
    (outcomes.len() < OUTCOME_FLOOR).then(|| {
        format!(
            "{} distinct outcomes, fewer than {OUTCOME_FLOOR}: {}",
            outcomes.len(),
            outcomes.join(", ")
        )
    })
}

impl Default for RequestTarget {
    fn default() -> Self {
        RequestTarget::new()
    }
}
