//! The SQLite store: one pool, migrations, and one writer at a time.

use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Sqlite, SqlitePool, Transaction};
use tokio::sync::{watch, Mutex, MutexGuard};

use crate::ids;

pub type Tx = Transaction<'static, Sqlite>;

/// Reads run concurrently over WAL; writes take [`Store::write`], which serialises them in-process
/// so that every check-then-write (decisions, invoke) sees the state it commits against.
pub struct Store {
    pool: SqlitePool,
    writer: Mutex<()>,
    commits: watch::Sender<u64>,
}

pub struct WriteTx<'a> {
    pub tx: Tx,
    _guard: MutexGuard<'a, ()>,
    commits: &'a watch::Sender<u64>,
}

impl WriteTx<'_> {
    /// Commits, tells the event streams, and releases the writer in one step.
    pub async fn commit(self) -> Result<(), sqlx::Error> {
        self.tx.commit().await?;
        self.commits.send_modify(|n| *n += 1);
        Ok(())
    }
}

impl Store {
    /// Opens (creating if needed) `url`, e.g. `sqlite:///var/lib/cs.db` or `sqlite::memory:`.
    pub async fn open(url: &str) -> anyhow::Result<Store> {
        let options = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10));
        let in_memory = url.contains(":memory:");
        let pool = SqlitePoolOptions::new()
            // An in-memory database exists per connection: keep exactly one.
            .max_connections(if in_memory { 1 } else { 8 })
            .min_connections(if in_memory { 1 } else { 0 })
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options)
            .await?;
        sqlx::migrate!("./migrations").run(&pool).await?;
        Ok(Store {
            pool,
            writer: Mutex::new(()),
            commits: watch::Sender::new(0),
        })
    }

    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    pub async fn write(&self) -> Result<WriteTx<'_>, sqlx::Error> {
        let guard = self.writer.lock().await;
        // IMMEDIATE: take SQLite's write lock now, so that a writer in another process (the admin
        // commands) makes this wait at BEGIN instead of failing it half-way.
        let tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        Ok(WriteTx {
            tx,
            _guard: guard,
            commits: &self.commits,
        })
    }

    /// Wakes after every committed write; the event streams read what changed from the store.
    pub fn commits(&self) -> watch::Receiver<u64> {
        self.commits.subscribe()
    }

    /// The gateway's id, made on first use and kept.
    pub async fn gateway_id(&self) -> anyhow::Result<String> {
        let mut w = self.write().await?;
        let existing: Option<String> =
            sqlx::query_scalar("SELECT value FROM meta WHERE key = 'gateway_id'")
                .fetch_optional(&mut *w.tx)
                .await?;
        if let Some(id) = existing {
            return Ok(id);
        }
        let id = ids::random_id("gw_", 8);
        sqlx::query("INSERT INTO meta (key, value) VALUES ('gateway_id', ?)")
            .bind(&id)
            .execute(&mut *w.tx)
            .await?;
        w.commit().await?;
        Ok(id)
    }
}
