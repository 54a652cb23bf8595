//! The demo organisation: people, nested groups, the on-call entitlement, project roles, the seat
//! pool, storage quotas and documents. `grp_support` is seed 004's bulk example with the ids of
//! `plan-bulk.json`; `grp_all_staff` is there for real bulk.

use countersign_pack::{ids, Dialect};
use sqlx::AnyConnection;

/// Members of `grp_all_staff`: every tenth is a contractor, so 100,000 are employees, the size of
/// the seeds' bulk example (one removal of 100,000 subjects).
const ALL_STAFF: u32 = 111_111;

const FIRST: [&str; 16] = [
    "Ana", "Ben", "Chloe", "Dana", "Emil", "Farah", "Gus", "Hana", "Ivo", "Jun", "Kira", "Luis",
    "Mara", "Nils", "Omar", "Pia",
];
const LAST: [&str; 16] = [
    "Adams", "Berg", "Costa", "Diaz", "Eke", "Fischer", "Gomez", "Horvat", "Ito", "Jensen",
    "Kowal", "Lind", "Moreau", "Novak", "Okafor", "Ruiz",
];

fn name(n: usize) -> String {
    format!(
        "{} {}",
        FIRST[n % FIRST.len()],
        LAST[(n / FIRST.len()) % LAST.len()]
    )
}

/// `usr_08`, `usr_19`, `usr_31`, `usr_34` keep access through the nested escalation group.
const ESCALATION: [&str; 4] = ["usr_08", "usr_19", "usr_31", "usr_34"];
/// The support contractors holding the on-call entitlement linked to `grp_support`.
const ON_CALL: [&str; 6] = ["usr_02", "usr_07", "usr_11", "usr_24", "usr_29", "usr_35"];

/// Bytes of documents per project, and the team quota each project draws on.
const STORAGE: [(&str, &str, i64); 5] = [
    ("prj_184", "sq_product", 120_000_000),
    ("prj_311", "sq_product", 90_000_000),
    ("prj_420", "sq_product", 150_000_000),
    ("prj_421", "sq_product", 30_000_000),
    ("prj_200", "sq_finance", 40_000_000),
];

