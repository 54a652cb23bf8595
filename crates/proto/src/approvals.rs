//! The approver side: enrollment, the pending queue, plan records and decisions (PROTOCOL section 3).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::decision::Decision;
use crate::guard::SubjectItem;
use crate::plan::{Caller, EstimatedCost, Preview};
use crate::Credits;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    PendingApproval,
    Approved,
    Rejected,
    Executed,
    Stale,
    Expired,
    Superseded,
    Failed,
}

impl PlanStatus {
    /// The status as the wire names it.
    pub fn as_str(self) -> &'static str {
        match self {
            PlanStatus::PendingApproval => "pending_approval",
            PlanStatus::Approved => "approved",
            PlanStatus::Rejected => "rejected",
            PlanStatus::Executed => "executed",
            PlanStatus::Stale => "stale",
            PlanStatus::Expired => "expired",
            PlanStatus::Superseded => "superseded",
            PlanStatus::Failed => "failed",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum RiskFlag {
    Irreversible,
    AccessChange,
    Money,
    External,
    Bulk,
    Uncertain,
    HighCost,
    Blocked,
}

impl RiskFlag {
    /// Every flag, in order.
    pub const ALL: [RiskFlag; 8] = [
        RiskFlag::Irreversible,
        RiskFlag::AccessChange,
        RiskFlag::Money,
        RiskFlag::External,
        RiskFlag::Bulk,
        RiskFlag::Uncertain,
        RiskFlag::HighCost,
        RiskFlag::Blocked,
    ];
}

#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct EnrollRequest {
    pub enrollment_code: String,
    /// Absent, or the name the code was issued for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    pub public_key: String,
}

#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EnrollResponse {
    pub approver_id: String,
    pub key_id: String,
    pub token: String,
    pub gateway_id: String,
}

// Enrollment carries secrets (the code, the token): their Debug forms leave them out.
impl std::fmt::Debug for EnrollRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnrollRequest")
            .field("display_name", &self.display_name)
            .field("public_key", &self.public_key)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for EnrollResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnrollResponse")
            .field("approver_id", &self.approver_id)
            .field("key_id", &self.key_id)
            .field("gateway_id", &self.gateway_id)
            .finish_non_exhaustive()
    }
}

/// The calling approver as the gateway's policy sees them (`GET /v1/approvers/me`, an addition:
/// `docs/policy.md`): the person they are and the teams that person is in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApproverProfile {
    pub approver_id: String,
    pub display_name: String,
    /// The user id, or the approver's id for an approver invited without one.
    pub person: String,
    pub teams: Vec<String>,
    /// The risk flags the gateway's approval policy lets a standing approval cover
    /// (`docs/standing.md`): a console disables "approve plans like this" for a plan carrying
    /// another. Absent from a gateway that does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standing_flags: Option<Vec<RiskFlag>>,
}

