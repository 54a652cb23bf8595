//! `projects.settings.update`: change a project's retention; derived, recalculate item expiry,
//! skipping items under legal hold (seed 004's settings example).

use countersign_proto::describe::{
    ApprovalPolicy, Billing, CostClass, Describe, DryRunMode, Preflight,
};
use countersign_proto::plan::{
    Change, Effect, EffectKind, EstimatedCost, ReadRevision, Severity, Validation,
};
use countersign_proto::{Credits, INTERFACE_VERSION};
use serde_json::{json, Value};
use sqlx::SqliteConnection;

use super::{Planned, PlannedEffect, Subject};
use crate::error::{ApiError, ApiResult};

pub const ID: &str = "projects.settings.update";
pub const TITLE: &str = "Update project settings";

pub fn describe() -> Describe {
    Describe {
        interface_version: INTERFACE_VERSION.to_owned(),
        capability_id: ID.to_owned(),
        version: "1.0.0".to_owned(),
        title: TITLE.to_owned(),
        input_schema: json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["project", "retention_days"],
            "properties": {
                "project": {"type": "string", "pattern": "^prj_[a-z0-9_]{1,40}$"},
                "retention_days": {"type": "integer", "minimum": 1, "maximum": 3650}
            }
        }),
        dry_run: DryRunMode::Supported,
        billing: Billing {
            preflight: Preflight::Estimate,
            cost_class: CostClass::Free,
        },
        approval: ApprovalPolicy {
            required_approvals: 1,
            self_approval: false,
        },
    }
}

struct Params {
    project: String,
    retention_days: i64,
}

fn params(value: &Value) -> ApiResult<Params> {
    match (value["project"].as_str(), value["retention_days"].as_i64()) {
        (Some(project), Some(retention_days)) => Ok(Params {
            project: project.to_owned(),
            retention_days,
        }),
        _ => Err(ApiError::validation(
            "/params",
            "project and retention_days are required.",
        )),
    }
}

/// The retention note's first line says the duration in words; the rest is the owner's text.
fn retention_note(note: &str, days: i64) -> String {
    let phrase = match days {
        7 => "one week".to_owned(),
        14 => "two weeks".to_owned(),
        30 => "a month".to_owned(),
        90 => "a quarter".to_owned(),
        365 => "a year".to_owned(),
        n => format!("{n} days"),
    };
    let rest = note.split_once('\n').map_or("", |(_, rest)| rest);
    format!("Keep artifacts for {phrase}.\n{rest}")
}

