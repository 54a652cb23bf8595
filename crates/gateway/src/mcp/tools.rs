//! The tools an MCP client sees: one per capability, with the capability's own input schema, and
//! the two that finish what a capability tool started (`countersign_wait`, `countersign_execute`).

use std::sync::{Arc, OnceLock};

use countersign_proto::describe::DryRunMode;
use countersign_proto::plan::{EffectKind, ViolationDetail};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{json, Value};

use countersign_engine::{Capability, Registry};
use countersign_pack::ApprovalRule;

pub const EXECUTE: &str = "countersign_execute";
pub const WAIT: &str = "countersign_wait";

/// Arguments every previewing capability tool takes beside the capability's own params, named so
/// that no capability's param can be mistaken for them.
pub const EXPECTED_REVISIONS: &str = "countersign_expected_revisions";
pub const IDEMPOTENCY_KEY: &str = "countersign_idempotency_key";

/// The longest a `countersign_wait` call may block, so a client's request never hangs.
pub const MAX_WAIT_SECONDS: u64 = 60;
pub const DEFAULT_WAIT_SECONDS: u64 = 30;

/// Every tool of a gateway serving `registry`'s capabilities, under its built-in approval policy
/// (each capability's own rule, which the tools then describe) or another (`builtin_policy`
/// false: the preview says whether a plan waits).
pub fn all(registry: &'static Registry, builtin_policy: bool) -> Arc<[Tool]> {
    registry
        .all()
        .map(|capability| capability_tool(capability, builtin_policy))
        .chain([execute_tool(), wait_tool()])
        .collect()
}

/// Hints that follow the capability's declared effects: nothing written is read-only; what can
/// revoke, delete, archive or do something irreversible inside the world is destructive; what
/// reaches outside it (emails) is open-world.
pub fn annotations(capability: Capability) -> ToolAnnotations {
    let effects = capability.effects();
    let read_only = effects.kinds.is_empty();
    let removes = effects.kinds.iter().any(|k| {
        matches!(
            k,
            EffectKind::Delete | EffectKind::Revoke | EffectKind::Archive
        )
    });
    ToolAnnotations::with_title(capability.title())
        .read_only(read_only)
        .destructive(removes || effects.irreversible)
        .idempotent(read_only)
        .open_world(effects.external)
}

fn capability_tool(capability: Capability, builtin_policy: bool) -> Tool {
    let describe = capability.describe();
    let flow = if describe.dry_run == DryRunMode::NotApplicable {
        "It runs at once and answers the result envelope.".to_owned()
    } else {
        let approvers = match describe.approval.required_approvals {
            1 => "one approver".to_owned(),
            n => format!("{n} approvers"),
        };
        let when = match capability.approval() {
            _ if !builtin_policy => format!(
                "Whether a plan needs approval, and by whom, is the gateway's approval policy: \
                 when the preview says would_require_approval, call {WAIT}, then {EXECUTE}; \
                 otherwise the plan runs when you call {EXECUTE}. A plan the policy refuses \
                 answers policy_denied"
            ),
            ApprovalRule::Always => format!(
                "Every plan needs a signed approval by {approvers}: call {WAIT}, then {EXECUTE}"
            ),
            ApprovalRule::WhenRisky => format!(
                "A risky plan needs a signed approval by {approvers} (call {WAIT}, then \
                 {EXECUTE}); any other plan runs when you call {EXECUTE}"
            ),
            ApprovalRule::AboveCost(limit) => format!(
                "A plan that may cost more than {limit} credits needs a signed approval by \
                 {approvers} (call {WAIT}, then {EXECUTE}); any other plan runs when you call \
                 {EXECUTE}"
            ),
        };
        format!(
            "Each call previews the request against the current state and stops: the answer is \
             the plan (effects, derived effects, warnings, cost, plan_id, expiry), and nothing \
             has run. {when}, with its plan_id. {EXPECTED_REVISIONS} (resource to revision) \
             blocks the plan if what it reads has moved; {IDEMPOTENCY_KEY} answers a repeated \
             call with its first plan."
        )
    };
    let input = if describe.dry_run == DryRunMode::NotApplicable {
        schema(&describe.input_schema)
    } else {
        previewing_schema(&describe.input_schema)
    };
    Tool::new(
        capability.id(),
        format!("{}. {flow}", capability.title()),
        input,
    )
    .with_title(capability.title())
    .with_annotations(annotations(capability))
}

