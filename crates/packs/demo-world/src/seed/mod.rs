//! The demo world: the seeds' examples with the ids of `shared/fixtures`: projects and their items
//! here; people, groups, seats and storage in [`org`].

use chrono::Duration;

mod org;

use countersign_pack::ids;
use sqlx::AnyConnection;

struct DemoProject {
    id: &'static str,
    name: &'static str,
    revision: i64,
    retention_days: i64,
    items: usize,
    held: usize,
}

const PROJECTS: [DemoProject; 5] = [
    DemoProject {
        id: "prj_184",
        name: "Support tooling",
        revision: 73,
        retention_days: 30,
        items: 20,
        held: 2,
    },
    DemoProject {
        id: "prj_200",
        name: "Billing exports",
        revision: 12,
        retention_days: 90,
        items: 8,
        held: 1,
    },
    DemoProject {
        id: "prj_311",
        name: "Onboarding site",
        revision: 5,
        retention_days: 14,
        items: 30,
        held: 0,
    },
    DemoProject {
        id: "prj_420",
        name: "Design assets",
        revision: 18,
        retention_days: 365,
        items: 6,
        held: 0,
    },
    DemoProject {
        id: "prj_421",
        name: "Marketing site",
        revision: 9,
        retention_days: 90,
        items: 4,
        held: 1,
    },
];

const ITEM_TITLES: [&str; 6] = [
    "Build artifact",
    "Nightly export",
    "Crash report",
    "Audit bundle",
    "Test log",
    "Release notes draft",
];

/// Seeds the demo world once, in the caller's transaction; the parts a store already has are
/// left as they are.
pub async fn seed(conn: &mut AnyConnection) -> anyhow::Result<()> {
    seed_projects(conn).await?;
    org::seed(conn).await
}

async fn seed_projects(conn: &mut AnyConnection) -> anyhow::Result<()> {
    let now = ids::now();
    for project in PROJECTS {
        let exists: Option<String> = sqlx::query_scalar("SELECT id FROM projects WHERE id = $1")
            .bind(project.id)
            .fetch_optional(&mut *conn)
            .await?;
        if exists.is_some() {
            continue;
        }
        let note = format!(
            "Keep artifacts for {}.\nReviewed quarterly.\n",
            match project.retention_days {
                30 => "a month".to_owned(),
                90 => "a quarter".to_owned(),
                14 => "two weeks".to_owned(),
                n => format!("{n} days"),
            }
        );
        sqlx::query(
            "INSERT INTO projects (id, name, revision, retention_days, retention_note)
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(project.id)
        .bind(project.name)
        .bind(project.revision)
        .bind(project.retention_days)
        .bind(note)
        .execute(&mut *conn)
        .await?;
        let prefix = if project.id == "prj_184" {
            "itm_".to_owned()
        } else {
            format!("itm_{}_", &project.id[4..])
        };
        for n in 1..=project.items {
            let created = now - Duration::days(n as i64);
            let expires = created + Duration::days(project.retention_days);
            sqlx::query(
                "INSERT INTO project_items (id, project_id, title, created_at, expires_at, legal_hold)
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(format!("{prefix}{n:02}"))
            .bind(project.id)
            .bind(format!("{} #{n}", ITEM_TITLES[n % ITEM_TITLES.len()]))
            .bind(ids::to_text(created))
            .bind(ids::to_text(expires))
            .bind(i64::from(n > project.items - project.held))
            .execute(&mut *conn)
            .await?;
        }
    }
    Ok(())
}