pub async fn plan(conn: &mut SqliteConnection, value: &Value) -> ApiResult<Planned> {
    let p = params(value)?;
    let zero = EstimatedCost {
        amount_min: Credits::cents(0),
        amount_max: Credits::cents(0),
        currency: "credits".to_owned(),
    };
    let project: Option<(i64, i64, String)> = sqlx::query_as(
        "SELECT revision, retention_days, retention_note FROM projects WHERE id = ?",
    )
    .bind(&p.project)
    .fetch_optional(&mut *conn)
    .await?;
    let Some((revision, current_days, note)) = project else {
        return Ok(Planned {
            read_revisions: vec![],
            effects: vec![],
            validation: vec![Validation {
                severity: Severity::Error,
                code: "project_not_found".to_owned(),
                path: Some("/project".to_owned()),
                message: format!("Project {} does not exist.", p.project),
                blocks_execution: true,
                repair: Some("List the projects you may change and use one of their ids.".into()),
            }],
            assumptions: vec![],
            estimated_cost: zero,
        });
    };
    let resource = format!("projects/{}", p.project);
    let read_revisions = vec![ReadRevision {
        resource: resource.clone(),
        revision: revision.to_string(),
    }];
    if current_days == p.retention_days {
        return Ok(Planned {
            read_revisions,
            effects: vec![],
            validation: vec![Validation {
                severity: Severity::Info,
                code: "no_change".to_owned(),
                path: Some("/retention_days".to_owned()),
                message: format!("retention_days is already {current_days}."),
                blocks_execution: false,
                repair: None,
            }],
            assumptions: vec![],
            estimated_cost: zero,
        });
    }

    let new_note = retention_note(&note, p.retention_days);
    let mut changes = vec![Change {
        path: "/retention_days".to_owned(),
        before: json!(current_days),
        after: json!(p.retention_days),
    }];
    if new_note != note {
        changes.push(Change {
            path: "/retention_note".to_owned(),
            before: json!(note),
            after: json!(new_note),
        });
    }
    let items: Vec<(String, String, bool)> = sqlx::query_as(
        "SELECT id, title, legal_hold FROM project_items WHERE project_id = ? ORDER BY id",
    )
    .bind(&p.project)
    .fetch_all(&mut *conn)
    .await?;
    let (held, free): (Vec<_>, Vec<_>) = items.into_iter().partition(|(_, _, hold)| *hold);

    let mut effects = vec![PlannedEffect {
        effect: Effect {
            id: "eff_1".to_owned(),
            effect_type: "setting_changed".to_owned(),
            kind: EffectKind::Update,
            derived: false,
            cause: None,
            resource: resource.clone(),
            description: format!(
                "Change retention_days from {current_days} to {}.",
                p.retention_days
            ),
            reversible: true,
            external: false,
            changes,
            subjects: None,
            cost: None,
        },
        subjects: vec![],
    }];
    if !free.is_empty() {
        effects.push(PlannedEffect {
            effect: Effect {
                id: "eff_2".to_owned(),
                effect_type: "expiry_recalculated".to_owned(),
                kind: EffectKind::Update,
                derived: true,
                cause: Some("eff_1".to_owned()),
                resource: format!("{resource}/items"),
                description: format!("Recalculate expiry of {} active items.", free.len()),
                reversible: true,
                external: false,
                changes: vec![],
                subjects: None,
                cost: None,
            },
            subjects: free
                .into_iter()
                .map(|(id, label, _)| Subject { id, label })
                .collect(),
        });
    }
    let validation = if held.is_empty() {
        vec![]
    } else {
        let count = match held.len() {
            1 => "One item".to_owned(),
            2 => "Two items".to_owned(),
            n => format!("{n} items"),
        };
        vec![Validation {
            severity: Severity::Warning,
            code: "legal_hold_items_skipped".to_owned(),
            path: Some("/retention_days".to_owned()),
            message: format!("{count} under legal hold keep their expiry."),
            blocks_execution: false,
            repair: None,
        }]
    };
    Ok(Planned {
        read_revisions,
        effects,
        validation,
        assumptions: vec![],
        estimated_cost: zero,
    })
}

pub async fn apply(
    conn: &mut SqliteConnection,
    value: &Value,
    planned: &Planned,
) -> ApiResult<String> {
    let p = params(value)?;
    let Some(setting) = planned.effects.first() else {
        return Ok(format!("Nothing to change in {}.", p.project));
    };
    let note = setting
        .effect
        .changes
        .iter()
        .find(|c| c.path == "/retention_note")
        .and_then(|c| c.after.as_str().map(str::to_owned));
    sqlx::query(
        "UPDATE projects SET retention_days = ?, retention_note = COALESCE(?, retention_note),
         revision = revision + 1 WHERE id = ?",
    )
    .bind(p.retention_days)
    .bind(note)
    .bind(&p.project)
    .execute(&mut *conn)
    .await?;
    let mut recalculated = 0;
    for item in planned.effects.iter().flat_map(|e| &e.subjects) {
        recalculated += sqlx::query(
            "UPDATE project_items
             SET expires_at = strftime('%Y-%m-%dT%H:%M:%SZ', created_at, '+' || ? || ' days')
             WHERE id = ? AND project_id = ? AND legal_hold = 0",
        )
        .bind(p.retention_days)
        .bind(&item.id)
        .bind(&p.project)
        .execute(&mut *conn)
        .await?
        .rows_affected();
    }
    Ok(format!(
        "Changed retention_days of {} to {}; recalculated the expiry of {recalculated} items.",
        p.project, p.retention_days
    ))
}
