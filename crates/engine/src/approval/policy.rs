//! The approval policy where the engine meets it: what it reads of a plan and of who asks for
//! it, and its answer turned into the plan's [`Requirement`] or a refusal. A policy that denies
//! refuses the plan (`policy_denied`); one that errs refuses it too (`policy_error`): nothing is
//! stored either way, and nothing reaches a person.

use countersign_pack::ApprovalRule;
use countersign_policy::{
    AgentInput, CapabilityInput, DefaultApproval, Directory, Input, Policy, Reads,
};
use countersign_proto::plan::Preview;
use countersign_proto::risk::{default_high_cost_threshold, risk_flags};
use countersign_proto::ErrorCode;
use serde_json::{json, Value};
use sqlx::AnyConnection;

use crate::accounts::callers::Agent;
use crate::approval::requirement::Requirement;
use crate::registry::Capability;
use crate::{ApiError, ApiResult};

/// Who asks for a plan, as a policy reads them.
#[derive(Debug, Clone)]
pub struct Asking {
    pub agent: AgentInput,
    pub directory: Directory,
}

impl Asking {
    /// `agent` with its team and scopes, and the directory, as the store holds them now; what
    /// the policy never mentions (`reads`) is left empty rather than read: a round trip each.
    pub async fn load(
        conn: &mut AnyConnection,
        agent: &Agent,
        reads: Reads,
    ) -> Result<Asking, sqlx::Error> {
        let (mut team, mut scopes) = (None, Vec::new());
        if reads.agent {
            let rows: Vec<(Option<String>, Option<String>, Option<String>)> = sqlx::query_as(
                "SELECT a.team, s.capability_id, s.resource
                 FROM agents a LEFT JOIN agent_scopes s ON s.agent_id = a.id
                 WHERE a.id = $1 ORDER BY s.capability_id, s.resource",
            )
            .bind(&agent.id)
            .fetch_all(&mut *conn)
            .await?;
            team = rows.first().and_then(|(team, _, _)| team.clone());
            scopes = rows
                .into_iter()
                .filter_map(|(_, capability, resource)| match (capability?, resource?) {
                    (capability, resource) if resource == "*" => Some(capability),
                    (capability, resource) => Some(format!("{capability}:{resource}")),
                })
                .collect();
        }
        let directory = match reads.directory {
            true => directory(conn).await?,
            false => Directory::default(),
        };
        Ok(Asking {
            agent: AgentInput {
                id: agent.id.clone(),
                on_behalf_of: agent.on_behalf_of.clone(),
                team,
                scopes,
            },
            directory,
        })
    }
}

/// Every team's members.
pub async fn directory(conn: &mut AnyConnection) -> Result<Directory, sqlx::Error> {
    let rows: Vec<(String, String)> =
        sqlx::query_as("SELECT team, person FROM team_members ORDER BY team, person")
            .fetch_all(&mut *conn)
            .await?;
    Ok(Directory::of(rows))
}

/// What `capability`'s pack says of its own plans, as the built-in policy reads it.
pub fn default_approval(capability: Capability) -> DefaultApproval {
    let required_approvals = capability.describe().approval.required_approvals;
    let (rule, above) = match capability.approval() {
        ApprovalRule::Always => ("always", None),
        ApprovalRule::WhenRisky => ("when_risky", None),
        ApprovalRule::AboveCost(limit) => ("above_cost", Some(limit.to_string())),
    };
    DefaultApproval {
        rule,
        above,
        required_approvals,
    }
}

/// What the capability's pack tells a policy, never in place of what the engine says of it.
fn facts(capability: Capability) -> serde_json::Map<String, Value> {
    let mut facts = capability.policy_facts();
    facts.retain(|key, _| !matches!(key.as_str(), "id" | "title" | "approval"));
    facts
}

/// What `policy` reads of `preview` (before its approval and digest are set) asked for by
/// `asking`.
pub fn input(capability: Capability, preview: &Preview, asking: &Asking) -> ApiResult<Input> {
    let mut plan = serde_json::to_value(preview)?;
    if let Value::Object(fields) = &mut plan {
        fields.remove("plan_digest");
        fields.remove("would_require_approval");
    }
    Ok(Input {
        plan,
        risk: risk_flags(preview, default_high_cost_threshold()),
        capability: CapabilityInput {
            id: capability.id().to_owned(),
            title: capability.title().to_owned(),
            approval: default_approval(capability),
            facts: facts(capability),
        },
        agent: asking.agent.clone(),
        directory: asking.directory.clone(),
        now: preview.created_at,
    })
}

/// What `policy` requires of `preview`, or why it refuses it. A plan that changes nothing needs
/// nobody, whatever the policy asks (seed 004: no approval theatre), but a denial still holds.
pub fn requirement(
    policy: &Policy,
    capability: Capability,
    preview: &Preview,
    asking: &Asking,
) -> ApiResult<Requirement> {
    let input = input(capability, preview, asking)?;
    let started = std::time::Instant::now();
    let span = tracing::info_span!(
        "policy.evaluate",
        countersign.policy.digest = policy.digest()
    );
    let verdict = span.in_scope(|| policy.evaluate(&input));
    crate::telemetry::policy_evaluated(started.elapsed(), verdict.is_err());
    let verdict = verdict.map_err(|e| {
        ApiError::new(
            ErrorCode::PolicyError,
            format!("The approval policy could not decide this plan, so it is refused: {e}"),
        )
        .with_details(json!({ "policy_digest": policy.digest() }))
    })?;
    if !verdict.deny.is_empty() {
        return Err(ApiError::new(
            ErrorCode::PolicyDenied,
            format!(
                "The approval policy refuses this plan: {}",
                verdict.deny.join("; ")
            ),
        )
        .with_details(json!({ "reasons": verdict.deny, "policy_digest": policy.digest() })));
    }
    let rules = match preview.effects.is_empty() {
        true => Vec::new(),
        false => verdict.rules,
    };
    Ok(Requirement {
        rules,
        agent_team: asking.agent.team.clone(),
        denied: Vec::new(),
    })
}