impl ApproverProfile {
    /// Whether a plan summarized with `approvals` waits on this approver: nobody has decided it
    /// for them, they did not write its request, and a rule not yet met asks for their person (a
    /// plan from before rules asks anyone).
    pub fn is_asked(&self, approvals: &Approvals) -> bool {
        if approvals
            .received
            .iter()
            .any(|a| a.approver_id == self.approver_id)
            || approvals.requested_by.as_ref() == Some(&self.approver_id)
        {
            return false;
        }
        if approvals.rules.is_empty() {
            return (approvals.received.len() as u32) < approvals.required;
        }
        approvals
            .rules
            .iter()
            .any(|r| r.missing > 0 && r.asks(&self.person, &self.teams))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApprovalEntry {
    pub approver_id: String,
    pub display_name: String,
    pub decision: Decision,
    pub at: DateTime<Utc>,
    /// Why, as its approver signed it (a rejection always says why): the agent's hook passes it
    /// on (an addition to PROTOCOL's plan record, docs/agent-hook.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The standing approval this approval is, when its approver did not sign it for this plan
    /// (`docs/standing.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standing_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Approvals {
    pub required: u32,
    pub received: Vec<ApprovalEntry>,
    /// The rules the gateway's approval policy set for the plan, each with how far it is met;
    /// `required` is the sum of their counts (an addition: `docs/policy.md`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<crate::rules::RuleStatus>,
    /// Why a policy that came into force after the plan was stored refuses it; such a plan is
    /// `rejected` (an addition: `docs/policy.md`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub denied: Vec<String>,
    /// The approver who wrote the plan's request (its amendment's author, `docs/amend.md`),
    /// whose approval does not count for it: the plan does not wait on them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_by: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EffectCounts {
    pub direct: u32,
    pub derived: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ValidationCounts {
    pub error: u32,
    pub warning: u32,
    pub info: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PlanSummary {
    pub plan_id: String,
    pub plan_digest: String,
    pub capability_id: String,
    pub title: String,
    pub caller: Caller,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub status: PlanStatus,
    pub estimated_cost: EstimatedCost,
    pub effect_counts: EffectCounts,
    pub subjects_total: u64,
    pub validation_counts: ValidationCounts,
    pub risk: Vec<RiskFlag>,
    pub approvals: Approvals,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApprovalList {
    pub items: Vec<PlanSummary>,
    pub revision: String,
    /// Where the next page starts; present only when the queue did not fit in this answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MovedRevision {
    pub resource: String,
    pub planned: String,
    pub current: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Staleness {
    pub moved: Vec<MovedRevision>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PlanRecord {
    pub plan: Preview,
    pub status: PlanStatus,
    pub approvals: Approvals,
    pub supersedes: Option<String>,
    pub superseded_by: Option<String>,
    pub stale: Option<Staleness>,
    pub execution: Option<Value>,
    /// The capability's title, as the queue's summaries name it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The wallet of the plan's agent as it is now, beside the plan's cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wallet: Option<PlanWallet>,
    /// The items a validation entry counts, by name, as the gateway found them for the preview.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub validation_subjects: Vec<ValidationSubjects>,
    /// Whether the approver reading the record may decide the plan, and why not (an addition to
    /// PROTOCOL's plan record; absent for an agent's read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eligibility: Option<Eligibility>,
    /// Who changed the request of the plan this one supersedes, and how (`docs/amend.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amendment: Option<Amendment>,
}

/// An approver's change to a plan's request, previewed as its successor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Amendment {
    pub approver_id: String,
    pub display_name: String,
    /// The plan whose request was changed.
    pub amends: String,
    pub changes: Vec<ParamChange>,
    /// "Lena changed retention_days from 7 to 14."
    pub summary: String,
}

/// One param an amendment changed; `before` or `after` is absent where the param was added or
/// removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ParamChange {
    /// A JSON pointer into the params.
    pub param: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Value>,
}

impl ParamChange {
    /// The params that differ between `before` and `after`, by JSON pointer: objects member by
    /// member, anything else as a whole.
    pub fn between(before: &Value, after: &Value) -> Vec<ParamChange> {
        let mut changes = Vec::new();
        diff("", Some(before), Some(after), &mut changes);
        changes
    }

    /// "Lena changed retention_days from 7 to 14 and removed note."
    pub fn summary(who: &str, changes: &[ParamChange]) -> String {
        let joined = match changes
            .iter()
            .map(ParamChange::words)
            .collect::<Vec<_>>()
            .as_slice()
        {
            [] => "changed nothing".to_owned(),
            [one] => one.clone(),
            [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
        };
        format!("{who} {joined}.")
    }

    /// "changed retention_days from 7 to 14", "set note to x", "removed note".
    pub fn words(&self) -> String {
        let text = |v: &Value| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let name = self.param.trim_start_matches('/').replace('/', ".");
        match (&self.before, &self.after) {
            (Some(b), Some(a)) => format!("changed {name} from {} to {}", text(b), text(a)),
            (None, Some(a)) => format!("set {name} to {}", text(a)),
            (Some(_), None) => format!("removed {name}"),
            (None, None) => format!("left {name}"),
        }
    }
}

fn diff(at: &str, before: Option<&Value>, after: Option<&Value>, out: &mut Vec<ParamChange>) {
    match (before, after) {
        (Some(Value::Object(b)), Some(Value::Object(a))) => {
            let mut keys: Vec<&String> = b.keys().chain(a.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let pointer = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
                diff(&pointer, b.get(key), a.get(key), out);
            }
        }
        (b, a) if b != a => out.push(ParamChange {
            param: at.to_owned(),
            before: b.cloned(),
            after: a.cloned(),
        }),
        _ => {}
    }
}

/// `POST /v1/plans/{id}/amend`: the params the approver wants previewed instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct AmendRequest {
    pub params: Value,
}

/// An approver's public key as the gateway holds it, for checking their signatures offline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApproverKey {
    pub approver_id: String,
    pub display_name: String,
    pub key_id: String,
    /// Base64url, as enrollment sent it.
    pub public_key: String,
    pub created_at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApproverKeys {
    pub gateway_id: String,
    /// The gateway's identity key, which signs its receipts (`countersign.receipt/v1`): the key
    /// the invite's fingerprint names. Absent from a keys file written before receipts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_key: Option<GatewayKey>,
    pub keys: Vec<ApproverKey>,
}

/// A gateway's identity key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GatewayKey {
    /// 128 bits of SHA-256 over the raw key, in hex: what an invite names.
    pub fingerprint: String,
    /// Base64url.
    pub public_key: String,
}

/// Whether the approver who reads a plan may decide it: not a plan made on their own behalf, not a
/// plan that grants access to them, not a second decision of one person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Eligibility {
    pub eligible: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// An agent's budget as a plan record shows it (an addition to PROTOCOL's plan record).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PlanWallet {
    pub agent_id: String,
    pub remaining_credits: Credits,
    pub limit_credits: Credits,
}

/// The items behind the validation entry with `code`: `total` of them, the first
/// [`VALIDATION_SUBJECT_LIMIT`] in `items` (ids ascending).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ValidationSubjects {
    pub code: String,
    pub total: u64,
    pub items: Vec<SubjectItem>,
}

/// At most this many items of a validation entry are named in a plan record.
pub const VALIDATION_SUBJECT_LIMIT: usize = 100;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DecisionResponse {
    pub plan_id: String,
    pub status: PlanStatus,
    pub approvals: Approvals,
    /// The gateway's receipt for the decision this answers (`countersign.receipt/v1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<crate::dsse::Envelope>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_status_names_itself_as_the_wire_does() {
        use PlanStatus::*;
        for status in [
            PendingApproval,
            Approved,
            Rejected,
            Executed,
            Stale,
            Expired,
            Superseded,
            Failed,
        ] {
            assert_eq!(serde_json::to_value(status).unwrap(), status.as_str());
        }
    }

    #[test]
    fn the_summary_names_each_changed_param() {
        let changes = ParamChange::between(
            &json!({"project": "prj_184", "retention_days": 7, "filter": {"team": "a"}, "note": "x"}),
            &json!({"project": "prj_184", "retention_days": 14, "filter": {"team": "b"}}),
        );
        assert_eq!(
            changes.iter().map(|c| c.param.as_str()).collect::<Vec<_>>(),
            ["/filter/team", "/note", "/retention_days"]
        );
        assert_eq!(
            ParamChange::summary("Lena", &changes),
            "Lena changed filter.team from a to b, removed note and changed retention_days from 7 to 14."
        );
        assert!(ParamChange::between(&json!({"a": [1]}), &json!({"a": [1]})).is_empty());
    }
}
