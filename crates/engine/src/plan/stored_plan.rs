//! A plan as the store holds it: its preview and what the gateway keeps beside it.

use std::collections::BTreeMap;

use countersign_proto::approvals::{Amendment, PlanStatus, ValidationSubjects};
use countersign_proto::plan::Preview;
use serde_json::Value;

use crate::approval::requirement::Requirement;

/// A plan as stored, with what the gateway needs beside the preview.
#[derive(Debug, Clone)]
pub struct StoredPlan {
    pub preview: Preview,
    pub agent_id: String,
    pub status: PlanStatus,
    pub required_approvals: u32,
    /// What its policy required when it was stored.
    pub requirement: Requirement,
    pub execution: Option<Value>,
    pub supersedes: Option<String>,
    pub superseded_by: Option<String>,
    /// The distinct subjects of all its effects, counted when it was stored (absent for a plan
    /// whose subject rows were swept before the count was kept).
    pub subjects_distinct: Option<u64>,
    pub validation_subjects: Vec<ValidationSubjects>,
    /// Who changed the request of the plan it supersedes, and how.
    pub amendment: Option<Amendment>,
    /// The effects whose subjects are an earlier effect's set, with that effect: their rows are
    /// stored once, under it.
    pub shared_subjects: BTreeMap<String, String>,
}

impl StoredPlan {
    /// The effect whose subject rows `effect_id`'s subjects are.
    pub fn rows_of<'a>(&'a self, effect_id: &'a str) -> &'a str {
        self.shared_subjects
            .get(effect_id)
            .map_or(effect_id, String::as_str)
    }
}

/// [`StoredPlan::shared_subjects`] as a plan's row keeps them: `NULL` when every effect has rows
/// of its own (as all plans stored before sets were shared have).
pub(crate) fn shared_text(shared: &BTreeMap<String, String>) -> serde_json::Result<Option<String>> {
    (!shared.is_empty())
        .then(|| serde_json::to_string(shared))
        .transpose()
}
