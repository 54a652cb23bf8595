//! What `make fuzz` throws bytes at, and what `fuzz_replay.rs` runs every kept input through:
//! plan parsing and the review model, envelope verification, and the gateway's request parsing.
//! A target panics only on a bug: any input must end in an error value or a sound result.

use std::path::{Path, PathBuf};

use axum::body::Body;
use axum::http::Request;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use chrono::{TimeZone, Utc};
use countersign_api::app;
use countersign_console::client::parse_plan;
use countersign_console::review::{groups, plan_view};
use countersign_embedded::{default_registry, seed_demo};
use countersign_engine::{accounts, Capability, Limits, Store};
use countersign_proto::decision::Statement;
use countersign_proto::describe::DryRunMode;
use countersign_proto::dsse::{decode_public_key, Envelope};
use ed25519_dalek::VerifyingKey;
use serde_json::Value;
use tower::ServiceExt as _;

pub const TARGETS: [&str; 3] = ["plan", "envelope", "request"];

/// The inputs a target starts from: its corpus in `tests/fuzz/corpus/<target>` (and, for
/// requests, the gateway's hostile corpus), then every crash kept in `tests/fuzz/regressions`.
pub fn seeds(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![
        root.join("fuzz/corpus").join(target),
        root.join("fuzz/regressions").join(target),
    ];
    if target == "request" {
        dirs.push(root.join("../crates/gateway/tests/hostile"));
    }
    let mut out = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
        paths.sort();
        for path in paths.into_iter().filter(|p| p.is_file()) {
            let bytes = std::fs::read(&path).unwrap();
            out.push((path, bytes));
        }
    }
    out
}

/// A plan record as the console receives it: parsed, reviewed, grouped. An approvable view must
/// be one whose digest the console computed and found matching.
pub fn plan(bytes: &[u8]) {
    let Ok(fetched) = parse_plan("plan_fuzz", bytes) else {
        return;
    };
    let now = Utc.with_ymd_and_hms(2026, 11, 30, 10, 5, 0).unwrap();
    let view = plan_view(&fetched, None, Some("apr_fuzz"), now);
    assert!(
        !view.approvable || view.digest_matches,
        "approvable without its digest"
    );
    groups(&fetched.record.plan.effects);
}

/// A decision envelope, with or without the key to check it with (`{"public_key", "envelope"}`):
/// opening it either fails or yields a statement sealed by its signature ([`sealed`]). Whether it
/// opened.
pub fn envelope(bytes: &[u8]) -> bool {
    let (key, envelope) = match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(mut pair)) if pair.contains_key("envelope") => {
            let key = pair
                .get("public_key")
                .and_then(Value::as_str)
                .and_then(|k| decode_public_key(k).ok());
            (key, pair.remove("envelope").unwrap_or_default())
        }
        Ok(other) => (None, other),
        Err(_) => return false,
    };
    let Ok(envelope) = serde_json::from_value::<Envelope>(envelope) else {
        return false;
    };
    let _ = envelope.signature();
    let _ = envelope.signature_bytes();
    if let Ok(payload) = envelope.payload_bytes() {
        if let Ok(statement) = Statement::from_payload(&payload) {
            let _ = statement.canonical_bytes();
        }
    }
    let Some(key) = key else {
        return false;
    };
    let Ok(statement) = Statement::open(&envelope, &key) else {
        return false;
    };
    sealed(&envelope, &statement, &key);
    true
}

/// What an opened decision must be: its payload is the statement's own canonical bytes, and the
/// signature seals every byte of it and its type, so that no change to either opens again.
fn sealed(envelope: &Envelope, statement: &Statement, key: &VerifyingKey) {
    let payload = envelope
        .payload_bytes()
        .expect("opened, so its payload decodes");
    assert_eq!(
        statement.canonical_bytes().ok().as_deref(),
        Some(&payload[..]),
        "opened a payload that is not the statement's canonical form"
    );
    for at in [0, payload.len() / 2, payload.len() - 1] {
        let mut altered = payload.clone();
        altered[at] ^= 0x20;
        let tampered = Envelope {
            payload: STANDARD.encode(&altered),
            ..envelope.clone()
        };
        assert!(
            Statement::open(&tampered, key).is_err(),
            "a payload changed at byte {at} still opens"
        );
    }
    let retyped = Envelope {
        payload_type: format!("{}+x", envelope.payload_type),
        ..envelope.clone()
    };
    assert!(
        Statement::open(&retyped, key).is_err(),
        "another payload type still opens"
    );
}

/// A gateway over an in-memory demo world that takes request bodies: each is sent to the dry_run
/// of every capability that has one, and must be answered in the contract, never with a 500. It
/// runs with no rate limit and no queue caps: a limit would answer most inputs before parsing
/// them. The distinct outcomes reached are counted, so a run that reaches too few fails.
pub struct RequestTarget {
    runtime: tokio::runtime::Runtime,
    router: axum::Router,
    agent: String,
    capabilities: Vec<&'static str>,
    outcomes: std::cell::RefCell<std::collections::BTreeSet<String>>,
}

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
        let capabilities = default_registry()
            .all()
            .filter(|c| c.describe().dry_run != DryRunMode::NotApplicable)
            .map(Capability::id)
            .collect();
        RequestTarget {
            runtime,
            router: app(state),
            agent,
            capabilities,
            outcomes: Default::default(),
        }
    }

    /// The distinct outcomes reached so far: a status with its error code, a plan made (per
    /// capability), or a preview refused as `valid: false`.
    pub fn outcomes(&self) -> Vec<String> {
        self.outcomes.borrow().iter().cloned().collect()
    }

    pub fn run(&self, bytes: &[u8]) {
        for capability in &self.capabilities {
            self.dry_run(capability, bytes);
        }
    }

    fn dry_run(&self, capability: &str, bytes: &[u8]) {
        let request = Request::post(format!("/v1/capabilities/{capability}/dry_run"))
            .header("authorization", format!("Bearer {}", self.agent))
            .header("content-type", "application/json")
            .body(Body::from(bytes.to_vec()))
            .unwrap();
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
            "{capability} {status}: {}",
            String::from_utf8_lossy(&body)
        );
        let answer: Value = serde_json::from_slice(&body).expect("every answer is JSON");
        let outcome = if let Some(code) = answer["error"]["code"].as_str() {
            format!("{} {code}", status.as_u16())
        } else if answer.get("plan_id").is_some() {
            format!("plan of {capability}")
        } else if answer["valid"] == false {
            "valid: false".to_owned()
        } else {
            panic!("{capability}: outside the contract: {answer}")
        };
        assert!(
            answer.get("success") != Some(&Value::Bool(true)),
            "{capability}: a dry_run answered success: {answer}"
        );
        self.outcomes.borrow_mut().insert(outcome);
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
