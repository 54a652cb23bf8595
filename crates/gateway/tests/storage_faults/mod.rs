//! A store that cannot take writes: full (SQLite's page limit reached, or a real full disk under
//! SQLite or PostgreSQL, met by previews, decisions and invokes) or read-only (met by previews,
//! decisions and invokes). Every write answers `storage_unavailable` and leaves nothing
//! half-written, the database stays sound, and the gateway works again once the store does (a
//! read-only store: after a restart on a writable one).

mod disk;

use disk::Disk;

use crate::common::{assert_error, retention, Gateway};
use axum::http::StatusCode;
use countersign_engine::Store;
use serde_json::json;

async fn on_file() -> (tempfile::TempDir, String, Gateway) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("gw.db").display());
    let gw = Gateway::at(&url).await;
    (dir, url, gw)
}

/// Sets a pragma on the gateway's one writer connection, where it stays.
async fn writer_pragma(gw: &Gateway, pragma: &str) {
    let mut w = gw.state.store.write().await.unwrap();
    sqlx::query(pragma).execute(&mut *w.tx).await.unwrap();
    w.commit().await.unwrap();
}

async fn count(gw: &Gateway, table: &str) -> i64 {
    sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}"))
        .fetch_one(gw.state.store.pool())
        .await
        .unwrap()
}

/// The database is sound: SQLite's integrity check passes; PostgreSQL's server still answers
/// (its own checks guard its files).
async fn sound(gw: &Gateway) {
    let check = match gw.state.store.dialect() {
        countersign_engine::store::Dialect::Sqlite => "PRAGMA integrity_check",
        countersign_engine::store::Dialect::Postgres => "SELECT 'ok'",
    };
    let check: String = sqlx::query_scalar(check)
        .fetch_one(gw.state.store.pool())
        .await
        .unwrap();
    assert_eq!(check, "ok");
}

#[tokio::test]
async fn a_full_store_refuses_writes_whole_and_recovers() {
    let (_dir, _, gw) = on_file().await;
    let pages: i64 = sqlx::query_scalar("PRAGMA page_count")
        .fetch_one(gw.state.store.pool())
        .await
        .unwrap();
    writer_pragma(&gw, &format!("PRAGMA max_page_count = {}", pages + 2)).await;

    let mut made = 0;
    let refused = loop {
        let reply = gw
            .try_preview("projects.settings.update", retention("prj_184", 7 + made))
            .await;
        if reply.status != StatusCode::OK {
            break reply;
        }
        made += 1;
        assert!(made < 500, "the store never filled");
    };
    assert_error(&refused, "storage_unavailable", 503);
    // Every preview written is whole, the refused one left nothing.
    assert_eq!(count(&gw, "plans").await, made as i64);
    assert_eq!(count(&gw, "preview_audit").await, made as i64);
    sound(&gw).await;

    writer_pragma(&gw, "PRAGMA max_page_count = 1073741823").await;
    gw.dry_run(retention("prj_184", 3)).await;
    assert_eq!(count(&gw, "plans").await, made as i64 + 1);
    sound(&gw).await;
}

fn upload(n: u32) -> serde_json::Value {
    json!({"params": {"project": "prj_184", "filename": format!("note-{n}.txt"),
                      "mime_type": "text/plain", "size_bytes": 1}})
}

