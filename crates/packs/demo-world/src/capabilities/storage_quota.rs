//! `storage.quota.update`: change a team's per-project storage quota. The direct change is one
//! field; derived, the projects over the new quota stop taking uploads (seed 004), and projects
//! back under it take them again.

use std::collections::BTreeMap;
use std::sync::Arc;

use countersign_proto::describe::{CostClass, Describe, DryRunMode, Preflight};
use countersign_proto::plan::{Change, Effect, EffectKind, ReadRevision, Severity};
use countersign_proto::Credits;
use serde::Deserialize;
use serde_json::json;
use sqlx::AnyConnection;

use countersign_pack::build::{self, blocker, count, effect, effect_id, note};
use countersign_pack::{
    ApiResult, Applied, EffectProfile, Flag, Handle, JournalEntry, Planned, PlannedEffect, Subject,
};

pub const ID: &str = "storage.quota.update";
pub const TITLE: &str = "Change a storage quota";

/// The quota changed, and uploads stopped or resumed in the projects it covers.
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
            &["quota", "quota_bytes"],
            json!({
                "quota": {"type": "string", "pattern": "^sq_[a-z0-9_]{1,40}$"},
                "quota_bytes": {"type": "integer", "minimum": 0, "maximum": 1_000_000_000_000_000i64}
            }),
        ),
        DryRunMode::Supported,
        (Preflight::None, CostClass::Free),
        1,
    )
}

#[derive(Deserialize)]
pub struct Params {
    quota: String,
    quota_bytes: i64,
}

/// Bytes each project of a quota holds now, and whether it takes uploads.
pub async fn usage(
    conn: &mut AnyConnection,
    quota: &str,
) -> Result<Vec<(String, String, i64, bool)>, sqlx::Error> {
    let rows: Vec<(String, String, i64, Flag)> = sqlx::query_as(
        "SELECT p.id, p.name, CAST(COALESCE(SUM(d.size_bytes), 0) AS BIGINT), p.uploads_blocked
         FROM projects p LEFT JOIN documents d ON d.project_id = p.id
         WHERE p.quota_id = $1 GROUP BY p.id ORDER BY p.id",
    )
    .bind(quota)
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(id, name, bytes, Flag(blocked))| (id, name, bytes, blocked))
        .collect())
}

const BLOCKED: &str = "uploads_blocked";
const UNBLOCKED: &str = "uploads_unblocked";

pub async fn plan(conn: &mut AnyConnection, p: &Params) -> ApiResult<Planned> {
    let mut planned = build::nothing(Credits::cents(0));
    let resource = format!("storage/{}", p.quota);
    let row: Option<(i64, i64)> =
        sqlx::query_as("SELECT quota_bytes, revision FROM storage_quotas WHERE id = $1")
            .bind(&p.quota)
            .fetch_optional(&mut *conn)
            .await?;
    let Some((current, revision)) = row else {
        planned.validation.push(blocker(
            "quota_not_found",
            "/quota",
            format!("Storage quota {} does not exist.", p.quota),
            "List the storage quotas and use one of their ids.",
        ));
        return Ok(planned);
    };
    planned.read_revisions.push(ReadRevision {
        resource: resource.clone(),
        revision: revision.to_string(),
    });
    if current == p.quota_bytes {
        planned.validation.push(note(
            Severity::Info,
            "no_change",
            "/quota_bytes",
            format!("{} is already {current} bytes.", p.quota),
        ));
        return Ok(planned);
    }
    planned.effects.push(PlannedEffect::new(Effect {
        changes: vec![Change {
            path: "/quota_bytes".to_owned(),
            before: json!(current),
            after: json!(p.quota_bytes),
        }],
        ..effect(
            1,
            "quota_changed",
            EffectKind::Update,
            resource.clone(),
            format!(
                "Change the per-project quota from {current} to {} bytes.",
                p.quota_bytes
            ),
        )
    }));
    let projects = usage(conn, &p.quota).await?;
    let subjects = |block: bool| -> Vec<Subject> {
        projects
            .iter()
            .filter(|(_, _, used, blocked)| {
                let over = *used > p.quota_bytes;
                if block {
                    over && !blocked
                } else {
                    !over && *blocked
                }
            })
            .map(|(id, name, _, _)| Subject::new(id.clone(), name.clone()))
            .collect()
    };
    for (effect_type, block) in [(BLOCKED, true), (UNBLOCKED, false)] {
        let affected = subjects(block);
        if affected.is_empty() {
            continue;
        }
        let what = count(affected.len(), "project", "projects");
        let description = if block {
            format!("{what} over the new quota stop taking uploads.")
        } else {
            format!("{what} back under the quota take uploads again.")
        };
        if block {
            planned.validation.push(note(
                Severity::Warning,
                "uploads_blocked",
                "/quota_bytes",
                description.clone(),
            ));
        }
        planned.effects.push(PlannedEffect::with_subjects(
            Effect {
                derived: true,
                cause: Some(effect_id(1)),
                changes: vec![Change {
                    path: "/uploads_blocked".to_owned(),
                    before: json!(!block),
                    after: json!(block),
                }],
                ..effect(
                    planned.effects.len() + 1,
                    effect_type,
                    EffectKind::Update,
                    format!("{resource}/projects"),
                    description,
                )
            },
            Arc::new(affected),
        ));
    }
    Ok(planned)
}

