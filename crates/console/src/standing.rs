//! Standing approvals from the console (`docs/standing.md`): a draft prefilled from a plan, the
//! statement signed after the approver confirms in words what it lets run (the params it leaves
//! open named), the list with each one's uses, each checked against its signer's key before its
//! terms are shown, and revocation.

use chrono::{Duration, SubsecRound, Utc};
use countersign_proto::approvals::{ApproverKeys, RiskFlag};
use countersign_proto::decision::new_nonce;
use countersign_proto::dsse::decode_public_key;
use countersign_proto::risk::{default_high_cost_threshold, risk_flags};
use countersign_proto::standing::{
    flag_text, new_standing_id, Constraint, StandingApproval, StandingState, StandingStatement,
    STANDING_STATEMENT_TYPE,
};
use countersign_proto::statement::Signed as _;
use countersign_proto::Credits;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

use crate::console::Console;
use crate::error::ConsoleError;
use crate::signing::confirm::{self, Confirm};

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
    /// Every param the capability takes (JSON pointers, "/filter"): those without a constraint
    /// are left open ("any filter"), and the confirmation says so.
    pub params: Vec<String>,
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
    /// Its envelope verifies under its signer's key and says exactly the terms shown; when not,
    /// the terms are left empty and `verify_error` says why.
    pub verified: bool,
    pub verify_error: Option<String>,
    /// The plans it let run, newest first: its uses.
    pub uses: Vec<StandingUseView>,
    /// The plans it approved that have not run ("covered, not yet run"), newest first.
    pub covered: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct StandingUseView {
    /// 1 for the first plan it let run.
    pub number: u32,
    pub plan_id: String,
    pub credits: String,
    pub at: String,
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

/// Why `standing` is not what its signer signed, if it is not: its envelope must verify under
/// the signer's key (from the gateway's key list) and carry exactly the terms the gateway served.
pub fn mismatch(standing: &StandingApproval, keys: &ApproverKeys) -> Option<String> {
    let keyid = match standing.envelope.signature() {
        Ok(signature) => &signature.keyid,
        Err(e) => return Some(e.to_string()),
    };
    let Some(key) = keys
        .keys
        .iter()
        .find(|k| &k.key_id == keyid && k.approver_id == standing.statement.approver_id)
    else {
        return Some(format!(
            "signed with {keyid}, which is not a key of {}",
            standing.statement.approver_id
        ));
    };
    let signed = decode_public_key(&key.public_key)
        .map_err(|e| e.to_string())
        .and_then(|public| {
            StandingStatement::open(&standing.envelope, &public).map_err(|e| e.to_string())
        });
    match signed {
        Err(why) => Some(format!("its signature does not verify: {why}")),
        Ok(signed) if signed != standing.statement => {
            Some("the terms the gateway shows are not the ones signed".to_owned())
        }
        Ok(_) => None,
    }
}

/// A standing approval as the console shows it to approver `me`, its terms only once they are
/// checked against what its signer signed (`mismatch`).
pub fn view(standing: &StandingApproval, me: &str, mismatch: Option<String>) -> StandingView {
    let view = verified_view(standing, me);
    match mismatch {
        None => view,
        Some(why) => StandingView {
            constraints: Vec::new(),
            resources: Vec::new(),
            risk_flags: Vec::new(),
            reason: String::new(),
            allows: String::new(),
            verified: false,
            verify_error: Some(why),
            ..view
        },
    }
}

fn verified_view(standing: &StandingApproval, me: &str) -> StandingView {
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
        verified: true,
        verify_error: None,
        uses: standing
            .uses
            .iter()
            .map(|u| StandingUseView {
                number: u.number,
                plan_id: u.plan_id.clone(),
                credits: u.credits.to_string(),
                at: u.at.to_rfc3339(),
            })
            .collect(),
        covered: standing.covered.iter().map(|c| c.plan_id.clone()).collect(),
    }
}