#[tokio::test]
async fn a_read_only_store_refuses_every_write_and_a_restart_recovers() {
    let (_dir, url, gw) = on_file().await;
    let dana = gw.enroll("Dana").await;
    let plan = gw.dry_run(retention("prj_184", 14)).await;
    let plan_id = plan["plan_id"].as_str().unwrap();
    // Another project's plan, approved: its execution is the invoke the store refuses.
    let approved = gw
        .approved("projects.settings.update", retention("prj_200", 9))
        .await;
    let before = gw.snapshot().await;
    let plans = count(&gw, "plans").await;
    writer_pragma(&gw, "PRAGMA query_only = 1").await;

    let preview = gw
        .try_preview("projects.settings.update", retention("prj_184", 21))
        .await;
    assert_error(&preview, "storage_unavailable", 503);
    let decision = dana
        .send(&gw, plan_id, &dana.sign(&dana.statement(&gw, &plan)))
        .await;
    assert_error(&decision, "storage_unavailable", 503);
    let invoke = gw.execute(&approved).await;
    assert_error(&invoke, "storage_unavailable", 503);
    let upload = gw
        .invoke_as(&gw.agent, "documents.document.upload", upload(0))
        .await;
    assert_error(&upload, "storage_unavailable", 503);
    // Reads still answer.
    let record = gw.record(&dana.token, plan_id).await;
    assert_eq!(record.body["status"], "pending_approval");
    let record = gw
        .record(&dana.token, approved["plan_id"].as_str().unwrap())
        .await;
    assert_eq!(record.body["status"], "approved");
    assert_eq!(gw.snapshot().await, before);
    assert_eq!(count(&gw, "plans").await, plans);
    sound(&gw).await;

    // Restarted on a writable store, the gateway takes the same decision.
    let (statement, agent) = (dana.statement(&gw, &plan), gw.agent.clone());
    drop(gw);
    let store = Store::open(&url).await.unwrap();
    let state = crate::common::state(store).await;
    let gw = Gateway::acting_as(state, agent);
    let decision = dana.send(&gw, plan_id, &dana.sign(&statement)).await;
    assert_eq!(decision.status, StatusCode::OK, "{}", decision.body);
    let invoke = gw.execute(&approved).await;
    assert_eq!(invoke.status, StatusCode::OK, "{}", invoke.body);
    sound(&gw).await;
}

#[tokio::test]
async fn a_real_full_disk_refuses_previews_whole_and_recovers_when_space_returns() {
    previews_on_a_full_disk(Disk::sqlite("64m")).await;
}

#[tokio::test]
async fn a_real_full_disk_under_postgresql_refuses_previews_whole_and_recovers() {
    previews_on_a_full_disk(Disk::postgres("384m")).await;
}

async fn previews_on_a_full_disk(disk: Disk) {
    let gw = Gateway::at(&disk.url()).await;
    gw.dry_run(retention("prj_184", 30)).await;
    // Everything else on the disk takes what is left.
    let filler = disk.fill();

    let plans_before = count(&gw, "plans").await;
    let mut made = 0;
    let refused = loop {
        let reply = gw
            .try_preview(
                "projects.settings.update",
                retention("prj_184", 7 + made % 300),
            )
            .await;
        if reply.status != StatusCode::OK {
            break reply;
        }
        made += 1;
        assert!(made < 5000, "the disk never filled");
    };
    assert_error(&refused, "storage_unavailable", 503);
    assert_eq!(count(&gw, "plans").await, plans_before + made as i64);
    assert_eq!(
        count(&gw, "preview_audit").await,
        plans_before + made as i64
    );
    sound(&gw).await;

    std::fs::remove_file(&filler).unwrap();
    gw.dry_run(retention("prj_184", 3)).await;
    assert_eq!(count(&gw, "plans").await, plans_before + made as i64 + 1);
    sound(&gw).await;
}

#[tokio::test]
async fn a_full_disk_met_by_decisions_and_invokes_leaves_each_plan_as_it_was() {
    decisions_and_invokes_on_a_full_disk(Disk::sqlite("256m")).await;
}

#[tokio::test]
async fn a_full_disk_under_postgresql_met_by_decisions_and_invokes_leaves_each_plan_as_it_was() {
    decisions_and_invokes_on_a_full_disk(Disk::postgres("384m")).await;
}

