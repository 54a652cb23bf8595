//! The capabilities the gateway offers: what each reads, what it would do, and doing exactly that.
//!
//! Each capability has one evaluation (`plan`) shared by preview and execution, and one `apply`
//! that writes what the plan names and reports, from the rows it actually touched, a journal that
//! the paired tests hold against the preview.

mod documents_upload;
mod groups_members_remove;
mod memberships_grant;
mod projects_settings;
mod storage_quota;
mod wallet_guard;
pub mod world;

use std::sync::{Arc, OnceLock};

use countersign_proto::approvals::ValidationSubjects;
use countersign_proto::describe::Describe;
use countersign_proto::plan::{
    Assumption, Change, Effect, EffectKind, EstimatedCost, ReadRevision, Validation,
    ViolationDetail,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sqlx::SqliteConnection;

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

/// The outcome of an execution: the envelope's `content`, the journal, and extra metadata.
#[derive(Debug, Clone, Default)]
pub struct Applied {
    pub content: String,
    pub journal: Vec<JournalEntry>,
    pub metadata: Map<String, Value>,
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

/// What a capability's request names as the resource it acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Project,
    Group,
    Quota,
}

impl Target {
    /// The param of the request that names the resource, as the input schemas call it.
    pub fn param(self) -> &'static str {
        match self {
            Target::Project => "project",
            Target::Group => "group",
            Target::Quota => "quota",
        }
    }

    /// The id prefix of the resources of this kind.
    pub fn prefix(self) -> &'static str {
        match self {
            Target::Project => "prj_",
            Target::Group => "grp_",
            Target::Quota => "sq_",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capability {
    DocumentsUpload,
    ProjectsSettingsUpdate,
    MembershipsGrant,
    GroupsMembersRemove,
    StorageQuotaUpdate,
    WalletGuard,
}

impl Capability {
    pub const ALL: [Capability; 6] = [
        Capability::DocumentsUpload,
        Capability::ProjectsSettingsUpdate,
        Capability::MembershipsGrant,
        Capability::GroupsMembersRemove,
        Capability::StorageQuotaUpdate,
        Capability::WalletGuard,
    ];

    pub fn by_id(id: &str) -> Option<Capability> {
        Capability::ALL.into_iter().find(|c| c.id() == id)
    }

    pub fn id(self) -> &'static str {
        match self {
            Capability::DocumentsUpload => documents_upload::ID,
            Capability::ProjectsSettingsUpdate => projects_settings::ID,
            Capability::MembershipsGrant => memberships_grant::ID,
            Capability::GroupsMembersRemove => groups_members_remove::ID,
            Capability::StorageQuotaUpdate => storage_quota::ID,
            Capability::WalletGuard => wallet_guard::ID,
        }
    }

    /// The human title, without building the whole description (the queue asks per plan per poll).
    pub fn title(self) -> &'static str {
        match self {
            Capability::DocumentsUpload => documents_upload::TITLE,
            Capability::ProjectsSettingsUpdate => projects_settings::TITLE,
            Capability::MembershipsGrant => memberships_grant::TITLE,
            Capability::GroupsMembersRemove => groups_members_remove::TITLE,
            Capability::StorageQuotaUpdate => storage_quota::TITLE,
            Capability::WalletGuard => wallet_guard::TITLE,
        }
    }

    /// The description, built once: every preview, invoke and listing reads it.
    pub fn describe(self) -> &'static Describe {
        static DESCRIBED: [OnceLock<Describe>; Capability::ALL.len()] =
            [const { OnceLock::new() }; Capability::ALL.len()];
        DESCRIBED[self as usize].get_or_init(|| match self {
            Capability::DocumentsUpload => documents_upload::describe(),
            Capability::ProjectsSettingsUpdate => projects_settings::describe(),
            Capability::MembershipsGrant => memberships_grant::describe(),
            Capability::GroupsMembersRemove => groups_members_remove::describe(),
            Capability::StorageQuotaUpdate => storage_quota::describe(),
            Capability::WalletGuard => wallet_guard::describe(),
        })
    }

    /// Every field of `params` that violates the input schema, all at once (seed 000). The
    /// schema is compiled once, not per request.
    pub fn violations(self, params: &Value) -> Vec<ViolationDetail> {
        static VALIDATORS: [OnceLock<Result<jsonschema::Validator, String>>;
            Capability::ALL.len()] = [const { OnceLock::new() }; Capability::ALL.len()];
        let compiled = VALIDATORS[self as usize].get_or_init(|| {
            jsonschema::validator_for(&self.describe().input_schema).map_err(|e| e.to_string())
        });
        let validator = match compiled {
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

    pub fn effects(self) -> EffectProfile {
        match self {
            Capability::DocumentsUpload => documents_upload::EFFECTS,
            Capability::ProjectsSettingsUpdate => projects_settings::EFFECTS,
            Capability::MembershipsGrant => memberships_grant::EFFECTS,
            Capability::GroupsMembersRemove => groups_members_remove::EFFECTS,
            Capability::StorageQuotaUpdate => storage_quota::EFFECTS,
            Capability::WalletGuard => wallet_guard::EFFECTS,
        }
    }

    /// The kind of resource this capability acts on and the param that names it; the budget
    /// guard acts on the caller's own wallet only.
    pub fn target(self) -> Option<Target> {
        match self {
            Capability::DocumentsUpload
            | Capability::ProjectsSettingsUpdate
            | Capability::MembershipsGrant => Some(Target::Project),
            Capability::GroupsMembersRemove => Some(Target::Group),
            Capability::StorageQuotaUpdate => Some(Target::Quota),
            Capability::WalletGuard => None,
        }
    }

    /// Whether every plan of this capability waits for a human, whatever its risk (DESIGN.md).
    pub fn always_requires_approval(self) -> bool {
        matches!(
            self,
            Capability::ProjectsSettingsUpdate
                | Capability::MembershipsGrant
                | Capability::GroupsMembersRemove
        )
    }

    /// Evaluates `params` (already schema-valid) against the state `conn` sees. Writes nothing.
    pub async fn plan(self, conn: &mut SqliteConnection, params: &Value) -> ApiResult<Planned> {
        match self {
            Capability::DocumentsUpload => documents_upload::plan(conn, &parse(params)?).await,
            Capability::ProjectsSettingsUpdate => {
                projects_settings::plan(conn, &parse(params)?).await
            }
            Capability::MembershipsGrant => memberships_grant::plan(conn, &parse(params)?).await,
            Capability::GroupsMembersRemove => {
                groups_members_remove::plan(conn, &parse(params)?).await
            }
            Capability::StorageQuotaUpdate => storage_quota::plan(conn, &parse(params)?).await,
            Capability::WalletGuard => Ok(wallet_guard::plan(&parse(params)?)),
        }
    }

    /// Applies `planned`, which the caller has just re-derived inside this transaction and found
    /// equal to the approved plan.
    pub async fn apply(
        self,
        conn: &mut SqliteConnection,
        params: &Value,
        planned: &Planned,
        execution: Execution<'_>,
    ) -> ApiResult<Applied> {
        match self {
            Capability::DocumentsUpload => {
                documents_upload::apply(conn, &parse(params)?, planned).await
            }
            Capability::ProjectsSettingsUpdate => {
                projects_settings::apply(conn, &parse(params)?, planned).await
            }
            Capability::MembershipsGrant => {
                memberships_grant::apply(conn, &parse(params)?, planned, execution).await
            }
            Capability::GroupsMembersRemove => {
                groups_members_remove::apply(conn, &parse(params)?, planned, execution).await
            }
            Capability::StorageQuotaUpdate => {
                storage_quota::apply(conn, &parse(params)?, planned).await
            }
            Capability::WalletGuard => wallet_guard::apply(conn, &parse(params)?, execution).await,
        }
    }
}

/// Params the schema accepted, as the capability's own type.
fn parse<T: serde::de::DeserializeOwned>(params: &Value) -> ApiResult<T> {
    serde_json::from_value(params.clone())
        .map_err(|e| ApiError::validation("/params", format!("The params do not fit: {e}")))
}
