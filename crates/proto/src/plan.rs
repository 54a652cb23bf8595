//! Previews (plans), effects, validation and the agent-side requests (PROTOCOL section 2).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::describe::Billing;
use crate::Credits;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Caller {
    pub agent_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_behalf_of: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PlanRequest {
    pub params: Value,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReadRevision {
    pub resource: String,
    pub revision: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EstimatedCost {
    pub amount_min: Credits,
    pub amount_max: Credits,
    pub currency: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum EffectKind {
    Create,
    Update,
    Delete,
    Archive,
    Grant,
    Revoke,
    Notify,
    Charge,
    ExternalCall,
    Job,
}

/// The `type` of the effect a call through the MCP proxy plans (docs/mcp-proxy.md): its
/// capability id is `UPSTREAM.TOOL`, the upstream's name holding no dot.
pub const MCP_TOOL_CALL: &str = "mcp_tool_call";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Effect {
    pub id: String,
    #[serde(rename = "type")]
    pub effect_type: String,
    pub kind: EffectKind,
    pub derived: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    pub resource: String,
    pub description: String,
    pub reversible: bool,
    pub external: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<Change>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subjects: Option<Subjects>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<EffectCost>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Change {
    pub path: String,
    pub before: Value,
    pub after: Value,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Subjects {
    pub total: u64,
    pub sample: Vec<String>,
    pub digest: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// At most this many subject ids travel inside a plan; the rest are paged.
pub const SUBJECT_SAMPLE_LIMIT: usize = 20;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EffectCost {
    pub amount: Credits,
    pub currency: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Validation {
    pub severity: Severity,
    pub code: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub message: String,
    pub blocks_execution: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repair: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Assumption {
    pub dependency: String,
    pub description: String,
    pub execution_can_proceed_without: bool,
}

/// A valid preview: the plan as the gateway stored it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Preview {
    pub interface_version: String,
    pub mode: String,
    pub valid: bool,
    pub executable: bool,
    pub capability_id: String,
    pub resolved_version: String,
    pub audit_id: String,
    pub plan_id: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub caller: Caller,
    pub request: PlanRequest,
    pub read_revisions: Vec<ReadRevision>,
    pub would_require_approval: bool,
    pub estimated_cost: EstimatedCost,
    pub billing: Billing,
    pub effects: Vec<Effect>,
    pub validation: Vec<Validation>,
    pub assumptions: Vec<Assumption>,
    pub request_digest: String,
    pub plan_digest: String,
}

/// Seed 000's answer for params that do not fit the schema: no plan is created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InvalidPreview {
    pub interface_version: String,
    pub valid: bool,
    pub capability_id: String,
    pub audit_id: String,
    pub violations: Vec<Violation>,
    pub effects: Vec<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Violation {
    pub code: String,
    pub message: String,
    pub hint: String,
    pub retryable: bool,
    pub schema_pointer: String,
    pub details: Vec<ViolationDetail>,
    /// The preview audit row, when the violation comes from a dry run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ViolationDetail {
    pub schema_pointer: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct DryRunRequest {
    pub params: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_revisions: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct InvokeRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// The revisions the calling agent observes now of resources only it can read (a coding
    /// agent's files, `agent-files/PATH`), by resource: a plan that read one at another
    /// revision is stale, and one it does not name is not observed (docs/agent-hook.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<BTreeMap<String, String>>,
}

/// `name` as one reference token of a JSON pointer (RFC 6901): `~` as `~0`, `/` as `~1`.
pub fn pointer_token(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// The link that opens a plan in the desktop app (`countersign://plan/<plan_id>`), which the
/// `.deb` registers: the CLI prints it, the MCP server asks a client's user to open it.
pub fn link(plan_id: &str) -> String {
    format!("countersign://plan/{plan_id}")
}
