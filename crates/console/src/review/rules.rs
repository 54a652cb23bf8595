//! Who must approve a plan, as the gateway's approval policy set it (docs/policy.md), and whose
//! turn it is: the rules an approver reads beside the plan, and whether the plan waits on them.
//! The rules are the gateway's, not part of the signed plan, and the view says so.

use countersign_proto::approvals::{
    ApprovalEntry, Approvals, ApproverProfile, PlanStatus, PlanSummary, RiskFlag,
};
use serde::Serialize;
use ts_rs::TS;

use crate::wire::time;

/// Whose move a plan waits for, as this approver sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Turn {
    /// A rule not yet met asks for this approver, who has not decided the plan.
    Me,
    /// This approver decided it.
    Decided,
    /// Other people's: no open rule asks for this approver.
    Others,
}

/// A rule as the plan view shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct RuleView {
    pub id: String,
    pub description: String,
    /// "Needs 2 of leads — 1 received (Lena)", "Met: 1 of finance — 1 received (Fay)".
    pub line: String,
    pub missing: u32,
    /// Display names of the approvers counted for it.
    pub met_by: Vec<String>,
    /// "approval.rego:34", where the rule is written in the policy.
    pub source: Option<String>,
    /// It is not met and asks for this approver.
    pub asks_me: bool,
    /// "also oncall since 10:42Z" once the rule widened to its escalation.
    pub escalated: Option<String>,
    /// "not agt_ops's team (finance)" when it leaves the requesting agent's team out.
    pub excludes: Option<String>,
}

/// Whether `status` still takes decisions (a stale plan does once refreshed).
fn open(summary_status: PlanStatus, risk: &[RiskFlag]) -> bool {
    matches!(
        summary_status,
        PlanStatus::PendingApproval | PlanStatus::Stale
    ) && !risk.contains(&RiskFlag::Blocked)
}

fn decided_by(received: &[ApprovalEntry], me: &ApproverProfile) -> bool {
    received.iter().any(|a| a.approver_id == me.approver_id)
}

/// Whose turn `summary` is for `me`; while who `me` is is not known (an older gateway, or not
/// asked yet), every open plan may be this approver's.
pub fn turn(summary: &PlanSummary, me: Option<&ApproverProfile>) -> Turn {
    turn_of(summary.status, &summary.risk, &summary.approvals, me)
}

pub(crate) fn turn_of(
    status: PlanStatus,
    risk: &[RiskFlag],
    approvals: &Approvals,
    me: Option<&ApproverProfile>,
) -> Turn {
    let open = open(status, risk);
    match me {
        None if open => Turn::Me,
        None => Turn::Others,
        Some(me) if decided_by(&approvals.received, me) => Turn::Decided,
        Some(me) if open && me.is_asked(approvals) => Turn::Me,
        Some(_) => Turn::Others,
    }
}

/// The rules of a plan with `approvals`, each as a line an approver reads.
pub fn views(approvals: &Approvals, agent_id: &str, me: Option<&ApproverProfile>) -> Vec<RuleView> {
    approvals
        .rules
        .iter()
        .map(|status| {
            let met_by: Vec<String> = status
                .met_by
                .iter()
                .map(|id| {
                    approvals
                        .received
                        .iter()
                        .find(|a| &a.approver_id == id)
                        .map_or_else(|| id.clone(), |a| a.display_name.clone())
                })
                .collect();
            let escalated =
                status
                    .escalated_at
                    .zip(status.rule.escalate.as_ref())
                    .map(|(at, to)| {
                        let mut who: Vec<&str> = to.teams.iter().map(String::as_str).collect();
                        who.extend(to.people.iter().map(String::as_str));
                        format!("also {} since {}", who.join(" or "), time(at))
                    });
            RuleView {
                id: status.rule.id.clone(),
                description: status.rule.description.clone(),
                line: status.line(&met_by),
                missing: status.missing,
                source: status
                    .rule
                    .source
                    .as_ref()
                    .map(|s| format!("{}:{}", s.file, s.line)),
                asks_me: status.missing > 0
                    && me.is_some_and(|me| {
                        !decided_by(&approvals.received, me)
                            && approvals.requested_by.as_ref() != Some(&me.approver_id)
                            && status.asks(&me.person, &me.teams)
                    }),
                escalated,
                excludes: status
                    .excludes_team
                    .as_ref()
                    .map(|team| format!("not {agent_id}'s team ({team})")),
                met_by,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;

/// Why the gateway's approval policy (the risk flags it lets a standing approval cover, as
/// `me` says) would refuse a standing approval for a plan of `risk`, or `None` when it would not
/// or the gateway does not say.
pub fn standing_refused(risk: &[RiskFlag], me: Option<&ApproverProfile>) -> Option<String> {
    let coverable = me?.standing_flags.as_ref()?;
    let refused: Vec<String> = risk
        .iter()
        .filter(|f| !coverable.contains(f))
        .map(|f| countersign_proto::standing::flag_text(*f))
        .collect();
    (!refused.is_empty()).then(|| {
        format!(
            "The approval policy lets no standing approval cover {} plans.",
            refused.join(" or ")
        )
    })
}
