//! Standing approvals from the console (`docs/standing.md`): a draft prefilled from a plan, the
//! statement signed after the approver confirms in words what it lets run, the list with each
//! one's use, and revocation.

use chrono::{Duration, SubsecRound, Utc};
use countersign_proto::approvals::RiskFlag;
use countersign_proto::decision::new_nonce;
use countersign_proto::risk::{default_high_cost_threshold, risk_flags};
use countersign_proto::standing::{
    flag_text, new_standing_id, Constraint, StandingApproval, StandingState, StandingStatement,
    STANDING_STATEMENT_TYPE,
};
use countersign_proto::Credits;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

use crate::confirm::{self, Confirm};
use crate::console::Console;
use crate::error::ConsoleError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ConstraintOp {
    OneOf,
    AtLeast,
    AtMost,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ConstraintView {
    /// A JSON pointer into the request's params, e.g. "/project".
    pub param: String,
    pub op: ConstraintOp,
    /// The values as JSON text each: ["\"prj_184\""] for one_of, ["7"] for at_least / at_most.
    pub values: Vec<String>,
    /// "project is prj_184", "retention_days ≥ 7"
    pub line: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct StandingDraft {
    pub plan_id: String,
    pub agent_id: String,
    pub capability_id: String,
    pub constraints: Vec<ConstraintView>,
    /// Every effect's resource must be one of these ("projects/prj_184"; a trailing * matches a
    /// prefix).
    pub resources: Vec<String>,
    /// The risk flags it may cover: the plan's own.
    pub risk_flags: Vec<String>,
    pub max_cost_per_plan: String,
    pub max_cost_total: String,
    pub max_plans: u32,
    /// 1 to 30.
    pub days: u32,
    pub reason: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(rename = "StandingState")]
pub enum StandingStateView {
    Active,
    Expired,
    UsedUp,
    Revoked,
    Suspended,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct StandingView {
    pub id: String,
    /// The signer's display name.
    pub approver: String,
    pub mine: bool,
    pub agent_id: String,
    pub capability_id: String,
    pub constraints: Vec<ConstraintView>,
    pub resources: Vec<String>,
    pub risk_flags: Vec<String>,
    pub max_plans: u32,
    pub plans_used: u32,
    pub max_cost_per_plan: String,
    pub max_cost_total: String,
    pub credits_used: String,
    pub issued_at: String,
    pub expires_at: String,
    pub reason: String,
    pub state: StandingStateView,
    /// Why it is not active, in words ("revoked by Dana", "the key that signed it was revoked").
    pub state_reason: Option<String>,
    /// What it allows, in words: the sentence the native confirmation showed.
    pub allows: String,
    /// The plans it counted for, newest first.
    pub covered: Vec<String>,
}

/// Plans a draft allows, and for how long, unless the approver changes it.
const DRAFT_PLANS: u32 = 10;
const DRAFT_DAYS: u32 = 7;

fn json_text(value: &Value) -> String {
    value.to_string()
}

/// How a constraint reads in the console.
pub fn view_of(constraint: &Constraint) -> ConstraintView {
    let (op, values) = match (&constraint.one_of, constraint.at_least, constraint.at_most) {
        (Some(values), ..) => (ConstraintOp::OneOf, values.iter().map(json_text).collect()),
        (None, Some(min), _) => (ConstraintOp::AtLeast, vec![number_text(min)]),
        (None, None, Some(max)) => (ConstraintOp::AtMost, vec![number_text(max)]),
        (None, None, None) => (ConstraintOp::OneOf, Vec::new()),
    };
    ConstraintView {
        param: constraint.param.clone(),
        op,
        values,
        line: constraint.line(),
    }
}

fn number_text(n: f64) -> String {
    serde_json::Number::from_f64(n).map_or_else(|| n.to_string(), |n| n.to_string())
}

/// The constraint a view stands for: what is signed is built from the structured values, never
/// from the `line` a window sent.
fn constraint_of(view: &ConstraintView) -> Result<Constraint, ConsoleError> {
    let name = view.param.trim_start_matches('/');
    let parse = |text: &String| {
        serde_json::from_str::<Value>(text)
            .map_err(|_| ConsoleError::Invalid(format!("{name}: {text:?} is not a JSON value")))
    };
    let values = view
        .values
        .iter()
        .map(parse)
        .collect::<Result<Vec<_>, _>>()?;
    let number = || match values.as_slice() {
        [Value::Number(n)] => n
            .as_f64()
            .ok_or_else(|| ConsoleError::Invalid(format!("{name}: not a number"))),
        _ => Err(ConsoleError::Invalid(format!(
            "{name}: at least and at most take one number"
        ))),
    };
    let mut constraint = Constraint {
        param: view.param.clone(),
        one_of: None,
        at_least: None,
        at_most: None,
    };
    match view.op {
        ConstraintOp::OneOf if values.is_empty() => {
            return Err(ConsoleError::Invalid(format!(
                "{name}: give at least one value"
            )))
        }
        ConstraintOp::OneOf => constraint.one_of = Some(values),
        ConstraintOp::AtLeast => constraint.at_least = Some(number()?),
        ConstraintOp::AtMost => constraint.at_most = Some(number()?),
    }
    Ok(constraint)
}

fn flag_of(text: &str) -> Result<RiskFlag, ConsoleError> {
    serde_json::from_value(Value::String(text.to_owned()))
        .map_err(|_| ConsoleError::Invalid(format!("{text:?} is not a risk flag")))
}

fn credits(text: &str, what: &str) -> Result<Credits, ConsoleError> {
    text.trim()
        .parse()
        .map_err(|_| ConsoleError::Invalid(format!("{what}: {text:?} is not an amount of credits")))
}

fn state_of(state: StandingState) -> StandingStateView {
    match state {
        StandingState::Active => StandingStateView::Active,
        StandingState::Expired => StandingStateView::Expired,
        StandingState::UsedUp => StandingStateView::UsedUp,
        StandingState::Revoked => StandingStateView::Revoked,
        StandingState::Suspended => StandingStateView::Suspended,
    }
}

impl StandingDraft {
    /// The statement this draft signs, for `console`'s approver, issued now.
    fn statement(&self, console: &Console) -> Result<StandingStatement, ConsoleError> {
        if !(1..=30).contains(&self.days) {
            return Err(ConsoleError::Invalid(
                "A standing approval lasts 1 to 30 days.".to_owned(),
            ));
        }
        let signer = console.signer();
        let now = Utc::now().trunc_subsecs(0);
        let statement = StandingStatement {
            kind: STANDING_STATEMENT_TYPE.to_owned(),
            standing_id: new_standing_id(),
            approver_id: signer.approver_id().to_owned(),
            key_id: signer.key_id().to_owned(),
            audience: signer.gateway_id().to_owned(),
            agent_id: self.agent_id.clone(),
            capability_id: self.capability_id.clone(),
            constraints: self
                .constraints
                .iter()
                .map(constraint_of)
                .collect::<Result<_, _>>()?,
            resources: self.resources.clone(),
            risk_flags: self
                .risk_flags
                .iter()
                .map(|f| flag_of(f))
                .collect::<Result<_, _>>()?,
            max_cost_per_plan: credits(&self.max_cost_per_plan, "the cap per plan")?,
            max_cost_total: credits(&self.max_cost_total, "the cap in all")?,
            max_plans: self.max_plans,
            reason: self.reason.trim().to_owned(),
            nonce: new_nonce(),
            issued_at: now,
            expires_at: now + Duration::days(i64::from(self.days)),
        };
        // The gateway's own checks, here first: a mistake is named before anything is signed.
        let bytes = statement
            .canonical_bytes()
            .map_err(|e| ConsoleError::Invalid(e.to_string()))?;
        StandingStatement::from_payload(&bytes).map_err(|e| ConsoleError::Invalid(e.to_string()))
    }
}

/// A standing approval as the console shows it to approver `me`.
pub fn view(standing: &StandingApproval, me: &str) -> StandingView {
    let s = &standing.statement;
    StandingView {
        id: standing.standing_id.clone(),
        approver: standing.display_name.clone(),
        mine: s.approver_id == me,
        agent_id: s.agent_id.clone(),
        capability_id: s.capability_id.clone(),
        constraints: s.constraints.iter().map(view_of).collect(),
        resources: s.resources.clone(),
        risk_flags: s.risk_flags.iter().map(|f| flag_text(*f)).collect(),
        max_plans: s.max_plans,
        plans_used: standing.plans_used,
        max_cost_per_plan: s.max_cost_per_plan.to_string(),
        max_cost_total: s.max_cost_total.to_string(),
        credits_used: standing.credits_used.to_string(),
        issued_at: s.issued_at.to_rfc3339(),
        expires_at: s.expires_at.to_rfc3339(),
        reason: s.reason.clone(),
        state: state_of(standing.state),
        state_reason: standing.state_reason.clone(),
        allows: s.allows(),
        covered: standing.covered.iter().map(|c| c.plan_id.clone()).collect(),
    }
}

impl Console {
    /// A standing approval prefilled from plan `plan_id`: its agent, capability and resources,
    /// each scalar param as a one_of constraint, its risk flags, its cost as the cap per plan and
    /// ten times it in all, 10 plans, 7 days.
    pub async fn standing_draft(&self, plan_id: &str) -> Result<StandingDraft, ConsoleError> {
        let plan = self.fetch(plan_id).await?.record.plan;
        let mut constraints = Vec::new();
        if let Value::Object(params) = &plan.request.params {
            for (name, value) in params {
                if matches!(value, Value::String(_) | Value::Number(_) | Value::Bool(_)) {
                    constraints.push(view_of(&Constraint {
                        param: format!("/{}", name.replace('~', "~0").replace('/', "~1")),
                        one_of: Some(vec![value.clone()]),
                        at_least: None,
                        at_most: None,
                    }));
                }
            }
        }
        let mut resources: Vec<String> = plan.effects.iter().map(|e| e.resource.clone()).collect();
        resources.sort();
        resources.dedup();
        let cost = plan.estimated_cost.amount_max.value();
        Ok(StandingDraft {
            plan_id: plan.plan_id.clone(),
            agent_id: plan.caller.agent_id.clone(),
            capability_id: plan.capability_id.clone(),
            constraints,
            resources,
            risk_flags: risk_flags(&plan, default_high_cost_threshold())
                .into_iter()
                .map(flag_text)
                .collect(),
            max_cost_per_plan: format!("{cost:.2}"),
            max_cost_total: format!("{:.2}", cost * rust_decimal::Decimal::TEN),
            max_plans: DRAFT_PLANS,
            days: DRAFT_DAYS,
            reason: String::new(),
        })
    }

    /// Signs and sends `draft` once `confirm` says yes to what it allows, in words made from the
    /// statement to be signed.
    pub async fn create_standing(
        &self,
        draft: &StandingDraft,
        confirm: &dyn Confirm,
    ) -> Result<StandingView, ConsoleError> {
        let statement = draft.statement(self)?;
        let lines = vec![
            format!("Reason: {}", statement.reason),
            format!(
                "Signed by {} ({}); revocable at once from Standing approvals.",
                self.signer().display_name(),
                self.signer().approver_id()
            ),
        ];
        let title = "Approve plans like this without being asked?";
        if !confirm::ask(confirm, title, &statement.allows(), &lines) {
            return Err(ConsoleError::Cancelled);
        }
        let envelope = self.signer().sign_standing(&statement)?;
        let created = self.client().create_standing(&envelope).await?;
        Ok(view(&created, self.signer().approver_id()))
    }

    /// Every standing approval of the gateway, newest first.
    pub async fn standing(&self) -> Result<Vec<StandingView>, ConsoleError> {
        let me = self.signer().approver_id();
        let list = self.client().standing().await?;
        Ok(list.items.iter().map(|s| view(s, me)).collect())
    }

    /// Revokes one of this approver's standing approvals at once.
    pub async fn revoke_standing(&self, id: &str) -> Result<StandingView, ConsoleError> {
        let revoked = self.client().revoke_standing(id).await?;
        Ok(view(&revoked, self.signer().approver_id()))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn what_is_signed_comes_from_the_values_never_the_line() {
        let view = ConstraintView {
            param: "/retention_days".into(),
            op: ConstraintOp::AtLeast,
            values: vec!["7".into()],
            line: "anything at all".into(),
        };
        let constraint = constraint_of(&view).unwrap();
        assert_eq!(constraint.at_least, Some(7.0));
        assert_eq!(view_of(&constraint).line, "retention_days ≥ 7");
        let one_of = ConstraintView {
            param: "/project".into(),
            op: ConstraintOp::OneOf,
            values: vec!["\"prj_184\"".into(), "\"prj_200\"".into()],
            line: String::new(),
        };
        assert_eq!(
            constraint_of(&one_of).unwrap().one_of,
            Some(vec![json!("prj_184"), json!("prj_200")])
        );
        let bad = ConstraintView {
            values: vec!["seven".into()],
            ..view.clone()
        };
        assert!(
            matches!(constraint_of(&bad), Err(ConsoleError::Invalid(m)) if m.contains("not a JSON value"))
        );
        let two = ConstraintView {
            values: vec!["1".into(), "2".into()],
            ..view
        };
        assert!(constraint_of(&two).is_err());
    }
}