async fn decisions_and_invokes_on_a_full_disk(disk: Disk) {
    const PLANS: u32 = 50;
    let url = disk.url();
    let gw = Gateway::at(&url).await;
    let dana = gw.enroll("Dana").await;
    let mut pending = Vec::new();
    for days in 100..100 + PLANS {
        pending.push(gw.dry_run(retention("prj_184", days)).await);
    }
    let approved = gw
        .approved("projects.settings.update", retention("prj_200", 9))
        .await;
    let approved_id = approved["plan_id"].as_str().unwrap();
    if let Disk::Sqlite(_) = disk {
        // The log's pages written back and the file cut to nothing, and never checkpointed
        // again: every write must grow it. (On a connection of its own: the gateway's readers
        // are read-only.)
        writer_pragma(&gw, "PRAGMA wal_autocheckpoint = 0").await;
        let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&url)
            .await
            .unwrap();
        let (busy, _, _): (i64, i64, i64) = sqlx::query_as("PRAGMA wal_checkpoint(TRUNCATE)")
            .fetch_one(&mut conn)
            .await
            .unwrap();
        drop(conn);
        assert_eq!(busy, 0, "the checkpoint ran");
    }
    // On PostgreSQL the first execution's audit row is its table's first, which needs a page
    // the disk no longer has.
    let filler = disk.fill();

    // Decisions until the disk refuses one: the refused plan keeps no decision and still waits.
    let decisions_before = count(&gw, "decisions").await;
    let mut decided = 0;
    let refused = loop {
        let plan = &pending[decided];
        let reply = dana
            .send(
                &gw,
                plan["plan_id"].as_str().unwrap(),
                &dana.sign(&dana.statement(&gw, plan)),
            )
            .await;
        if reply.status != StatusCode::OK {
            break reply;
        }
        decided += 1;
        assert!(decided < pending.len(), "the disk never filled");
    };
    assert_error(&refused, "storage_unavailable", 503);
    println!("{decided} decisions taken before the disk refused one");
    let refused_plan = pending[decided]["plan_id"].as_str().unwrap();
    assert_eq!(
        count(&gw, "decisions").await,
        decisions_before + decided as i64
    );
    let record = gw.record(&dana.token, refused_plan).await;
    assert_eq!(record.body["status"], "pending_approval", "{}", record.body);
    assert_eq!(
        record.body["approvals"]["received"],
        json!([]),
        "{}",
        record.body
    );
    sound(&gw).await;

    // Invokes: the approved plan, then uploads, until the disk refuses one; what it refused left
    // no execution, no document, and the plan approved.
    let (executions, documents) = (
        count(&gw, "execution_audit").await,
        count(&gw, "documents").await,
    );
    let execution = gw.execute(&approved).await;
    assert_error(&execution, "storage_unavailable", 503);
    let record = gw.record(&dana.token, approved_id).await;
    assert_eq!(record.body["status"], "approved", "{}", record.body);
    assert_eq!(count(&gw, "execution_audit").await, executions);
    let mut uploaded = 0;
    let refused = loop {
        let reply = gw
            .invoke_as(&gw.agent, "documents.document.upload", upload(uploaded))
            .await;
        if reply.status != StatusCode::OK {
            break reply;
        }
        uploaded += 1;
        assert!(uploaded < 1000, "the disk never filled");
    };
    assert_error(&refused, "storage_unavailable", 503);
    assert_eq!(
        count(&gw, "documents").await,
        documents + i64::from(uploaded)
    );
    sound(&gw).await;

    // Space returns: the same decision, the plan's execution and an upload go through.
    std::fs::remove_file(&filler).unwrap();
    let plan = &pending[decided];
    let reply = dana
        .send(&gw, refused_plan, &dana.sign(&dana.statement(&gw, plan)))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let execution = gw.execute(&approved).await;
    assert_eq!(execution.status, StatusCode::OK, "{}", execution.body);
    let reply = gw
        .invoke_as(&gw.agent, "documents.document.upload", upload(uploaded))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    sound(&gw).await;
}
