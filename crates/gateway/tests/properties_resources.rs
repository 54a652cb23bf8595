//! Property tests over generated worlds for the capabilities that share resources: storage quotas,
//! uploads under them, and role grants against the seat pool. Each checks identities against a
//! model of the world (which projects, which users), then runs the plan and checks the world.

use std::collections::BTreeSet;

use crate::common::props::{cases, exec, ids, run, runtime, subject_ids};
use crate::common::Gateway;
use proptest::prelude::*;
use serde_json::{json, Value};

fn blockers(plan: &Value) -> BTreeSet<String> {
    plan["validation"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["blocks_execution"] == true)
        .map(|v| v["code"].as_str().unwrap().to_owned())
        .collect()
}

/// A project under quota `sq_t`: bytes it holds, and whether it takes no uploads now.
#[derive(Debug, Clone)]
struct Holding {
    used: i64,
    blocked: bool,
}

fn holdings() -> impl Strategy<Value = Vec<Holding>> {
    prop::collection::vec(
        (prop::option::of(1..1_000i64), any::<bool>()).prop_map(|(used, blocked)| Holding {
            used: used.unwrap_or(0),
            blocked,
        }),
        0..12,
    )
}

async fn quota_world(gw: &Gateway, projects: &[Holding], limit: i64) {
    exec(
        gw,
        &format!("INSERT INTO storage_quotas VALUES ('sq_t', 'T', {limit}, 1)"),
    )
    .await;
    for (n, p) in projects.iter().enumerate() {
        exec(gw, &format!(
            "INSERT INTO projects (id, name, revision, retention_days, retention_note, quota_id, uploads_blocked)
             VALUES ('prj_{n:02}', 'P{n}', 1, 30, 'Keep.', 'sq_t', {})", p.blocked as i32
        )).await;
        if p.used > 0 {
            exec(gw, &format!(
                "INSERT INTO documents VALUES ('doc_{n:02}', 'prj_{n:02}', 'f', 'text/plain', {}, '2026-01-01T00:00:00Z')",
                p.used
            )).await;
        }
    }
}

async fn quota_change(projects: Vec<Holding>, current: i64, wanted: i64) {
    let gw = Gateway::bare().await;
    quota_world(&gw, &projects, current).await;
    let id = |n: usize| format!("prj_{n:02}");
    let to_block: BTreeSet<String> = (0..projects.len())
        .filter(|n| projects[*n].used > wanted && !projects[*n].blocked)
        .map(id)
        .collect();
    let to_unblock: BTreeSet<String> = (0..projects.len())
        .filter(|n| projects[*n].used <= wanted && projects[*n].blocked)
        .map(id)
        .collect();
    let plan = gw
        .preview(
            "storage.quota.update",
            json!({"quota": "sq_t", "quota_bytes": wanted}),
        )
        .await;
    if current == wanted {
        assert!(plan["effects"].as_array().unwrap().is_empty());
        return;
    }
    assert_eq!(subject_ids(&gw, &plan, "uploads_blocked").await, to_block);
    assert_eq!(
        subject_ids(&gw, &plan, "uploads_unblocked").await,
        to_unblock
    );

    run(&gw, "storage.quota.update", &plan).await;
    let blocked_after = ids(&gw, "SELECT id FROM projects WHERE uploads_blocked = 1").await;
    let blocked_before: BTreeSet<String> = (0..projects.len())
        .filter(|n| projects[*n].blocked)
        .map(id)
        .collect();
    let expected: BTreeSet<String> = blocked_before
        .difference(&to_unblock)
        .cloned()
        .chain(to_block)
        .collect();
    assert_eq!(blocked_after, expected);
    let limit: i64 = sqlx::query_scalar("SELECT quota_bytes FROM storage_quotas WHERE id = 'sq_t'")
        .fetch_one(gw.state.store.pool())
        .await
        .unwrap();
    assert_eq!(limit, wanted);
}