/// A tool's own input schema, compiled once.
pub struct ArgsSchema {
    pub value: Value,
    validator: Result<jsonschema::Validator, String>,
}

impl ArgsSchema {
    fn new(value: Value) -> ArgsSchema {
        let validator = jsonschema::validator_for(&value).map_err(|e| e.to_string());
        ArgsSchema { value, validator }
    }

    /// Every field of `arguments` that violates the schema, in seed 000's detail form.
    pub fn violations(&self, arguments: &Value) -> Vec<ViolationDetail> {
        match &self.validator {
            Ok(validator) => countersign_engine::registry::violations_of(validator, arguments, ""),
            Err(e) => vec![ViolationDetail {
                schema_pointer: String::new(),
                message: format!("The tool's schema is unusable: {e}"),
            }],
        }
    }
}

pub fn execute_schema() -> &'static ArgsSchema {
    static SCHEMA: OnceLock<ArgsSchema> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        ArgsSchema::new(json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["plan_id"],
            "properties": {
                "plan_id": {"type": "string", "pattern": "^plan_[A-Za-z0-9_]{1,64}$"},
                "idempotency_key": {"type": "string", "minLength": 1, "maxLength": 200},
                "observed": {
                    "type": "object", "maxProperties": 50,
                    "description": "For a plan that read files only the agent can read (agent.tool_call): each file's revision as the agent sees it now, by resource.",
                    "additionalProperties": {"type": "string", "maxLength": 100}
                }
            }
        }))
    })
}

pub fn wait_schema() -> &'static ArgsSchema {
    static SCHEMA: OnceLock<ArgsSchema> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        ArgsSchema::new(json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["plan_id"],
            "properties": {
                "plan_id": {"type": "string", "pattern": "^plan_[A-Za-z0-9_]{1,64}$"},
                "timeout_seconds": {
                    "type": "integer", "minimum": 1, "maximum": MAX_WAIT_SECONDS,
                    "default": DEFAULT_WAIT_SECONDS
                }
            }
        }))
    })
}

fn execute_tool() -> Tool {
    Tool::new(
        EXECUTE,
        "Execute an approved plan by its plan_id. Answers the result envelope, or the refusal: \
         approval_required (not yet approved), plan_stale (what it read has changed since: \
         details.moved names each revision; call the capability again for a fresh plan), \
         plan_expired.",
        schema(&execute_schema().value),
    )
    .with_title("Execute an approved plan")
    .with_annotations(
        ToolAnnotations::with_title("Execute an approved plan")
            .read_only(false)
            .destructive(true)
            .idempotent(false)
            .open_world(true),
    )
}

fn wait_tool() -> Tool {
    Tool::new(
        WAIT,
        format!(
            "Wait until a plan is decided (approved, rejected, stale or expired), at most \
             timeout_seconds (1 to {MAX_WAIT_SECONDS}, default {DEFAULT_WAIT_SECONDS}). Answers \
             the plan's status and approvals; call it again while the plan is still pending."
        ),
        schema(&wait_schema().value),
    )
    .with_title("Wait for a decision")
    .with_annotations(
        ToolAnnotations::with_title("Wait for a decision")
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false),
    )
}

fn schema(value: &Value) -> Arc<JsonObject> {
    Arc::new(value.as_object().cloned().unwrap_or_default())
}

/// A previewing capability's input schema with the reserved arguments beside its params.
fn previewing_schema(input: &Value) -> Arc<JsonObject> {
    let mut schema = input.as_object().cloned().unwrap_or_default();
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        properties.insert(
            EXPECTED_REVISIONS.to_owned(),
            json!({"type": "object", "additionalProperties": {"type": "string"},
                   "description": "The revision of each resource (as a plan's read_revisions \
                                   name them) the request was made against."}),
        );
        properties.insert(
            IDEMPOTENCY_KEY.to_owned(),
            json!({"type": "string", "minLength": 1, "maxLength": 100,
                   "description": "A key of this request: sent again, it answers the first plan."}),
        );
    }
    Arc::new(schema)
}
