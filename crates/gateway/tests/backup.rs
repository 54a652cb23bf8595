//! `backup` and `restore` as an operator runs them (the binary, beside a serving gateway): a
//! copy taken under writes is whole, a copy restored is the store table for table, and a gateway
//! on it resumes. Always on SQLite, whichever store the pass tests: the commands are SQLite's.

use std::collections::BTreeMap;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::http::StatusCode;
use sqlx::{AnyConnection, Connection as _};

use crate::cli::BIN;
use crate::common::{approve_by, retention, state, Gateway, RETENTION};
use crate::standing;

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn succeeded(output: &Output) -> String {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn refused(args: &[&str], says: &str) {
    let output = run(args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{args:?} succeeded");
    assert!(stderr.contains(says), "{args:?}: {stderr}");
}

/// Every row of every table, as text, in an order that does not depend on how it was stored.
async fn tables(url: &str) -> BTreeMap<String, Vec<String>> {
    sqlx::any::install_default_drivers();
    let mut conn = AnyConnection::connect(&format!("{url}?mode=ro"))
        .await
        .unwrap();
    let names: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    let mut tables = BTreeMap::new();
    for name in names {
        let columns: Vec<String> = sqlx::query_scalar("SELECT name FROM pragma_table_info($1)")
            .bind(&name)
            .fetch_all(&mut conn)
            .await
            .unwrap();
        let row = columns
            .iter()
            .map(|c| format!("quote(\"{c}\")"))
            .collect::<Vec<_>>()
            .join(" || '|' || ");
        let rows: Vec<String> =
            sqlx::query_scalar(&format!("SELECT {row} FROM \"{name}\" ORDER BY 1"))
                .fetch_all(&mut conn)
                .await
                .unwrap();
        tables.insert(name, rows);
    }
    conn.close().await.unwrap();
    tables
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_under_writes_restores_into_a_store_a_gateway_resumes_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let live = format!("sqlite://{}", path("gw.db"));
    let gw = Arc::new(Gateway::at(&live).await);
    let dana = gw.enroll("Dana").await;
    let executed = gw.preview(RETENTION, retention("prj_184", 14)).await;
    approve_by(&gw, &executed, &[&dana]).await;
    assert_eq!(gw.execute(&executed).await.status, StatusCode::OK);
    let agent = standing::agent_id(&gw).await;
    standing::create(&gw, &dana, &standing::statement(&gw, &dana, &agent)).await;

    let writing = Arc::new(AtomicBool::new(true));
    let load = tokio::spawn({
        let (gw, writing) = (gw.clone(), writing.clone());
        async move {
            let mut written = 0;
            while writing.load(Ordering::SeqCst) {
                gw.preview(RETENTION, retention("prj_184", 10 + written % 50))
                    .await;
                written += 1;
            }
            written
        }
    });
    let under_load = path("under-load.db");
    let said = tokio::task::spawn_blocking({
        let (live, out) = (live.clone(), under_load.clone());
        move || succeeded(&run(&["backup", "--database", &live, "--out", &out]))
    })
    .await
    .unwrap();
    writing.store(false, Ordering::SeqCst);
    let written = load.await.unwrap();
    assert!(written > 0, "no write went on beside the backup");
    assert!(said.starts_with("Backed up gateway gw_"), "{said}");
    assert!(said.contains("1 standing approvals"), "{said}");
    let mode = std::fs::metadata(&under_load).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
        0o600
    );

    // The copy under load is one moment's store: whole, and a store a gateway opens.
    let from_load = format!("sqlite://{}", path("from-load.db"));
    succeeded(&run(&[
        "restore",
        "--from",
        &under_load,
        "--database",
        &from_load,
    ]));
    let copied = tables(&from_load).await;
    let plans = copied["plans"].len();
    let at_end = tables(&live).await;
    assert!(
        (2..=at_end["plans"].len()).contains(&plans),
        "{plans} plans of {}, {written} written during the backup",
        at_end["plans"].len()
    );

    // Quiet, a copy is the store table for table, and a gateway on it serves what it held.
    let quiet = path("quiet.db");
    succeeded(&run(&["backup", "--database", &live, "--out", &quiet]));
    let restored = format!("sqlite://{}", path("restored.db"));
    let said = succeeded(&run(&[
        "restore",
        "--from",
        &quiet,
        "--database",
        &restored,
    ]));
    assert!(
        said.contains(&format!("{} plans", at_end["plans"].len())),
        "{said}"
    );
    let restored_tables = tables(&restored).await;
    assert_eq!(
        restored_tables.keys().collect::<Vec<_>>(),
        at_end.keys().collect::<Vec<_>>()
    );
    for (table, rows) in &at_end {
        assert_eq!(&restored_tables[table], rows, "table {table}");
    }
    let store = countersign_engine::Store::open(&restored).await.unwrap();
    let resumed = Gateway::acting_as(state(store).await, gw.agent.clone());
    let id = executed["plan_id"].as_str().unwrap();
    let before = gw.record(&dana.token, id).await;
    let after = resumed.record(&dana.token, id).await;
    assert_eq!(after.status, StatusCode::OK, "{}", after.body);
    assert_eq!(after.body, before.body);
    assert_eq!(after.body["status"], "executed");
}

#[test]
fn backup_and_restore_refuse_what_would_lose_or_overwrite_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let live = format!("sqlite://{}", path("gw.db"));
    succeeded(&run(&[
        "agents",
        "add",
        "--database",
        &live,
        "--name",
        "ops",
    ]));
    let out = path("copy.db");
    succeeded(&run(&["backup", "--database", &live, "--out", &out]));

    refused(
        &["backup", "--database", &live, "--out", &out],
        "a backup never overwrites",
    );
    refused(
        &["restore", "--from", &out, "--database", &live],
        "a restore goes into a new store, never over one",
    );
    std::fs::write(path("notes.txt"), "not a store").unwrap();
    refused(
        &[
            "restore",
            "--from",
            &path("notes.txt"),
            "--database",
            "sqlite://x.db",
        ],
        "notes.txt",
    );
    refused(
        &[
            "backup",
            "--database",
            "postgres://gw:hunter2@db/gw",
            "--out",
            &path("pg.db"),
        ],
        "pg_dump",
    );
    refused(
        &[
            "backup",
            "--database",
            &format!("sqlite://{}", path("none.db")),
            "--out",
            &path("n.db"),
        ],
        "no store at",
    );
    assert!(!std::path::Path::new(&path("pg.db")).exists());
    assert!(!std::path::Path::new(&path("n.db")).exists());
    assert!(!std::path::Path::new("x.db").exists());
}
