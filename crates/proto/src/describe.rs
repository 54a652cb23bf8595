//! What `describe` tells an agent about a capability (PROTOCOL section 2, seed 000).

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum DryRunMode {
    Supported,
    Required,
    NotApplicable,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Preflight {
    None,
    Estimate,
    Reserve,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum CostClass {
    Free,
    Flat,
    Metered,
    ExternalPassthrough,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Billing {
    pub preflight: Preflight,
    pub cost_class: CostClass,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApprovalPolicy {
    pub required_approvals: u32,
    pub self_approval: bool,
    /// Whether a request waits for a person under the policy in force: a capability whose
    /// requests may wait says `dry_run: required`, or `depends_on_request` here, so an agent
    /// knows that a plan-less invoke of it can be refused with `dry_run_required`.
    #[serde(default)]
    pub needed: ApprovalNeed,
}

/// When a capability's requests need an approval under the gateway's policy (docs/policy.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ApprovalNeed {
    /// Every request that changes something.
    Always,
    /// Some requests, by what they would do (their risk, their cost, or a policy's own rules);
    /// a gateway that cannot say more says this.
    #[default]
    DependsOnRequest,
    /// No request: the capability changes nothing a policy could hold.
    Never,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Describe {
    pub interface_version: String,
    pub capability_id: String,
    pub version: String,
    pub title: String,
    pub input_schema: Value,
    pub dry_run: DryRunMode,
    pub billing: Billing,
    pub approval: ApprovalPolicy,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CapabilityList {
    pub items: Vec<Describe>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GatewayInfo {
    pub gateway_id: String,
    pub interface_version: String,
    pub name: String,
}
