//! Standing approvals (`docs/standing.md`): an approver's signed statement that the plans of one
//! agent and capability that fit its constraints count as their approval, within caps, until it
//! expires, is used up or revoked. What it covers is decided here, from the statement and the
//! plan alone, so that the gateway and a console read it the same way.

use chrono::{DateTime, Duration, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::approvals::RiskFlag;
use crate::credits::Credits;
use crate::dsse::Envelope;
use crate::plan::Preview;
use crate::risk::{default_high_cost_threshold, risk_flags};
use crate::statement::is_lower_hex;
pub use crate::statement::{Signed, StatementError};

pub const STANDING_STATEMENT_TYPE: &str = "countersign.standing/v1";
pub const STANDING_PAYLOAD_TYPE: &str = "application/vnd.countersign.standing+json";

/// The longest a standing approval may last.
pub const MAX_LIFETIME: Duration = Duration::days(30);
/// The most plans one standing approval may cover.
pub const MAX_PLANS: u32 = 1000;
/// The most constraints, and resources, one statement may name.
pub const MAX_CONSTRAINTS: usize = 32;

/// What a standing approval may cover when the policy says nothing: every flag but the two whose
/// plans a person should see each time.
pub const DEFAULT_COVERABLE: [RiskFlag; 6] = [
    RiskFlag::AccessChange,
    RiskFlag::Money,
    RiskFlag::External,
    RiskFlag::Uncertain,
    RiskFlag::HighCost,
    RiskFlag::Blocked,
];

/// The statement an approver signs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct StandingStatement {
    #[serde(rename = "type")]
    pub kind: String,
    /// `sa_` and 16 lowercase hex digits, chosen by the signer.
    pub standing_id: String,
    pub approver_id: String,
    pub key_id: String,
    /// The gateway it is for.
    pub audience: String,
    pub agent_id: String,
    pub capability_id: String,
    /// Each must hold of the plan's params.
    pub constraints: Vec<Constraint>,
    /// Every effect's resource must be one of these (a trailing `*` matches a prefix); none
    /// leaves the resources to the constraints.
    pub resources: Vec<String>,
    /// The risk flags it may cover: a plan carrying any other is not covered.
    pub risk_flags: Vec<RiskFlag>,
    pub max_cost_per_plan: Credits,
    pub max_cost_total: Credits,
    pub max_plans: u32,
    pub reason: String,
    pub nonce: String,
    pub issued_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

/// One condition on the params: exactly one of `one_of`, `at_least`, `at_most`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Constraint {
    /// A JSON pointer into the params, e.g. `/project`.
    pub param: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_of: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_least: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_most: Option<f64>,
}

impl Constraint {
    /// Why `params` do not meet it, if they do not.
    pub fn refuses(&self, params: &Value) -> Option<String> {
        let name = self.param.trim_start_matches('/');
        let Some(value) = params.pointer(&self.param) else {
            return Some(format!("the request has no {name}"));
        };
        if let Some(allowed) = &self.one_of {
            return (!allowed.contains(value))
                .then(|| format!("{name} is {value}, not {}", self.line_value()));
        }
        let Value::Number(number) = value else {
            return Some(format!("{name} is {value}, not a number"));
        };
        // Compared as the decimals they are written as, never through f64: a bound near 1e18
        // would otherwise let a value past it through by a rounding step.
        let Some(number) = exact(&number.to_string()) else {
            return Some(format!("{name} is {value}, too large to compare exactly"));
        };
        let bound = |b: f64| serde_json::Number::from_f64(b).and_then(|b| exact(&b.to_string()));
        match (self.at_least, self.at_most) {
            (Some(min), _) => match bound(min) {
                Some(min) if number >= min => None,
                Some(min) => Some(format!("{name} is {value}, below {}", min.normalize())),
                None => Some(format!(
                    "its bound on {name} is too large to compare exactly"
                )),
            },
            (_, Some(max)) => match bound(max) {
                Some(max) if number <= max => None,
                Some(max) => Some(format!("{name} is {value}, above {}", max.normalize())),
                None => Some(format!(
                    "its bound on {name} is too large to compare exactly"
                )),
            },
            (None, None) => None,
        }
    }

    fn line_value(&self) -> String {
        match &self.one_of {
            Some(values) => values
                .iter()
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join(" or "),
            None => String::new(),
        }
    }

    /// "project is prj_184", "retention_days ≥ 7".
    pub fn line(&self) -> String {
        let name = self.param.trim_start_matches('/');
        match (&self.one_of, self.at_least, self.at_most) {
            (Some(_), ..) => format!("{name} is {}", self.line_value()),
            (None, Some(min), _) => format!("{name} ≥ {min}"),
            (None, None, Some(max)) => format!("{name} ≤ {max}"),
            (None, None, None) => format!("{name} (no condition)"),
        }
    }

