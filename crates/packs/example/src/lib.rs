//! A capability a team adds without touching the engine: `projects.rename`, in a pack of its
//! own, built on `countersign-pack` and `countersign-proto` alone. It renames a project of the
//! world it is registered beside (the demo world's `projects` table, whose revisions that world's
//! domain keeps): it previews the change, waits for an approval, executes it, moves the project's
//! revision, and so makes other plans that read the project stale.

use countersign_pack::{
    build, parse, ApiResult, Applied, ApprovalRule, BoxFuture, Definition, EffectProfile,
    Execution, Handle, JournalEntry, Kind, Pack, Planned, PlannedEffect, Target, WorldCapability,
};
use countersign_proto::describe::{CostClass, Describe, DryRunMode, Preflight};
use countersign_proto::plan::{Change, Effect, EffectKind, ReadRevision};
use countersign_proto::Credits;
use serde::Deserialize;
use serde_json::{json, Value};

/// The pack: one capability, and no domain of its own.
pub fn pack() -> Pack {
    Pack::new("acme", vec![Kind::World(Box::new(RenameProject))])
}

struct RenameProject;

#[derive(Deserialize)]
struct Rename {
    project: String,
    name: String,
}

impl Definition for RenameProject {
    fn id(&self) -> &'static str {
        "projects.rename"
    }

    fn title(&self) -> &'static str {
        "Rename a project"
    }

    fn describe(&self) -> Describe {
        let schema = json!({"type": "object", "additionalProperties": false,
            "required": ["project", "name"],
            "properties": {"project": {"type": "string", "pattern": "^prj_[a-z0-9_]+$"},
                           "name": {"type": "string", "minLength": 1, "maxLength": 80}}});
        build::describe(
            self.id(),
            self.title(),
            schema,
            DryRunMode::Required,
            (Preflight::Estimate, CostClass::Flat),
            1,
        )
    }

    fn effects(&self) -> EffectProfile {
        EffectProfile {
            kinds: &[EffectKind::Update],
            irreversible: false,
            external: false,
        }
    }

    fn target(&self) -> Option<Target> {
        Some(Target {
            param: "project",
            prefix: "prj_",
        })
    }

    fn approval(&self) -> ApprovalRule {
        ApprovalRule::Always
    }

    fn plan<'a>(
        &'a self,
        handle: &'a mut Handle<'_>,
        params: &'a Value,
    ) -> BoxFuture<'a, ApiResult<Planned>> {
        Box::pin(async move {
            let p: Rename = parse(params)?;
            let resource = format!("projects/{}", p.project);
            let row: Option<(String, i64)> =
                sqlx::query_as("SELECT name, revision FROM projects WHERE id = $1")
                    .bind(&p.project)
                    .fetch_optional(handle.conn())
                    .await?;
            let mut planned = build::nothing(Credits::cents(1));
            let Some((name, revision)) = row else {
                planned.validation.push(build::blocker(
                    "project_not_found",
                    "/project",
                    format!("Project {} does not exist.", p.project),
                    "List the projects and use one of their ids.",
                ));
                return Ok(planned);
            };
            planned.read_revisions.push(ReadRevision {
                resource: resource.clone(),
                revision: revision.to_string(),
            });
            planned.effects.push(PlannedEffect::new(Effect {
                changes: vec![Change {
                    path: "/name".into(),
                    before: json!(name),
                    after: json!(p.name),
                }],
                ..build::effect(
                    1,
                    "project.rename",
                    EffectKind::Update,
                    resource,
                    format!("Rename {} from {name} to {}.", p.project, p.name),
                )
            }));
            Ok(planned)
        })
    }
}

impl WorldCapability for RenameProject {
    fn apply<'a>(
        &'a self,
        handle: &'a mut Handle<'_>,
        params: &'a Value,
        planned: &'a Planned,
        _: Execution<'a>,
    ) -> BoxFuture<'a, ApiResult<Applied>> {
        Box::pin(async move {
            let p: Rename = parse(params)?;
            let before: String = sqlx::query_scalar("SELECT name FROM projects WHERE id = $1")
                .bind(&p.project)
                .fetch_one(handle.conn())
                .await?;
            sqlx::query("UPDATE projects SET name = $1, revision = revision + 1 WHERE id = $2")
                .bind(&p.name)
                .bind(&p.project)
                .execute(handle.conn())
                .await?;
            let effect = &planned.effects[0].effect;
            handle.moved(effect.resource.clone());
            let change = Change {
                path: "/name".into(),
                before: json!(before),
                after: json!(p.name),
            };
            Ok(Applied {
                content: format!("Renamed {} to {}.", p.project, p.name),
                journal: vec![JournalEntry::of(effect, vec![], vec![change])],
                ..Applied::default()
            })
        })
    }
}