async fn upload(used: i64, blocked: bool, limit: i64, size: i64) {
    let gw = Gateway::bare().await;
    quota_world(&gw, &[Holding { used, blocked }], limit).await;
    let plan = gw
        .preview(
            "documents.document.upload",
            json!({"project": "prj_00", "filename": "new.txt", "mime_type": "text/plain",
                   "size_bytes": size}),
        )
        .await;
    let mut expected = BTreeSet::new();
    if blocked {
        expected.insert("uploads_blocked".to_owned());
    } else if used + size > limit {
        expected.insert("quota_exceeded".to_owned());
    }
    assert_eq!(blockers(&plan), expected);
    assert_eq!(plan["executable"], expected.is_empty());
    let storage = plan["effects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "storage_used")
        .unwrap();
    assert_eq!(storage["changes"][0]["before"], used);
    assert_eq!(storage["changes"][0]["after"], used + size);
    if !expected.is_empty() {
        return;
    }
    run(&gw, "documents.document.upload", &plan).await;
    let held: i64 = sqlx::query_scalar(
        "SELECT CAST(SUM(size_bytes) AS BIGINT) FROM documents WHERE project_id = 'prj_00'",
    )
    .fetch_one(gw.state.store.pool())
    .await
    .unwrap();
    assert_eq!(held, used + size);
}

/// A grant's world: the subject's state, the role they hold already, and the seat pool.
#[derive(Debug, Clone)]
struct GrantWorld {
    exists: bool,
    suspended: bool,
    holds: Option<usize>,
    seats_total: i64,
    seats_used: i64,
}

const ROLES: [&str; 3] = ["viewer", "editor", "admin"];

fn grant_worlds() -> impl Strategy<Value = GrantWorld> {
    (
        any::<bool>(),
        any::<bool>(),
        prop::option::of(0..3usize),
        1..5i64,
        0..6i64,
    )
        .prop_map(|(exists, suspended, holds, seats_total, used)| GrantWorld {
            exists,
            suspended,
            holds,
            seats_total,
            seats_used: used.min(seats_total),
        })
}

async fn grant(world: GrantWorld, role: usize) {
    let gw = Gateway::bare().await;
    exec(&gw, "INSERT INTO projects (id, name, revision, retention_days, retention_note) VALUES ('prj_t', 'T', 1, 30, 'Keep.')").await;
    exec(
        &gw,
        &format!(
            "INSERT INTO seat_pools VALUES ('org', {}, {}, 1)",
            world.seats_total, world.seats_used
        ),
    )
    .await;
    if world.exists {
        exec(&gw, &format!(
            "INSERT INTO users (id, name, email, employment, suspended) VALUES ('usr_s', 'S', 's@x', 'employee', {})",
            world.suspended as i32
        )).await;
        if let Some(held) = world.holds {
            exec(
                &gw,
                &format!(
                    "INSERT INTO project_members VALUES ('prj_t', 'usr_s', '{}')",
                    ROLES[held]
                ),
            )
            .await;
        }
    }
    let plan = gw
        .preview(
            "memberships.grant",
            json!({"project": "prj_t", "subject": "usr_s", "role": ROLES[role]}),
        )
        .await;
    // The model, in the order the capability looks.
    let mut expected = BTreeSet::new();
    let already = world.exists && world.holds == Some(role);
    if !world.exists {
        expected.insert("subject_not_found");
    } else if world.suspended {
        expected.insert("subject_suspended");
    }
    if world.exists && !already {
        if world.holds.is_some() {
            expected.insert("role_conflict");
        }
        if world.seats_used >= world.seats_total {
            expected.insert("no_seat_available");
        }
    }
    let expected: BTreeSet<String> = expected.into_iter().map(str::to_owned).collect();
    assert_eq!(blockers(&plan), expected, "{world:?}");
    let effects = plan["effects"].as_array().unwrap();
    if !world.exists || already {
        assert!(effects.is_empty(), "{world:?}");
        assert_eq!(plan["would_require_approval"], false);
        return;
    }
    assert_eq!(
        subject_ids(&gw, &plan, "role_granted").await,
        BTreeSet::from(["usr_s".to_owned()])
    );
    assert_eq!(
        subject_ids(&gw, &plan, "invite_email_sent").await,
        BTreeSet::from(["usr_s".to_owned()])
    );
    if !expected.is_empty() {
        return;
    }
    run(&gw, "memberships.grant", &plan).await;
    let roles = ids(&gw, "SELECT user_id || ':' || role FROM project_members").await;
    assert_eq!(roles, BTreeSet::from([format!("usr_s:{}", ROLES[role])]));
    let used: i64 = sqlx::query_scalar("SELECT used FROM seat_pools WHERE id = 'org'")
        .fetch_one(gw.state.store.pool())
        .await
        .unwrap();
    assert_eq!(used, world.seats_used + 1);
    assert_eq!(
        ids(&gw, "SELECT user_id FROM email_outbox").await,
        BTreeSet::from(["usr_s".to_owned()])
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn a_quota_change_blocks_and_unblocks_exactly_the_projects_the_model_says(
        projects in holdings(),
        current in prop::sample::select(vec![0i64, 100, 500, 1_000]),
        wanted in prop::sample::select(vec![0i64, 1, 100, 499, 500, 999, 1_000]),
    ) {
        runtime().block_on(quota_change(projects, current, wanted));
    }

    #[test]
    fn an_upload_is_blocked_exactly_when_the_model_says_and_adds_its_bytes(
        used in 0..1_000i64,
        blocked in any::<bool>(),
        limit in 1..2_000i64,
        size in 1..1_500i64,
    ) {
        runtime().block_on(upload(used, blocked, limit, size));
    }

    #[test]
    fn a_grant_is_planned_blocked_and_applied_as_the_model_says(
        world in grant_worlds(),
        role in 0..3usize,
    ) {
        runtime().block_on(grant(world, role));
    }
}
