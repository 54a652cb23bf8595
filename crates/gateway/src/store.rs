//! The SQLite store: a pool of read-only connections, one writer, migrations.

use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Sqlite, SqlitePool, Transaction};
use tokio::sync::watch;

use crate::ids;

pub type Tx = Transaction<'static, Sqlite>;

/// Reads run on read-only connections over WAL: they see a committed snapshot and can never take
/// the write lock, however many there are. Writes go through the one writer connection, so a
/// write waits for its turn in the pool's queue instead of failing on SQLite's lock, and every
/// check-then-write (decisions, invoke) sees the state it commits against.
pub struct Store {
    reads: SqlitePool,
    writer: SqlitePool,
    /// The database lives in the writer's connection: closing it would lose everything.
    in_memory: bool,
    commits: watch::Sender<u64>,
}

pub struct WriteTx<'a> {
    pub tx: Tx,
    commits: &'a watch::Sender<u64>,
}

impl WriteTx<'_> {
    /// Commits, tells the event streams, and hands the writer to the next in line.
    pub async fn commit(self) -> Result<(), sqlx::Error> {
        self.tx.commit().await?;
        self.commits.send_modify(|n| *n += 1);
        Ok(())
    }
}

/// Read connections: enough for the runtime's workers and a few slow readers (SSE, subject pages).
const READERS: u32 = 8;

/// How long a write may wait for its turn: long enough for a million-subject preview ahead of it.
const WRITE_QUEUE_TIMEOUT: Duration = Duration::from_secs(120);

impl Store {
    /// Opens (creating if needed) `url`, e.g. `sqlite:///var/lib/cs.db` or `sqlite::memory:`.
    pub async fn open(url: &str) -> anyhow::Result<Store> {
        let options = SqliteConnectOptions::from_str(url)?
            .foreign_keys(true)
            // Another process's writer (the admin commands) makes ours wait, not fail.
            .busy_timeout(WRITE_QUEUE_TIMEOUT);
        let in_memory = url.contains(":memory:");
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .acquire_timeout(WRITE_QUEUE_TIMEOUT)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(
                options
                    .clone()
                    .create_if_missing(true)
                    .journal_mode(SqliteJournalMode::Wal)
                    .synchronous(SqliteSynchronous::Normal),
            )
            .await?;
        sqlx::migrate!("./migrations").run(&writer).await?;
        // An in-memory database exists per connection: its reads share the writer's.
        let reads = if in_memory {
            writer.clone()
        } else {
            SqlitePoolOptions::new()
                .max_connections(READERS)
                .idle_timeout(None)
                .max_lifetime(None)
                .connect_with(options.read_only(true))
                .await?
        };
        Ok(Store {
            reads,
            writer,
            in_memory,
            commits: watch::Sender::new(0),
        })
    }

    /// Read-only connections (on an in-memory store, the writer's one connection).
    pub fn pool(&self) -> &SqlitePool {
        &self.reads
    }

    pub async fn write(&self) -> Result<WriteTx<'_>, sqlx::Error> {
        // IMMEDIATE: take SQLite's write lock now, so that a writer in another process makes this
        // wait at BEGIN instead of failing it half-way.
        let tx = match self.writer.begin_with("BEGIN IMMEDIATE").await {
            Err(sqlx::Error::InvalidSavePointStatement) if !self.in_memory => {
                // A COMMIT that a full disk refused leaves sqlx counting a transaction still open
                // on the one writer connection, which then takes none again: every write would
                // fail until a restart. That connection is closed (SQLite rolls back what it
                // held) and the pool opens a fresh one.
                tracing::warn!("the writer connection was left mid-transaction; replacing it");
                self.writer.acquire().await?.close().await?;
                self.writer.begin_with("BEGIN IMMEDIATE").await?
            }
            begun => begun?,
        };
        Ok(WriteTx {
            tx,
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