pub async fn seed(conn: &mut AnyConnection) -> anyhow::Result<()> {
    let existing: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM users")
        .fetch_one(&mut *conn)
        .await?;
    if existing > 0 {
        return Ok(());
    }
    let mut users: Vec<(String, String, &str)> = vec![
        ("usr_lead".into(), "Lena Ortiz".into(), "employee"),
        ("usr_92".into(), "Sam Novak".into(), "employee"),
        ("usr_50".into(), "Tom Weller".into(), "contractor"),
    ];
    for n in 1..=37 {
        users.push((format!("usr_{n:02}"), name(n), "contractor"));
    }
    for n in 38..=45 {
        users.push((format!("usr_{n:02}"), name(n), "employee"));
    }
    for (id, name, employment) in &users {
        sqlx::query(
            "INSERT INTO users (id, name, email, employment, suspended) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(id)
        .bind(name)
        .bind(format!("{}@example.com", id.replace('_', ".")))
        .bind(employment)
        .bind(i64::from(id == "usr_50"))
        .execute(&mut *conn)
        .await?;
    }
    // The colleagues, generated in the database itself; every tenth is a contractor.
    let colleagues = match Dialect::of(conn) {
        Dialect::Sqlite => {
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1)
             INSERT INTO users (id, name, email, employment)
             SELECT printf('usr_s%06d', i),
                    (SELECT value FROM json_each($2) WHERE key = i % 16) || ' ' ||
                    (SELECT value FROM json_each($3) WHERE key = (i / 16) % 16),
                    printf('s%06d@example.com', i),
                    CASE WHEN i % 10 = 0 THEN 'contractor' ELSE 'employee' END
             FROM n"
        }
        Dialect::Postgres => {
            "INSERT INTO users (id, name, email, employment)
             SELECT 'usr_s' || lpad(i::text, 6, '0'),
                    ($2::jsonb ->> (i % 16)::int) || ' ' || ($3::jsonb ->> ((i / 16) % 16)::int),
                    's' || lpad(i::text, 6, '0') || '@example.com',
                    CASE WHEN i % 10 = 0 THEN 'contractor' ELSE 'employee' END
             FROM generate_series(1, $1) AS i"
        }
    };
    sqlx::query(colleagues)
        .bind(i64::from(ALL_STAFF))
        .bind(serde_json::to_string(&FIRST)?)
        .bind(serde_json::to_string(&LAST)?)
        .execute(&mut *conn)
        .await?;

    for (id, group_name, revision) in [
        ("grp_support", "Production support", 41),
        ("grp_support_escalation", "Support escalation", 7),
        ("grp_all_staff", "All staff", 3),
    ] {
        sqlx::query("INSERT INTO groups (id, name, revision) VALUES ($1, $2, $3)")
            .bind(id)
            .bind(group_name)
            .bind(revision)
            .execute(&mut *conn)
            .await?;
    }
    sqlx::query(
        "INSERT INTO group_nesting (parent_id, child_id) VALUES ('grp_support', 'grp_support_escalation')",
    )
    .execute(&mut *conn)
    .await?;
    let mut members: Vec<(&str, String)> = (1..=45)
        .map(|n| ("grp_support", format!("usr_{n:02}")))
        .collect();
    members.extend(
        ESCALATION
            .iter()
            .map(|u| ("grp_support_escalation", (*u).to_owned())),
    );
    members.push(("grp_support_escalation", "usr_40".to_owned()));
    for (group, user) in members {
        sqlx::query("INSERT INTO group_members (group_id, user_id) VALUES ($1, $2)")
            .bind(group)
            .bind(user)
            .execute(&mut *conn)
            .await?;
    }
    sqlx::query(
        "INSERT INTO group_members (group_id, user_id)
         SELECT 'grp_all_staff', id FROM users WHERE id LIKE 'usr_s%'",
    )
    .execute(&mut *conn)
    .await?;

    sqlx::query(
        "INSERT INTO entitlements (id, name, group_id, revision) VALUES
         ('on_call', 'on-call', 'grp_support', 9), ('vpn', 'VPN', 'grp_all_staff', 2)",
    )
    .execute(&mut *conn)
    .await?;
    for user in ON_CALL.iter().chain(&["usr_41"]) {
        sqlx::query(
            "INSERT INTO entitlement_holders (entitlement_id, user_id) VALUES ('on_call', $1)",
        )
        .bind(user)
        .execute(&mut *conn)
        .await?;
    }
    sqlx::query(
        "INSERT INTO entitlement_holders (entitlement_id, user_id)
         SELECT 'vpn', id FROM users WHERE id LIKE 'usr_s%' AND CAST(substr(id, 6) AS INTEGER) % 20 = 0",
    )
    .execute(&mut *conn)
    .await?;

    for (project, user, role) in [
        ("prj_184", "usr_lead", "admin"),
        ("prj_184", "usr_40", "editor"),
        ("prj_200", "usr_lead", "viewer"),
        ("prj_311", "usr_42", "editor"),
    ] {
        sqlx::query("INSERT INTO project_members (project_id, user_id, role) VALUES ($1, $2, $3)")
            .bind(project)
            .bind(user)
            .bind(role)
            .execute(&mut *conn)
            .await?;
    }
    sqlx::query("INSERT INTO seat_pools (id, total, used, revision) VALUES ('org', 25, 4, 12)")
        .execute(&mut *conn)
        .await?;

    sqlx::query(
        "INSERT INTO storage_quotas (id, name, quota_bytes, revision) VALUES
         ('sq_product', 'Product teams', 200000000, 4), ('sq_finance', 'Finance', 500000000, 2)",
    )
    .execute(&mut *conn)
    .await?;
    let now = ids::to_text(ids::now());
    for (project, quota, bytes) in STORAGE {
        sqlx::query("UPDATE projects SET quota_id = $1 WHERE id = $2")
            .bind(quota)
            .bind(project)
            .execute(&mut *conn)
            .await?;
        for (n, share) in [(1, 5), (2, 3), (3, 2)] {
            sqlx::query(
                "INSERT INTO documents (id, project_id, filename, mime_type, size_bytes, created_at)
                 VALUES ($1, $2, $3, 'application/pdf', $4, $5)",
            )
            .bind(format!("doc_{}_{n}", &project[4..]))
            .bind(project)
            .bind(format!("report-{n}.pdf"))
            .bind(bytes * share / 10)
            .bind(&now)
            .execute(&mut *conn)
            .await?;
        }
    }
    Ok(())
}
