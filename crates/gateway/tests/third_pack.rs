//! A capability a team adds without touching the engine: `projects.rename`, in a pack of its
//! own registered beside the two the gateway ships (README, "Writing a capability pack"). It
//! previews, waits for approval, executes, goes stale, and answers in the envelope like any
//! other. This test binary registers its packs itself, so it has a process of its own.

mod common;

use common::{assert_error, Gateway};
use countersign_gateway::capabilities::{
    self, parse, world, Applied, ApprovalRule, BoxFuture, Definition, EffectProfile, Execution,
    JournalEntry, Kind, Pack, Planned, PlannedEffect, Target, WorldCapability,
};
use countersign_gateway::providers::{self, PackSettings};
use countersign_gateway::ApiResult;
use countersign_proto::describe::{CostClass, Describe, DryRunMode, Preflight};
use countersign_proto::plan::{Change, Effect, EffectKind, ReadRevision};
use countersign_proto::Credits;
use serde::Deserialize;
use serde_json::{json, Value};
use sqlx::AnyConnection;

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
        world::describe(
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
        Some(Target::Project)
    }
    fn approval(&self) -> ApprovalRule {
        ApprovalRule::Always
    }
    fn plan<'a>(
        &'a self,
        conn: &'a mut AnyConnection,
        params: &'a Value,
    ) -> BoxFuture<'a, ApiResult<Planned>> {
        Box::pin(async move {
            let p: Rename = parse(params)?;
            let resource = format!("projects/{}", p.project);
            let row: Option<(String, i64)> =
                sqlx::query_as("SELECT name, revision FROM projects WHERE id = $1")
                    .bind(&p.project)
                    .fetch_optional(&mut *conn)
                    .await?;
            let mut planned = world::nothing(Credits::cents(1));
            let Some((name, revision)) = row else {
                planned
                    .validation
                    .push(world::project_not_found(&p.project));
                return Ok(planned);
            };
            planned.read_revisions.push(ReadRevision {
                resource: resource.clone(),
                revision: revision.to_string(),
            });
            planned.effects.push(PlannedEffect::new(Effect {
                id: "eff_1".into(),
                effect_type: "project.rename".into(),
                kind: EffectKind::Update,
                derived: false,
                cause: None,
                resource,
                description: format!("Rename {} from {name} to {}.", p.project, p.name),
                reversible: true,
                external: false,
                changes: vec![Change {
                    path: "/name".into(),
                    before: json!(name),
                    after: json!(p.name),
                }],
                subjects: None,
                cost: None,
            }));
            Ok(planned)
        })
    }
}

impl WorldCapability for RenameProject {
    fn apply<'a>(
        &'a self,
        conn: &'a mut AnyConnection,
        params: &'a Value,
        planned: &'a Planned,
        _: Execution<'a>,
    ) -> BoxFuture<'a, ApiResult<Applied>> {
        Box::pin(async move {
            let p: Rename = parse(params)?;
            let before: String = sqlx::query_scalar("SELECT name FROM projects WHERE id = $1")
                .bind(&p.project)
                .fetch_one(&mut *conn)
                .await?;
            sqlx::query("UPDATE projects SET name = $1 WHERE id = $2")
                .bind(&p.name)
                .bind(&p.project)
                .execute(&mut *conn)
                .await?;
            let effect = &planned.effects[0].effect;
            world::bump(conn, &effect.resource).await?;
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

fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let ours = Pack {
            name: "acme",
            capabilities: vec![Kind::World(Box::new(RenameProject))],
        };
        capabilities::install(vec![
            capabilities::world_pack(),
            providers::pack(&PackSettings::default()),
            ours,
        ])
        .unwrap();
    });
}

#[tokio::test]
async fn a_third_pack_runs_through_the_same_plans_approvals_and_envelope() {
    install();
    let gw = Gateway::new().await;
    let listed = gw
        .call("GET", "/v1/capabilities", Some(&gw.agent), None)
        .await;
    let ids: Vec<&str> = listed.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["capability_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 11);
    assert!(ids.contains(&"projects.rename") && ids.contains(&"text.generate"));

    let params = json!({"project": "prj_184", "name": "Support tools"});
    let plan = gw.approved("projects.rename", params.clone()).await;
    assert_eq!(
        plan["effects"][0]["changes"][0]["before"],
        "Support tooling"
    );
    let reply = gw.execute(&plan).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.body["content"], "Renamed prj_184 to Support tools.");
    assert_eq!(reply.body["usage"]["credits"], "0.01");

    // The engine's staleness covers it too: the rename moved what this plan read.
    let second = gw
        .approved(
            "projects.rename",
            json!({"project": "prj_184", "name": "B"}),
        )
        .await;
    let stale = gw
        .approved(
            "projects.rename",
            json!({"project": "prj_184", "name": "C"}),
        )
        .await;
    assert_eq!(gw.execute(&second).await.status, 200);
    assert_error(&gw.execute(&stale).await, "plan_stale", 409);
}

#[test]
fn two_capabilities_with_one_id_are_refused() {
    let pack = || Pack {
        name: "twice",
        capabilities: vec![Kind::World(Box::new(RenameProject))],
    };
    let refused = capabilities::install(vec![pack(), pack()]).unwrap_err();
    assert!(
        refused.contains("two capabilities are called projects.rename"),
        "{refused}"
    );
}
