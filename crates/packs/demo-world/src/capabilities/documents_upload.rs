//! `documents.document.upload`: seed 000's example, flat 0.09 credits. The upload counts against
//! the project's storage quota; a project over it or blocked takes none.

use countersign_proto::describe::{CostClass, Describe, DryRunMode, Preflight};
use countersign_proto::plan::{Change, Effect, EffectKind, ReadRevision};
use countersign_proto::Credits;
use serde::Deserialize;
use serde_json::{json, Value};
use sqlx::AnyConnection;

use countersign_pack::build::{self, blocker, effect, effect_id};
use countersign_pack::{
    ids, ApiResult, Applied, EffectProfile, Flag, Handle, JournalEntry, Planned, PlannedEffect,
};

pub const ID: &str = "documents.document.upload";
pub const TITLE: &str = "Upload a document";

/// A new document, and the storage it uses.
pub const EFFECTS: EffectProfile = EffectProfile {
    kinds: &[EffectKind::Create, EffectKind::Update],
    irreversible: false,
    external: false,
};

const PRICE_CENTS: i64 = 9;

pub fn describe() -> Describe {
    build::describe(
        ID,
        TITLE,
        build::params(
            &["project", "filename", "mime_type", "size_bytes"],
            json!({
                "project": {"type": "string", "pattern": "^prj_[a-z0-9_]{1,40}$"},
                "filename": {"type": "string", "minLength": 1, "maxLength": 200},
                "mime_type": {"enum": ["application/pdf", "text/plain", "text/markdown",
                                       "image/png", "image/jpeg"]},
                "size_bytes": {"type": "integer", "minimum": 1, "maximum": 104_857_600}
            }),
        ),
        DryRunMode::Supported,
        (Preflight::Estimate, CostClass::Flat),
        1,
    )
}

#[derive(Deserialize)]
pub struct Params {
    project: String,
    filename: String,
    mime_type: String,
    size_bytes: i64,
}

pub async fn plan(conn: &mut AnyConnection, p: &Params) -> ApiResult<Planned> {
    let price = Credits::cents(PRICE_CENTS);
    let mut planned = build::nothing(price);
    let project: Option<(Option<String>, Flag)> =
        sqlx::query_as("SELECT quota_id, uploads_blocked FROM projects WHERE id = $1")
            .bind(&p.project)
            .fetch_optional(&mut *conn)
            .await?;
    let Some((quota, Flag(blocked))) = project else {
        planned
            .validation
            .push(crate::world::project_not_found(&p.project));
        return Ok(planned);
    };
    // The price is the plan's estimated_cost, as in seed 000's answer; a cost on the effect would
    // raise the `money` flag and send every upload to approval, which seed 000 says it needs not.
    planned.effects.push(PlannedEffect::new(Effect {
        changes: vec![
            Change {
                path: "/filename".to_owned(),
                before: Value::Null,
                after: json!(p.filename),
            },
            Change {
                path: "/size_bytes".to_owned(),
                before: Value::Null,
                after: json!(p.size_bytes),
            },
        ],
        ..effect(
            1,
            "document_created",
            EffectKind::Create,
            format!("projects/{}/documents", p.project),
            "Would upload and process one document.",
        )
    }));
    if blocked {
        planned.validation.push(blocker(
            "uploads_blocked",
            "/project",
            format!(
                "Project {} is over its storage quota and takes no uploads.",
                p.project
            ),
            "Raise the quota (storage.quota.update) or remove documents first.",
        ));
    }
    let Some(quota) = quota else {
        return Ok(planned);
    };
    let resource = format!("storage/{quota}");
    let (limit, revision): (i64, i64) =
        sqlx::query_as("SELECT quota_bytes, revision FROM storage_quotas WHERE id = $1")
            .bind(&quota)
            .fetch_one(&mut *conn)
            .await?;
    planned.read_revisions.push(ReadRevision {
        resource: resource.clone(),
        revision: revision.to_string(),
    });
    let used: i64 = sqlx::query_scalar(
        "SELECT CAST(COALESCE(SUM(size_bytes), 0) AS BIGINT) FROM documents WHERE project_id = $1",
    )
    .bind(&p.project)
    .fetch_one(&mut *conn)
    .await?;
    let after = used + p.size_bytes;
    if after > limit && !blocked {
        planned.validation.push(blocker(
            "quota_exceeded",
            "/size_bytes",
            format!(
                "Project {} would hold {after} bytes; its quota is {limit}.",
                p.project
            ),
            "Upload a smaller file, remove documents, or raise the quota.",
        ));
    }
    planned.effects.push(PlannedEffect::new(Effect {
        derived: true,
        cause: Some(effect_id(1)),
        changes: vec![Change {
            path: format!("/projects/{}/used_bytes", p.project),
            before: json!(used),
            after: json!(after),
        }],
        ..effect(
            2,
            "storage_used",
            EffectKind::Update,
            resource,
            format!("Use {} more bytes of {quota}.", p.size_bytes),
        )
    }));
    Ok(planned)
}

pub async fn apply(h: &mut Handle<'_>, p: &Params, planned: &Planned) -> ApiResult<Applied> {
    // The id is allocated here, at execution: a preview consumes no identifier.
    let (id, filename, size): (String, String, i64) = sqlx::query_as(
        "INSERT INTO documents (id, project_id, filename, mime_type, size_bytes, created_at)
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING id, filename, size_bytes",
    )
    .bind(ids::random_id("doc_", 8))
    .bind(&p.project)
    .bind(&p.filename)
    .bind(&p.mime_type)
    .bind(p.size_bytes)
    .bind(ids::to_text(ids::now()))
    .fetch_one(h.conn())
    .await?;
    let mut journal = vec![JournalEntry::of(
        &planned.effects[0].effect,
        vec![],
        vec![
            Change {
                path: "/filename".to_owned(),
                before: Value::Null,
                after: json!(filename),
            },
            Change {
                path: "/size_bytes".to_owned(),
                before: Value::Null,
                after: json!(size),
            },
        ],
    )];
    if let Some(storage) = planned.effects.get(1) {
        crate::world::bump(h, &storage.effect.resource).await?;
        // `planned` was derived in this transaction, so the bytes in use it names are those the
        // insert above started from and ended at: summing the documents again reads the same.
        journal.push(JournalEntry::of(
            &storage.effect,
            vec![],
            storage.effect.changes.clone(),
        ));
    }
    let mut metadata = serde_json::Map::new();
    metadata.insert("document_id".to_owned(), json!(id));
    Ok(Applied {
        content: format!("Uploaded {filename} to {} as {id}.", p.project),
        files: vec![json!({"id": id, "name": filename, "mime_type": p.mime_type,
                           "size_bytes": size, "project": p.project})],
        journal,
        metadata,
        ..Applied::default()
    })
}
