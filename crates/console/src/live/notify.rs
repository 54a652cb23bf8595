//! Which new plans deserve a desktop notification: those waiting on this approver (or any, if
//! they said so) carrying a risk flag or belonging to a capability the approver selected, once
//! per plan, and never for plans already seen.

use std::collections::BTreeSet;

use countersign_proto::approvals::{PlanStatus, PlanSummary, RiskFlag};
use countersign_proto::plan::Preview;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::error::ConsoleError;
use crate::review::rules::Turn;
use crate::review::{console_risk, PlanView};
use crate::signing::journal::Journal;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct NotifyRules {
    /// Risk flags (PROTOCOL section 3) that make a plan worth a notification.
    pub risk: BTreeSet<String>,
    /// Capabilities whose every plan is worth one.
    pub capabilities: BTreeSet<String>,
    /// Count (in the tray) and announce every plan in the queue, not only those waiting on this
    /// approver (a rule of the gateway's policy asks for them).
    #[serde(default)]
    pub every_plan: bool,
}

impl Default for NotifyRules {
    /// What DESIGN.md calls risky: irreversible, access, money, external, bulk.
    fn default() -> Self {
        NotifyRules {
            risk: [
                RiskFlag::Irreversible,
                RiskFlag::AccessChange,
                RiskFlag::Money,
                RiskFlag::External,
                RiskFlag::Bulk,
                RiskFlag::HighCost,
            ]
            .iter()
            .map(flag_name)
            .collect(),
            capabilities: BTreeSet::new(),
            every_plan: false,
        }
    }
}

fn flag_name(flag: &RiskFlag) -> String {
    match serde_json::to_value(flag) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

impl NotifyRules {
    /// Whether a fetched plan matches the rules, judged on the console's own risk flags
    /// (recomputed from its effects), not on the gateway's summary. A blocked plan never does:
    /// nobody can approve it (PROTOCOL section 2).
    pub fn selects_plan(&self, plan: &PlanView) -> bool {
        plan.status == "pending_approval"
            && !plan.risk.iter().any(|f| f == "blocked")
            && self.counts(plan.turn)
            && (self.capabilities.contains(&plan.capability_id)
                || plan.risk.iter().any(|f| self.risk.contains(f)))
    }

    /// Whether a plan whose turn is `turn` counts: waiting on this approver, or any with
    /// `every_plan`.
    pub fn counts(&self, turn: Turn) -> bool {
        self.every_plan || turn == Turn::Me
    }

    /// [`NotifyRules::selects_plan`] for a plan as previewed.
    pub fn selects_preview(&self, plan: &Preview) -> bool {
        let risk = console_risk(plan);
        !risk.contains(&RiskFlag::Blocked)
            && (self.capabilities.contains(&plan.capability_id)
                || risk.iter().any(|f| self.risk.contains(&flag_name(f))))
    }

    /// Whether `plan` matches the rules by the gateway's summary, whatever was seen before.
    pub fn selects(&self, plan: &PlanSummary) -> bool {
        plan.status == PlanStatus::PendingApproval
            && !plan.risk.contains(&RiskFlag::Blocked)
            && (self.capabilities.contains(&plan.capability_id)
                || plan.risk.iter().any(|f| self.risk.contains(&flag_name(f))))
    }
}

/// The plans of `queue` to notify about now. Every plan is marked seen in `journal`; on the first
/// look at a gateway (`first_look`) everything already waiting is taken as seen, not announced.
pub async fn to_notify(
    journal: &Journal,
    gateway_id: &str,
    rules: &NotifyRules,
    queue: &[PlanSummary],
    first_look: bool,
) -> Result<Vec<PlanSummary>, ConsoleError> {
    let mut out = Vec::new();
    for plan in queue {
        let new = journal.first_sight(gateway_id, &plan.plan_id).await?;
        if new && !first_look && rules.selects(plan) {
            out.push(plan.clone());
        }
    }
    Ok(out)
}
