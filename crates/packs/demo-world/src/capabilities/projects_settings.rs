//! `projects.settings.update`: change a project's retention; derived, recalculate item expiry,
//! skipping items under legal hold (seed 004's settings example).

use countersign_proto::approvals::{ValidationSubjects, VALIDATION_SUBJECT_LIMIT};
use countersign_proto::describe::{CostClass, Describe, DryRunMode, Preflight};
use countersign_proto::guard::SubjectItem;
use countersign_proto::plan::{Change, Effect, EffectKind, ReadRevision, Severity};
use std::sync::Arc;

use countersign_proto::Credits;
use serde_json::json;
use sqlx::AnyConnection;

use countersign_pack::build;
use countersign_pack::{
    ApiResult, Applied, Dialect, EffectProfile, Flag, Handle, JournalEntry, Planned, PlannedEffect,
    Subject,
};

pub const ID: &str = "projects.settings.update";
pub const TITLE: &str = "Update project settings";

/// Settings changed, and the expiry of the project's items recalculated.
pub const EFFECTS: EffectProfile = EffectProfile {
    kinds: &[EffectKind::Update],
    irreversible: false,
    external: false,
};

pub fn describe() -> Describe {
    build::describe(
        ID,
        TITLE,
        build::params(
            &["project", "retention_days"],
            json!({
                "project": {"type": "string", "pattern": "^prj_[a-z0-9_]{1,40}$"},
                "retention_days": {"type": "integer", "minimum": 1, "maximum": 3650}
            }),
        ),
        DryRunMode::Required,
        (Preflight::Estimate, CostClass::Free),
        1,
    )
}

#[derive(serde::Deserialize)]
pub struct Params {
    project: String,
    retention_days: i64,
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

pub async fn plan(conn: &mut AnyConnection, p: &Params) -> ApiResult<Planned> {
    let mut planned = build::nothing(Credits::cents(0));
    let project: Option<(i64, i64, String)> = sqlx::query_as(
        "SELECT revision, retention_days, retention_note FROM projects WHERE id = $1",
    )
    .bind(&p.project)
    .fetch_optional(&mut *conn)
    .await?;
    let Some((revision, current_days, note)) = project else {
        planned
            .validation
            .push(crate::world::project_not_found(&p.project));
        return Ok(planned);
    };
    let resource = format!("projects/{}", p.project);
    planned.read_revisions.push(ReadRevision {
        resource: resource.clone(),
        revision: revision.to_string(),
    });
    if current_days == p.retention_days {
        planned.validation.push(build::note(
            Severity::Info,
            "no_change",
            "/retention_days",
            format!("retention_days is already {current_days}."),
        ));
        return Ok(planned);
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
    // Each item with its expiry now and as the new retention recalculates it, by the same rule
    // `apply` writes (seed 004: consequences, not counts).
    let items: Vec<(String, String, String, String, Flag)> = sqlx::query_as(&format!(
        "SELECT id, title, expires_at, {}, legal_hold
         FROM project_items WHERE project_id = $2 ORDER BY id",
        Dialect::of(conn).days_after("created_at", "$1")
    ))
    .bind(p.retention_days)
    .bind(&p.project)
    .fetch_all(&mut *conn)
    .await?;
    let (held, free): (Vec<_>, Vec<_>) = items.into_iter().partition(|item| item.4 .0);

    planned.effects.push(PlannedEffect::new(Effect {
        changes,
        ..build::effect(
            1,
            "setting_changed",
            EffectKind::Update,
            resource.clone(),
            format!(
                "Change retention_days from {current_days} to {}.",
                p.retention_days
            ),
        )
    }));
    if !free.is_empty() {
        let description = format!("Recalculate expiry of {} active items.", free.len());
        planned.effects.push(PlannedEffect::with_subjects(
            Effect {
                derived: true,
                cause: Some(build::effect_id(1)),
                ..build::effect(
                    2,
                    "expiry_recalculated",
                    EffectKind::Update,
                    format!("{resource}/items"),
                    description,
                )
            },
            Arc::new(
                free.into_iter()
                    .map(|(id, title, before, after, _)| Subject {
                        id,
                        label: title,
                        detail: Some(json!({"expires_before": before, "expires_after": after})),
                    })
                    .collect(),
            ),
        ));
    }
    if !held.is_empty() {
        let count = build::count(held.len(), "item", "items");
        planned.validation.push(build::note(
            Severity::Warning,
            "legal_hold_items_skipped",
            "/retention_days",
            format!("{count} under legal hold keep their expiry."),
        ));
        planned.named.push(ValidationSubjects {
            code: "legal_hold_items_skipped".to_owned(),
            total: held.len() as u64,
            items: held
                .into_iter()
                .take(VALIDATION_SUBJECT_LIMIT)
                .map(|(id, title, expires_at, _, _)| SubjectItem {
                    id,
                    label: title,
                    detail: json!({ "expires_at": expires_at, "legal_hold": true }),
                })
                .collect(),
        });
    }
    Ok(planned)
}

pub async fn apply(h: &mut Handle<'_>, p: &Params, planned: &Planned) -> ApiResult<Applied> {
    let Some(setting) = planned.effects.first() else {
        return Ok(Applied {
            content: format!("Nothing to change in {}.", p.project),
            ..Applied::default()
        });
    };
    let resource = format!("projects/{}", p.project);
    let (days_before, note_before): (i64, String) =
        sqlx::query_as("SELECT retention_days, retention_note FROM projects WHERE id = $1")
            .bind(&p.project)
            .fetch_one(h.conn())
            .await?;
    let note = setting
        .effect
        .changes
        .iter()
        .find(|c| c.path == "/retention_note")
        .and_then(|c| c.after.as_str().map(str::to_owned));
    let (days_after, note_after): (i64, String) = sqlx::query_as(
        "UPDATE projects SET retention_days = $1, retention_note = COALESCE($2, retention_note)
         WHERE id = $3 RETURNING retention_days, retention_note",
    )
    .bind(p.retention_days)
    .bind(note)
    .bind(&p.project)
    .fetch_one(h.conn())
    .await?;
    crate::world::bump(h, &resource).await?;
    let mut changes = vec![Change {
        path: "/retention_days".to_owned(),
        before: json!(days_before),
        after: json!(days_after),
    }];
    if note_after != note_before {
        changes.push(Change {
            path: "/retention_note".to_owned(),
            before: json!(note_before),
            after: json!(note_after),
        });
    }
    let mut journal = vec![JournalEntry::of(&setting.effect, vec![], changes)];
    if let Some(recalc) = planned.effects.get(1) {
        let dialect = h.dialect();
        let recalculated: Vec<String> = sqlx::query_scalar(&format!(
            "UPDATE project_items SET expires_at = {}
             WHERE project_id = $2 AND legal_hold = 0 AND id IN ({})
             RETURNING id",
            dialect.days_after("created_at", "$1"),
            dialect.json_strings(3)
        ))
        .bind(p.retention_days)
        .bind(&p.project)
        .bind(json!(recalc.subject_ids()).to_string())
        .fetch_all(h.conn())
        .await?;
        journal.push(JournalEntry::of(&recalc.effect, recalculated, vec![]));
    }
    let recalculated = journal.get(1).map_or(0, |j| j.subjects.len());
    Ok(Applied {
        content: format!(
            "Changed retention_days of {} to {}; recalculated the expiry of {recalculated} items.",
            p.project, p.retention_days
        ),
        journal,
        metadata: Default::default(),
        ..Applied::default()
    })
}