/// Each param `schema` names and each `params` holds, as JSON pointers, sorted.
fn param_names(schema: &Value, params: &Value) -> Vec<String> {
    let named = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_object)
            .map(|o| o.keys().map(|k| pointer(k)).collect())
            .unwrap_or_default()
    };
    let mut names = named(schema.get("properties"));
    names.extend(named(Some(params)));
    names.sort();
    names.dedup();
    names
}

fn pointer(name: &str) -> String {
    format!("/{}", name.replace('~', "~0").replace('/', "~1"))
}

/// The params of `params` no constraint of `statement` reaches (a constraint on `/filter/team`
/// reaches `/filter`).
fn left_open(params: &[String], statement: &StandingStatement) -> Vec<String> {
    params
        .iter()
        .filter(|p| {
            !statement
                .constraints
                .iter()
                .any(|c| c.param == **p || c.param.starts_with(&format!("{p}/")))
        })
        .cloned()
        .collect()
}

impl Console {
    /// A standing approval prefilled from plan `plan_id`: its agent, capability and resources,
    /// each scalar param as a one_of constraint, its risk flags, its cost as the cap per plan and
    /// ten times it in all, 10 plans, 7 days.
    pub async fn standing_draft(&self, plan_id: &str) -> Result<StandingDraft, ConsoleError> {
        let plan = self.fetch(plan_id).await?.record.plan;
        let describe = self.client().describe(&plan.capability_id).await?;
        let mut constraints = Vec::new();
        if let Value::Object(params) = &plan.request.params {
            for (name, value) in params {
                if matches!(value, Value::String(_) | Value::Number(_) | Value::Bool(_)) {
                    constraints.push(view_of(&Constraint {
                        param: pointer(name),
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
            params: param_names(&describe.input_schema, &plan.request.params),
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
        let open = left_open(&draft.params, &statement);
        let mut lines = Vec::new();
        if !open.is_empty() {
            let names: Vec<&str> = open.iter().map(|p| p.trim_start_matches('/')).collect();
            lines.push(format!(
                "Left open: any value of {} (no constraint on them).",
                names.join(", ")
            ));
        }
        lines.push(format!("Reason: {}", statement.reason));
        lines.push(format!(
            "Signed by {} ({}); revocable at once from Standing approvals.",
            self.signer().display_name(),
            self.signer().approver_id()
        ));
        let title = "Approve plans like this without being asked?";
        let allows = statement.allows_leaving_open(&open);
        if !confirm::ask(confirm, title, &allows, &lines) {
            return Err(ConsoleError::Cancelled);
        }
        let envelope = self.signer().sign(&statement)?;
        let created = self.client().create_standing(&envelope).await?;
        self.checked_view(&created).await
    }

    /// Every standing approval of the gateway, newest first, each checked against its signer's
    /// key before its terms are shown.
    pub async fn standing(&self) -> Result<Vec<StandingView>, ConsoleError> {
        let me = self.signer().approver_id();
        let items = self.client().all_standing().await?;
        let keys = self.client().approver_keys().await?;
        Ok(items
            .iter()
            .map(|s| view(s, me, mismatch(s, &keys)))
            .collect())
    }

    /// Revokes one of this approver's standing approvals at once.
    pub async fn revoke_standing(&self, id: &str) -> Result<StandingView, ConsoleError> {
        let revoked = self.client().revoke_standing(id).await?;
        self.checked_view(&revoked).await
    }

    async fn checked_view(
        &self,
        standing: &StandingApproval,
    ) -> Result<StandingView, ConsoleError> {
        let keys = self.client().approver_keys().await?;
        Ok(view(
            standing,
            self.signer().approver_id(),
            mismatch(standing, &keys),
        ))
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone as _;
    use countersign_proto::approvals::ApproverKey;
    use countersign_proto::dsse::encode_public_key;
    use ed25519_dalek::SigningKey;
    use serde_json::json;

    use super::*;

    fn signed() -> (StandingApproval, ApproverKeys) {
        let key = SigningKey::from_bytes(&[4; 32]);
        let issued_at = Utc.with_ymd_and_hms(2026, 12, 5, 9, 0, 0).unwrap();
        let statement = StandingStatement {
            kind: STANDING_STATEMENT_TYPE.into(),
            standing_id: "sa_0123456789abcdef".into(),
            approver_id: "apr_dana".into(),
            key_id: "key_1".into(),
            audience: "gw_test".into(),
            agent_id: "agt_ops".into(),
            capability_id: "projects.settings.update".into(),
            constraints: vec![Constraint {
                param: "/project".into(),
                one_of: Some(vec![json!("prj_184")]),
                at_least: None,
                at_most: None,
            }],
            resources: vec![],
            risk_flags: vec![],
            max_cost_per_plan: Credits::cents(10),
            max_cost_total: Credits::cents(100),
            max_plans: 10,
            reason: "Retention tuning".into(),
            nonce: "00112233445566778899aabbccddeeff".into(),
            issued_at,
            expires_at: issued_at + Duration::days(7),
        };
        let envelope = statement.sign(&key).unwrap();
        let standing = StandingApproval {
            standing_id: statement.standing_id.clone(),
            display_name: "Dana".into(),
            receipt: envelope.clone(),
            envelope,
            statement,
            plans_used: 0,
            credits_used: Credits::ZERO,
            state: StandingState::Active,
            state_reason: None,
            uses: Vec::new(),
            covered: Vec::new(),
        };
        let keys = ApproverKeys {
            gateway_id: "gw_test".into(),
            gateway_key: None,
            keys: vec![ApproverKey {
                approver_id: "apr_dana".into(),
                display_name: "Dana".into(),
                key_id: "key_1".into(),
                public_key: encode_public_key(&key.verifying_key()),
                created_at: issued_at,
                revoked_at: None,
            }],
        };
        (standing, keys)
    }

    #[test]
    fn a_standing_approval_whose_terms_differ_from_its_signature_is_shown_as_such() {
        let (standing, keys) = signed();
        assert_eq!(mismatch(&standing, &keys), None);
        let shown = view(&standing, "apr_dana", None);
        assert!(shown.verified && shown.allows.contains("project is prj_184"));

        // The gateway serves wider terms than were signed: another project.
        let mut widened = standing.clone();
        widened.statement.constraints[0].one_of = Some(vec![json!("prj_200")]);
        let why = mismatch(&widened, &keys).expect("a mismatch");
        assert!(why.contains("not the ones signed"), "{why}");
        let shown = view(&widened, "apr_dana", Some(why));
        assert!(!shown.verified);
        assert_eq!(shown.allows, "");
        assert!(shown.constraints.is_empty() && shown.reason.is_empty());

        // Signed with a key that is not the signer's.
        let mut stranger = keys.clone();
        stranger.keys[0].public_key =
            encode_public_key(&SigningKey::from_bytes(&[5; 32]).verifying_key());
        assert!(mismatch(&standing, &stranger)
            .unwrap()
            .contains("does not verify"));
        let mut elsewhere = keys;
        elsewhere.keys[0].approver_id = "apr_lena".into();
        assert!(mismatch(&standing, &elsewhere)
            .unwrap()
            .contains("not a key of apr_dana"));
    }

    #[test]
    fn the_params_without_a_constraint_are_named_as_left_open() {
        let (standing, _) = signed();
        let params = param_names(
            &json!({"properties": {"project": {}, "retention_days": {}, "filter": {}}}),
            &json!({"project": "prj_184", "note": "x"}),
        );
        assert_eq!(params, ["/filter", "/note", "/project", "/retention_days"]);
        let open = left_open(&params, &standing.statement);
        assert_eq!(open, ["/filter", "/note", "/retention_days"]);
        let sentence = standing.statement.allows_leaving_open(&open);
        assert!(
            sentence.contains("when project is prj_184; any filter; any note; any retention_days"),
            "{sentence}"
        );
        // A constraint on a member of a param reaches the param.
        let mut deep = standing.statement.clone();
        deep.constraints[0].param = "/filter/team".into();
        assert_eq!(
            left_open(&params, &deep),
            ["/note", "/project", "/retention_days"]
        );
    }

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