pub async fn apply(h: &mut Handle<'_>, p: &Params, planned: &Planned) -> ApiResult<Applied> {
    let dialect = h.dialect();
    let Some(direct) = planned.effects.first() else {
        return Ok(Applied {
            content: format!("{} is unchanged.", p.quota),
            ..Applied::default()
        });
    };
    let before: i64 = sqlx::query_scalar("SELECT quota_bytes FROM storage_quotas WHERE id = $1")
        .bind(&p.quota)
        .fetch_one(h.conn())
        .await?;
    let after: i64 = sqlx::query_scalar(
        "UPDATE storage_quotas SET quota_bytes = $1, revision = revision + 1 WHERE id = $2
         RETURNING quota_bytes",
    )
    .bind(p.quota_bytes)
    .bind(&p.quota)
    .fetch_one(h.conn())
    .await?;
    let mut journal = vec![JournalEntry::of(
        &direct.effect,
        vec![],
        vec![Change {
            path: "/quota_bytes".to_owned(),
            before: json!(before),
            after: json!(after),
        }],
    )];
    for derived in &planned.effects[1..] {
        let block = derived.effect.effect_type == BLOCKED;
        let ids = json!(derived.subject_ids()).to_string();
        let was: BTreeMap<String, Flag> = sqlx::query_as(&format!(
            "SELECT id, uploads_blocked FROM projects
             WHERE quota_id = $1 AND id IN ({})",
            dialect.json_strings(2)
        ))
        .bind(&p.quota)
        .bind(&ids)
        .fetch_all(h.conn())
        .await?
        .into_iter()
        .collect();
        let rows: Vec<(String, Flag)> = sqlx::query_as(&format!(
            "UPDATE projects SET uploads_blocked = $1
             WHERE quota_id = $2 AND uploads_blocked != $1
               AND id IN ({})
             RETURNING id, uploads_blocked",
            dialect.json_strings(3)
        ))
        .bind(i64::from(block))
        .bind(&p.quota)
        .bind(&ids)
        .fetch_all(h.conn())
        .await?;
        // One change per distinct (before, after) the rows report; one when all agree, as planned.
        let mut outcomes: Vec<(Option<bool>, bool)> = rows
            .iter()
            .map(|(id, Flag(now))| (was.get(id).map(|was| was.0), *now))
            .collect();
        outcomes.sort();
        outcomes.dedup();
        let changes = outcomes
            .into_iter()
            .map(|(before, now)| Change {
                path: "/uploads_blocked".to_owned(),
                before: json!(before),
                after: json!(now),
            })
            .collect();
        let changed = rows.into_iter().map(|(id, _)| id).collect();
        journal.push(JournalEntry::of(&derived.effect, changed, changes));
    }
    Ok(Applied {
        content: format!("Set {} to {after} bytes per project.", p.quota),
        journal,
        metadata: Default::default(),
        ..Applied::default()
    })
}
