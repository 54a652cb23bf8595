//! What a policy reads (`input`): the plan as previewed, its risk, its capability's own rule,
//! the agent, the directory of people and teams, and the time. `docs/policy.md` shows it whole.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use countersign_proto::approvals::RiskFlag;
use serde::Serialize;
use serde_json::Value;

#[derive(Debug, Clone, Serialize)]
pub struct Input {
    /// The preview, without `plan_digest` and `would_require_approval`: the policy decides the
    /// latter, and the digest covers it.
    pub plan: Value,
    pub risk: Vec<RiskFlag>,
    pub capability: CapabilityInput,
    pub agent: AgentInput,
    pub directory: Directory,
    pub now: DateTime<Utc>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CapabilityInput {
    pub id: String,
    pub title: String,
    /// The capability's own rule, as its pack declares it.
    pub approval: DefaultApproval,
    /// What else its pack tells a policy (`mcp`: the upstream, the tool and its annotations).
    #[serde(flatten)]
    pub facts: serde_json::Map<String, Value>,
}

/// A pack's `ApprovalRule` and quorum, as data the built-in policy reads.
#[derive(Debug, Clone, Serialize)]
pub struct DefaultApproval {
    /// `always`, `when_risky` or `above_cost`.
    pub rule: &'static str,
    /// For `above_cost`: the credits above which a plan waits, as a decimal string.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub above: Option<String>,
    pub required_approvals: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct AgentInput {
    pub id: String,
    pub on_behalf_of: Option<String>,
    pub team: Option<String>,
    /// `capability_id` or `capability_id:resource`; empty for an agent with full access.
    pub scopes: Vec<String>,
}

/// People and teams as the gateway's directory holds them. A person is a user id (`usr_…`), or
/// an approver's id for an approver invited without one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Directory {
    /// Each team's members.
    pub teams: BTreeMap<String, Vec<String>>,
    /// Each person's teams.
    pub people: BTreeMap<String, Vec<String>>,
}

impl Directory {
    /// The directory of these (team, person) memberships.
    pub fn of(memberships: impl IntoIterator<Item = (String, String)>) -> Directory {
        let mut directory = Directory::default();
        for (team, person) in memberships {
            directory
                .people
                .entry(person.clone())
                .or_default()
                .push(team.clone());
            directory.teams.entry(team).or_default().push(person);
        }
        for list in directory
            .teams
            .values_mut()
            .chain(directory.people.values_mut())
        {
            list.sort();
            list.dedup();
        }
        directory
    }
}