    fn well_formed(&self) -> Result<(), &'static str> {
        if !self.param.starts_with('/') || self.param.len() > 200 {
            return Err("a constraint's param must be a JSON pointer such as /project");
        }
        let tests = usize::from(self.one_of.is_some())
            + usize::from(self.at_least.is_some())
            + usize::from(self.at_most.is_some());
        if tests != 1 {
            return Err("a constraint has exactly one of one_of, at_least, at_most");
        }
        if self
            .one_of
            .as_ref()
            .is_some_and(|v| v.is_empty() || v.len() > 100)
        {
            return Err("one_of lists 1 to 100 values");
        }
        Ok(())
    }
}

/// A standing approval's id: `sa_` and 16 lowercase hex digits.
pub fn new_standing_id() -> String {
    format!("sa_{}", &crate::decision::new_nonce()[..16])
}

impl Signed for StandingStatement {
    const PAYLOAD_TYPE: &'static str = STANDING_PAYLOAD_TYPE;
    const STATEMENT_TYPE: &'static str = STANDING_STATEMENT_TYPE;
    const NAME: &'static str = "standing statement";

    crate::statement_names!();

    fn well_formed(&self) -> Result<(), &'static str> {
        let id_hex = self.standing_id.strip_prefix("sa_").unwrap_or_default();
        if !is_lower_hex(id_hex, 16) {
            return Err("standing_id must be sa_ and 16 lowercase hex digits");
        }
        if !is_lower_hex(&self.nonce, 32) {
            return Err("the nonce must be 32 lowercase hex digits");
        }
        if self.expires_at <= self.issued_at || self.expires_at - self.issued_at > MAX_LIFETIME {
            return Err("a standing approval lasts more than nothing and at most 30 days");
        }
        if !(1..=MAX_PLANS).contains(&self.max_plans) {
            return Err("max_plans must be 1 to 1000");
        }
        let (per_plan, total) = (self.max_cost_per_plan.value(), self.max_cost_total.value());
        if per_plan.is_sign_negative() || total.is_sign_negative() || per_plan > total {
            return Err("the caps are not negative, and the per-plan cap is at most the total");
        }
        if self.reason.trim().is_empty() || self.reason.len() > 1000 {
            return Err("a standing approval needs a reason (at most 1000 bytes)");
        }
        if self.constraints.len() > MAX_CONSTRAINTS || self.resources.len() > MAX_CONSTRAINTS {
            return Err("at most 32 constraints and 32 resources");
        }
        if self.resources.iter().any(|r| r.is_empty() || r == "*") {
            return Err("a resource is named, not left open with a lone *");
        }
        let mut flags = self.risk_flags.clone();
        flags.sort();
        flags.dedup();
        if flags.len() != self.risk_flags.len() {
            return Err("each risk flag is listed once");
        }
        for constraint in &self.constraints {
            constraint.well_formed()?;
        }
        Ok(())
    }
}

impl StandingStatement {
    /// Why `plan` is not one this statement covers (its agent, capability, params, resources,
    /// risk flags, cost), read from the plan alone; `coverable` is what the policy lets a
    /// standing approval cover now.
    pub fn refuses(&self, plan: &Preview, coverable: &[RiskFlag]) -> Option<String> {
        if plan.caller.agent_id != self.agent_id {
            return Some(format!(
                "the plan is {}'s, not {}'s",
                plan.caller.agent_id, self.agent_id
            ));
        }
        if plan.capability_id != self.capability_id {
            return Some(format!(
                "the plan is {}, not {}",
                plan.capability_id, self.capability_id
            ));
        }
        if let Some(why) = self
            .constraints
            .iter()
            .find_map(|c| c.refuses(&plan.request.params))
        {
            return Some(why);
        }
        if !self.resources.is_empty() {
            let outside = plan.effects.iter().find(|e| {
                !self
                    .resources
                    .iter()
                    .any(|r| resource_matches(r, &e.resource))
            });
            if let Some(effect) = outside {
                return Some(format!(
                    "the plan acts on {}, which it does not name",
                    effect.resource
                ));
            }
        }
        for flag in risk_flags(plan, default_high_cost_threshold()) {
            if !self.risk_flags.contains(&flag) {
                return Some(format!(
                    "the plan is {}, which it does not cover",
                    flag_text(flag)
                ));
            }
            if !coverable.contains(&flag) {
                return Some(format!(
                    "the plan is {}, which the approval policy lets no standing approval cover",
                    flag_text(flag)
                ));
            }
        }
        let cost = plan.estimated_cost.amount_max;
        if cost > self.max_cost_per_plan {
            return Some(format!(
                "the plan may cost {cost} credits, over its {} per plan",
                self.max_cost_per_plan
            ));
        }
        None
    }

