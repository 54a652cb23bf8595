//! What a capability's evaluation and execution produce, and what it declares about itself.

use std::sync::Arc;

use countersign_proto::approvals::ValidationSubjects;
use countersign_proto::plan::{
    Assumption, Change, Effect, EffectKind, EstimatedCost, ReadRevision, Validation,
};
use countersign_proto::Credits;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{ApiError, ApiResult};

/// What a capability found when it evaluated a request against current state.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    pub read_revisions: Vec<ReadRevision>,
    pub effects: Vec<PlannedEffect>,
    pub validation: Vec<Validation>,
    pub assumptions: Vec<Assumption>,
    pub estimated_cost: EstimatedCost,
    /// The items validation entries count, by name: kept beside the plan, outside its digest.
    pub named: Vec<ValidationSubjects>,
}

/// An effect with its full subject set (ids ascending); the plan keeps only total, sample and
/// digest inline. Shared, because one set often backs several effects.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedEffect {
    pub effect: Effect,
    pub subjects: Arc<Vec<Subject>>,
}

impl PlannedEffect {
    pub fn new(effect: Effect) -> PlannedEffect {
        PlannedEffect {
            effect,
            subjects: Arc::new(Vec::new()),
        }
    }

    pub fn with_subjects(effect: Effect, subjects: Arc<Vec<Subject>>) -> PlannedEffect {
        PlannedEffect { effect, subjects }
    }

    pub fn subject_ids(&self) -> Vec<&str> {
        self.subjects.iter().map(|s| s.id.as_str()).collect()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Subject {
    pub id: String,
    pub label: String,
    /// What happens to this subject in particular, served with its page (not digested).
    pub detail: Option<Value>,
}

impl Subject {
    pub fn new(id: String, label: String) -> Subject {
        Subject {
            id,
            label,
            detail: None,
        }
    }
}

/// What execution did to one planned effect, read back from the rows it wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalEntry {
    pub effect_id: String,
    #[serde(rename = "type")]
    pub effect_type: String,
    pub resource: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subjects: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<Change>,
}

impl JournalEntry {
    pub fn of(effect: &Effect, mut subjects: Vec<String>, changes: Vec<Change>) -> JournalEntry {
        subjects.sort_unstable();
        JournalEntry {
            effect_id: effect.id.clone(),
            effect_type: effect.effect_type.clone(),
            resource: effect.resource.clone(),
            subjects,
            changes,
        }
    }
}

/// The outcome of an execution: the envelope's `content` and `files`, the journal, extra
/// metadata, and what the charge counted (`usage.units`).
#[derive(Debug, Clone, Default)]
pub struct Applied {
    pub content: String,
    pub journal: Vec<JournalEntry>,
    pub metadata: Map<String, Value>,
    pub files: Vec<Value>,
    pub units: std::collections::BTreeMap<String, u64>,
}

/// Who executes, for writes that name them (outbox rows, wallets).
#[derive(Debug, Clone, Copy)]
pub struct Execution<'a> {
    pub agent_id: &'a str,
    pub plan_id: Option<&'a str>,
}

/// What a capability's plans can hold, declared beside its evaluation: agents learn it before
/// they ask (MCP tool annotations), and a test holds every preview to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EffectProfile {
    pub kinds: &'static [EffectKind],
    /// An effect inside the gateway's world that cannot be undone.
    pub irreversible: bool,
    /// An effect that reaches outside the gateway's world (an email).
    pub external: bool,
}

/// What a capability's request names as the resource it acts on: the param that holds its id,
/// and the prefix every id of that kind has. Scopes and the domain's rule for people read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// The param of the request that names the resource, as the input schema calls it.
    pub param: &'static str,
    /// The id prefix of the resources of this kind.
    pub prefix: &'static str,
}

/// Who decides whether a plan of a capability waits for a human (DESIGN.md, seed 004).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalRule {
    /// Every plan that changes something.
    Always,
    /// A plan with a risk flag (PROTOCOL section 3).
    WhenRisky,
    /// A plan whose maximum cost is above this many credits: a provider call is external by
    /// nature, so its flag alone would make every call wait.
    AboveCost(Credits),
}

/// Params the schema accepted, as the capability's own type.
pub fn parse<T: serde::de::DeserializeOwned>(params: &Value) -> ApiResult<T> {
    serde_json::from_value(integral(params.clone()))
        .map_err(|e| ApiError::validation("/params", format!("The params do not fit: {e}")))
}

/// JSON Schema's `integer` is any number without a fraction, `2.0` included; serde's integers
/// take only `2`. Such a number is read as the integer it is (exactly, below 2^53).
fn integral(value: Value) -> Value {
    const EXACT: f64 = 9_007_199_254_740_992.0;
    match value {
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < EXACT => Value::from(f as i64),
            _ => Value::Number(n),
        },
        Value::Array(items) => Value::Array(items.into_iter().map(integral).collect()),
        Value::Object(members) => {
            Value::Object(members.into_iter().map(|(k, v)| (k, integral(v))).collect())
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Retention {
        days: u32,
        share: f64,
        nested: Vec<i64>,
    }

    #[test]
    fn a_number_without_a_fraction_is_read_as_the_integer_a_schema_took_it_for() {
        let parsed: Retention =
            parse(&json!({"days": 2.0, "share": 3.0, "nested": [-7.0, 8]})).unwrap();
        assert_eq!(
            parsed,
            Retention {
                days: 2,
                share: 3.0,
                nested: vec![-7, 8]
            }
        );
        assert!(parse::<Retention>(&json!({"days": 2.5, "share": 1, "nested": []})).is_err());
    }
}
