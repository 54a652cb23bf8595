//! The capabilities the gateway offers: what each reads, what it would do, and doing exactly that.

mod projects_settings;

use countersign_proto::describe::Describe;
use countersign_proto::plan::{
    Assumption, Effect, EstimatedCost, ReadRevision, Validation, ViolationDetail,
};
use serde_json::Value;
use sqlx::SqliteConnection;

use crate::error::ApiResult;

/// What a capability found when it evaluated a request against current state.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    pub read_revisions: Vec<ReadRevision>,
    pub effects: Vec<PlannedEffect>,
    pub validation: Vec<Validation>,
    pub assumptions: Vec<Assumption>,
    pub estimated_cost: EstimatedCost,
}

/// An effect with its full subject set; the plan keeps only total, sample and digest inline.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedEffect {
    pub effect: Effect,
    pub subjects: Vec<Subject>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    pub id: String,
    pub label: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capability {
    ProjectsSettingsUpdate,
}

impl Capability {
    pub const ALL: [Capability; 1] = [Capability::ProjectsSettingsUpdate];

    pub fn by_id(id: &str) -> Option<Capability> {
        Capability::ALL.into_iter().find(|c| c.id() == id)
    }

    pub fn id(self) -> &'static str {
        match self {
            Capability::ProjectsSettingsUpdate => projects_settings::ID,
        }
    }

    /// The human title, without building the whole description (the queue asks per plan per poll).
    pub fn title(self) -> &'static str {
        match self {
            Capability::ProjectsSettingsUpdate => projects_settings::TITLE,
        }
    }

    pub fn describe(self) -> Describe {
        match self {
            Capability::ProjectsSettingsUpdate => projects_settings::describe(),
        }
    }

    /// Whether every plan of this capability waits for a human, whatever its risk.
    pub fn always_requires_approval(self) -> bool {
        match self {
            Capability::ProjectsSettingsUpdate => true,
        }
    }

    /// Evaluates `params` (already schema-valid) against the state `conn` sees. Writes nothing.
    pub async fn plan(self, conn: &mut SqliteConnection, params: &Value) -> ApiResult<Planned> {
        match self {
            Capability::ProjectsSettingsUpdate => projects_settings::plan(conn, params).await,
        }
    }

    /// Applies `planned`, which the caller has just re-derived inside this transaction and found
    /// equal to the approved plan. Returns the human-readable outcome.
    pub async fn apply(
        self,
        conn: &mut SqliteConnection,
        params: &Value,
        planned: &Planned,
    ) -> ApiResult<String> {
        match self {
            Capability::ProjectsSettingsUpdate => {
                projects_settings::apply(conn, params, planned).await
            }
        }
    }
}

/// Every field of `params` that violates the capability's input schema, all at once (seed 000).
pub fn schema_violations(describe: &Describe, params: &Value) -> Vec<ViolationDetail> {
    let validator = match jsonschema::validator_for(&describe.input_schema) {
        Ok(v) => v,
        Err(e) => {
            return vec![ViolationDetail {
                schema_pointer: "/params".to_owned(),
                message: format!("The capability's schema is unusable: {e}"),
            }]
        }
    };
    let mut details: Vec<ViolationDetail> = validator
        .iter_errors(params)
        .map(|e| ViolationDetail {
            schema_pointer: format!("/params{}", e.instance_path),
            message: e.to_string(),
        })
        .collect();
    details.sort_by(|a, b| a.schema_pointer.cmp(&b.schema_pointer));
    details
}

/// The current revision of a resource a plan read, or `None` when it no longer exists.
pub async fn current_revision(
    conn: &mut SqliteConnection,
    resource: &str,
) -> Result<Option<String>, sqlx::Error> {
    if let Some(project) = resource.strip_prefix("projects/") {
        let revision: Option<i64> =
            sqlx::query_scalar("SELECT revision FROM projects WHERE id = ?")
                .bind(project)
                .fetch_optional(&mut *conn)
                .await?;
        return Ok(revision.map(|r| r.to_string()));
    }
    Ok(None)
}