    /// What it allows, in words: the sentence a console confirms before signing it.
    pub fn allows(&self) -> String {
        self.allows_leaving_open(&[])
    }

    /// [`Self::allows`], naming the params it leaves open (`/filter` as "any filter"): a console
    /// knows them from the capability's schema, the statement alone does not.
    pub fn allows_leaving_open(&self, open: &[String]) -> String {
        let mut when: Vec<String> = self.constraints.iter().map(Constraint::line).collect();
        when.extend(
            open.iter()
                .map(|param| format!("any {}", param.trim_start_matches('/'))),
        );
        if !self.resources.is_empty() {
            when.push(format!("acting only on {}", self.resources.join(", ")));
        }
        let flags = match self.risk_flags.is_empty() {
            true => "carrying no risk flag".to_owned(),
            false => format!(
                "carrying at most these risks: {}",
                self.risk_flags
                    .iter()
                    .map(|f| flag_text(*f))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        when.push(flags);
        format!(
            "Approves plans of {} for {} without asking, when {}: up to {} plans, {} credits \
             each and {} credits in all, until {}.",
            self.agent_id,
            self.capability_id,
            when.join("; "),
            self.max_plans,
            self.max_cost_per_plan,
            self.max_cost_total,
            self.expires_at.format("%Y-%m-%d %H:%MZ"),
        )
    }
}

/// A JSON number's text as an exact decimal, if it fits one (28 significant digits).
fn exact(text: &str) -> Option<Decimal> {
    match text.contains(['e', 'E']) {
        true => Decimal::from_scientific(text).ok(),
        false => Decimal::from_str_exact(text).ok(),
    }
}

/// `pattern` names `resource`: equal, or a prefix of it when it ends in `*`.
pub fn resource_matches(pattern: &str, resource: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => resource.starts_with(prefix),
        None => pattern == resource,
    }
}

/// A flag as its wire name reads, "irreversible", "high_cost".
pub fn flag_text(flag: RiskFlag) -> String {
    match serde_json::to_value(flag) {
        Ok(Value::String(s)) => s,
        _ => format!("{flag:?}"),
    }
}

/// Where a standing approval stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum StandingState {
    Active,
    Expired,
    /// Its plans or its credits are used up.
    UsedUp,
    /// By its signer or an admin, or its key or approver was revoked.
    Revoked,
    /// The approval policy no longer lets it cover what it names.
    Suspended,
}

/// A plan a standing approval let run: one of its uses, taken as the plan ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StandingUse {
    /// 1 for the first plan it let run.
    pub number: u32,
    pub plan_id: String,
    pub plan_digest: String,
    /// The plan's `amount_max`, taken from its credits.
    pub credits: Credits,
    /// When the plan ran.
    pub at: DateTime<Utc>,
    /// The gateway's receipt for this use (`countersign.receipt/v1`, `standing_use`).
    pub receipt: Envelope,
}

/// A plan a standing approval approved that has not run: it takes a use only when it runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CoveredPlan {
    pub plan_id: String,
    pub plan_digest: String,
    /// When the standing approval counted as an approval of it.
    pub at: DateTime<Utc>,
}

/// A standing approval as the gateway holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StandingApproval {
    pub standing_id: String,
    pub display_name: String,
    pub statement: StandingStatement,
    /// The envelope as it was received, verbatim.
    pub envelope: Envelope,
    /// The gateway's receipt for it (`countersign.receipt/v1`, `standing`).
    pub receipt: Envelope,
    /// Plans it let run.
    pub plans_used: u32,
    pub credits_used: Credits,
    pub state: StandingState,
    /// Why it is not active, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_reason: Option<String>,
    /// The plans it let run, newest first (at most 100).
    pub uses: Vec<StandingUse>,
    /// The plans it approved that have not run ("covered, not yet run"), newest first (at most
    /// 100): each takes a use only if it runs.
    pub covered: Vec<CoveredPlan>,
}

/// A page of standing approvals, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StandingList {
    pub items: Vec<StandingApproval>,
    /// Where the next page starts (`GET /v1/standing?cursor=…`); none after the last.
    #[serde(default)]
    pub next_cursor: Option<String>,
}

#[cfg(test)]
mod tests;
