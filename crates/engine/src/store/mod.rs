//! The store: SQLite (one process, the default) or PostgreSQL (several gateway instances on one
//! database), behind one interface over sqlx's `Any` driver, so every query is written once.

pub mod backup;
mod checkpoint;
mod migrations;
mod notify;
pub mod recent;

use std::borrow::Cow;
use std::time::Duration;

use sqlx::any::AnyPoolOptions;
use sqlx::{Any, AnyPool, Connection as _, Executor, Transaction};
use tokio::sync::watch;

pub use countersign_pack::{Dialect, Flag};

use crate::ids;

pub type Tx = Transaction<'static, Any>;

/// Every write holds the database's one write lock, from BEGIN to COMMIT, whichever instance it
/// runs in: SQLite's by `BEGIN IMMEDIATE`, PostgreSQL's as this transaction-scoped advisory lock.
/// So every check-then-write (decisions, invoke, wallet charges, idempotency keys) sees the state
/// it commits against, and event revisions commit in the order they were taken.
const WRITE_LOCK: i64 = 0x0063_6f75_6e74_6572; // "counter"

/// Reads run beside writes: on SQLite, read-only connections over WAL; on PostgreSQL, a pool of
/// their own, so that writers waiting for the lock never starve the event streams.
pub struct Store {
    reads: AnyPool,
    writer: AnyPool,
    dialect: Dialect,
    commits: watch::Sender<u64>,
    /// This process's name in commit notices, so that it does not wake twice for its own.
    instance: String,
    /// PostgreSQL's commit listener (`notify`), SQLite's checkpointer (`checkpoint`).
    listener: Option<tokio::task::JoinHandle<()>>,
    /// One turn: writes apart wait here before they queue for the writer.
    apart: tokio::sync::Semaphore,
    /// What begins a write on PostgreSQL ([`Store::write`]).
    postgres_begin: String,
}

/// A write that takes no place in the order of the others ([`Store::write_apart`]).
pub struct Apart<'a> {
    pub tx: Tx,
    _turn: tokio::sync::SemaphorePermit<'a>,
}

impl Apart<'_> {
    pub async fn commit(self) -> Result<(), sqlx::Error> {
        self.tx.commit().await
    }
}

pub struct WriteTx<'a> {
    pub tx: Tx,
    store: &'a Store,
    /// When the write lock was taken, for how long it is held.
    began: std::time::Instant,
    /// The write in the trace: from asking for the lock to the commit (or the rollback).
    _span: tracing::Span,
}

impl WriteTx<'_> {
    pub fn instance(&self) -> &str {
        &self.store.instance
    }

    /// Commits and tells the event streams: this instance's at once, the others' through the
    /// database (the NOTIFY that [`Store::write`] queued is delivered only if, and when, the
    /// transaction commits).
    pub async fn commit(self) -> Result<(), sqlx::Error> {
        self.tx.commit().await?;
        crate::telemetry::write_held(self.began.elapsed());
        self.store.commits.send_modify(|n| *n += 1);
        Ok(())
    }
}

/// A write's BEGIN on PostgreSQL: the write lock, and the notice of its commit to the other
/// instances, sent as one query. `instance` is one of [`ids::random_id`]'s, which need no quoting.
fn postgres_begin(instance: &str) -> String {
    assert!(
        instance
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_'),
        "instance names are plain"
    );
    format!(
        "BEGIN; SELECT pg_advisory_xact_lock({WRITE_LOCK}); SELECT pg_notify('{}', '{instance}')",
        notify::CHANNEL
    )
}

/// Begins a transaction on a connection of `pool` in a task of its own, which runs to the end
/// even when the request that asked for it is dropped half-way (its client went away). sqlx's
/// begin is not safe to drop: a custom BEGIN that SQLite has run is counted only after one more
/// exchange with the connection's worker, and PostgreSQL's BEGIN only once its answer is read
/// (sqlx issue 4385). A write dropped in between left the writer connection in its pool inside a
/// transaction nobody would end, holding the write lock while the gateway sat idle: another
/// instance's writes, or an admin command's, waited for it (under `make bench`'s load, minutes).
/// Run to the end, the begin makes a [`Transaction`], whose drop rolls back as every other
/// abandoned transaction's does. Reads begin the same way: a snapshot dropped as it began left
/// a PostgreSQL reader inside a repeatable-read transaction, and every read that connection
/// served outside a transaction of its own (the queue's `304` check) saw one frozen state.
async fn begin(pool: &AnyPool, statement: Option<Cow<'static, str>>) -> Result<Tx, sqlx::Error> {
    let pool = pool.clone();
    let begun = tokio::spawn(async move {
        match statement {
            Some(statement) => pool.begin_with(statement).await,
            None => pool.begin().await,
        }
    });
    match begun.await {
        Ok(tx) => tx,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // Only a runtime shutting down cancels the task.
        Err(_) => Err(sqlx::Error::PoolClosed),
    }
}

/// Read connections: enough for the runtime's workers and a few slow readers (SSE, subject pages).
const READERS: u32 = 8;

/// PostgreSQL connections that may wait for the write lock at once, per instance.
const POSTGRES_WRITERS: u32 = 4;

/// How long a write may wait for its turn: long enough for a million-subject preview ahead of it.
const WRITE_QUEUE_TIMEOUT: Duration = Duration::from_secs(120);

impl Store {
    /// Opens (creating if needed) `url`: `sqlite:///var/lib/cs.db`, `sqlite::memory:`, or
    /// `postgres://user@host/db` (whose database must exist; its tables are made here).
    pub async fn open(url: &str) -> anyhow::Result<Store> {
        Store::connect(url).await.map_err(|e| {
            // The URL may carry a password: the message names it without.
            anyhow::anyhow!(
                "the store at {} could not be opened: {e}",
                crate::secrets::redacted_url(url)
            )
        })
    }

    async fn connect(url: &str) -> anyhow::Result<Store> {
        sqlx::any::install_default_drivers();
        let dialect = Dialect::of_url(url)?;
        let in_memory = dialect == Dialect::Sqlite && url.contains(":memory:");
        let instance = ids::random_id("inst_", 8);
        let (reads, writer) = match dialect {
            Dialect::Sqlite => open_sqlite(url, in_memory).await?,
            Dialect::Postgres => {
                open_postgres(&with_param(url, "application_name", &instance)).await?
            }
        };
        let commits = watch::Sender::new(0);
        let postgres_begin = postgres_begin(&instance);
        let listener = match dialect {
            Dialect::Sqlite if in_memory => None,
            Dialect::Sqlite => Some(
                checkpoint::spawn(
                    &with_param(url, "mode", "rw"),
                    &sqlite_pragmas(false),
                    commits.subscribe(),
                )
                .await?,
            ),
            Dialect::Postgres => Some(
                notify::listen(
                    &with_param(url, "application_name", &instance),
                    instance.clone(),
                    commits.clone(),
                )
                .await?,
            ),
        };
        Ok(Store {
            reads,
            writer,
            dialect,
            commits,
            instance,
            postgres_begin,
            listener,
            apart: tokio::sync::Semaphore::new(1),
        })
    }

    /// This process's name: in commit notices, and on PostgreSQL as its connections'
    /// `application_name`, by which other instances see it alive.
    pub fn instance(&self) -> &str {
        &self.instance
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Each pool's connections, and how many of them are idle: `(pool, open, idle)`.
    pub fn pools(&self) -> [(&'static str, u32, usize); 2] {
        [
            ("reads", self.reads.size(), self.reads.num_idle()),
            ("writer", self.writer.size(), self.writer.num_idle()),
        ]
    }

    /// Read connections (on an in-memory store, the writer's one connection).
    pub fn pool(&self) -> &AnyPool {
        &self.reads
    }

    /// A read-only transaction that sees one state throughout (SQLite's read transaction over WAL;
    /// on PostgreSQL, repeatable read), on a read connection: an evaluation reads everything it
    /// needs from one moment without holding the writer.
    pub async fn snapshot(&self) -> Result<Tx, sqlx::Error> {
        match self.dialect {
            Dialect::Sqlite => begin(&self.reads, None).await,
            Dialect::Postgres => {
                begin(
                    &self.reads,
                    Some("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY".into()),
                )
                .await
            }
        }
    }

    pub async fn write(&self) -> Result<WriteTx<'_>, sqlx::Error> {
        let asked = std::time::Instant::now();
        let span = tracing::info_span!(
            "store.write",
            db.system.name = match self.dialect {
                Dialect::Sqlite => "sqlite",
                Dialect::Postgres => "postgresql",
            }
        );
        let tx = match self.dialect {
            // IMMEDIATE: take SQLite's write lock now, so that a writer in another process makes
            // this wait at BEGIN instead of failing it half-way.
            Dialect::Sqlite => begin(&self.writer, Some("BEGIN IMMEDIATE".into())).await?,
            // One round trip: the lock, and the commit notice, which PostgreSQL holds back
            // until COMMIT and drops on a rollback.
            Dialect::Postgres => {
                begin(&self.writer, Some(self.postgres_begin.clone().into())).await?
            }
        };
        crate::telemetry::write_waited(asked.elapsed());
        Ok(WriteTx {
            tx,
            store: self,
            began: std::time::Instant::now(),
            _span: span,
        })
    }

    /// A write that needs no place among the others: rows under a key no other write touches
    /// (a large plan's subjects, staged before the plan names them). On PostgreSQL it does not
    /// take the write lock; SQLite has one lock for every write, held for as long as this
    /// transaction. One such write at a time waits for the writer, so that a decision queues
    /// behind one batch at most however many previews are staging. Its commit wakes no event
    /// stream: no reader looks at such rows yet.
    pub async fn write_apart(&self) -> Result<Apart<'_>, sqlx::Error> {
        let turn = self
            .apart
            .acquire()
            .await
            .map_err(|_| sqlx::Error::PoolClosed)?;
        let tx = match self.dialect {
            Dialect::Sqlite => begin(&self.writer, Some("BEGIN IMMEDIATE".into())).await?,
            // Not flushed at its own commit: nothing refers to these rows until a later
            // transaction does, and that one's flush covers the log written before it.
            Dialect::Postgres => {
                begin(
                    &self.writer,
                    Some("BEGIN; SET LOCAL synchronous_commit = off".into()),
                )
                .await?
            }
        };
        Ok(Apart { tx, _turn: turn })
    }

    /// Wakes after every committed write, in this instance or another on the same database; the
    /// event streams read what changed from the store.
    pub fn commits(&self) -> watch::Receiver<u64> {
        self.commits.subscribe()
    }

    /// The gateway's id, made on first use and kept: instances on one database share it.
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
        sqlx::query("INSERT INTO meta (key, value) VALUES ('gateway_id', $1)")
            .bind(&id)
            .execute(&mut *w.tx)
            .await?;
        w.commit().await?;
        Ok(id)
    }
}

impl Store {
    /// Whether the store answers within `within`, and which of the migrations this binary
    /// carries it has not applied (`/readyz`): a store another binary migrated further, or
    /// one whose migration failed half-way, is not one this gateway may serve from.
    pub async fn readiness(&self, within: Duration) -> Result<Vec<i64>, sqlx::Error> {
        let migrator = match self.dialect {
            Dialect::Sqlite => &*migrations::SQLITE,
            Dialect::Postgres => &*migrations::POSTGRES,
        };
        let applied = sqlx::query_scalar::<_, i64>(
            "SELECT version FROM _sqlx_migrations WHERE success = TRUE",
        )
        .fetch_all(&self.reads);
        let applied = tokio::time::timeout(within, applied)
            .await
            .map_err(|_| sqlx::Error::PoolTimedOut)??;
        Ok(migrator
            .iter()
            .map(|m| m.version)
            .filter(|v| !applied.contains(v))
            .collect())
    }
}

impl Store {
    /// Closes every connection now, rather than as the pools wind down.
    pub async fn close(&self) {
        if let Some(listener) = &self.listener {
            listener.abort();
        }
        self.reads.close().await;
        self.writer.close().await;
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        if let Some(listener) = &self.listener {
            listener.abort();
        }
    }
}

async fn open_sqlite(url: &str, in_memory: bool) -> anyhow::Result<(AnyPool, AnyPool)> {
    // A connection to a file does not go away: sqlx's ping before each acquire would only cost
    // a hop to the connection's worker thread.
    let writer = AnyPoolOptions::new()
        .test_before_acquire(false)
        .max_connections(1)
        .min_connections(1)
        .acquire_timeout(WRITE_QUEUE_TIMEOUT)
        .idle_timeout(None)
        .max_lifetime(None)
        .after_connect(|conn, _| {
            Box::pin(async move {
                conn.execute(sqlite_pragmas(true).as_str()).await?;
                Ok(())
            })
        })
        // A COMMIT that a full disk refused leaves sqlx counting a transaction still open on the
        // writer connection, which would then begin none again: every write would fail until a
        // restart. Such a connection is not handed out; the pool closes it (SQLite rolls back
        // what it held) and opens a fresh one. Not in memory: there the connection is the
        // database.
        .before_acquire(move |conn, _| {
            let usable = in_memory || !conn.is_in_transaction();
            if !usable {
                tracing::warn!("the writer connection was left mid-transaction; replacing it");
            }
            Box::pin(async move { Ok(usable) })
        })
        .connect(&with_param(url, "mode", "rwc"))
        .await?;
    migrations::SQLITE.run(&writer).await?;
    // An in-memory database exists per connection: its reads share the writer's.
    let reads = if in_memory {
        writer.clone()
    } else {
        AnyPoolOptions::new()
            .test_before_acquire(false)
            .max_connections(READERS)
            .idle_timeout(None)
            .max_lifetime(None)
            .after_connect(|conn, _| {
                Box::pin(async move {
                    conn.execute(sqlite_pragmas(false).as_str()).await?;
                    Ok(())
                })
            })
            .connect(&with_param(url, "mode", "ro"))
            .await?
    };
    Ok((reads, writer))
}

/// What `SqliteConnectOptions` would set, which the `Any` driver takes only from the URL.
fn sqlite_pragmas(writer: bool) -> String {
    // Another process's writer (the admin commands) makes ours wait, not fail.
    let mut pragmas = format!(
        "PRAGMA foreign_keys = ON; PRAGMA busy_timeout = {};",
        WRITE_QUEUE_TIMEOUT.as_millis()
    );
    if writer {
        pragmas.push_str(&format!(
            " PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
             PRAGMA wal_autocheckpoint = {};",
            checkpoint::BACKSTOP_PAGES
        ));
    }
    pragmas
}

/// sqlx pings a connection on every acquire by default: on PostgreSQL a round trip before each
/// request's first query, as much as the query itself for a `304`. Only a connection that sat
/// idle this long (which a server restart or a dropped link may have closed meanwhile) is pinged,
/// as HikariCP's alive-bypass window does. A connection the server closes while it is in such
/// use fails one request with `storage_unavailable`, and sqlx's ping when it is released (after
/// every use) replaces it.
pub const PING_AFTER_IDLE: Duration = Duration::from_millis(500);

fn postgres_pool() -> AnyPoolOptions {
    AnyPoolOptions::new()
        .test_before_acquire(false)
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if meta.idle_for >= PING_AFTER_IDLE {
                    conn.ping().await?;
                }
                Ok(true)
            })
        })
}

async fn open_postgres(url: &str) -> anyhow::Result<(AnyPool, AnyPool)> {
    let writer = postgres_pool()
        .max_connections(POSTGRES_WRITERS)
        // One connection stays open, so that other instances see this one alive.
        .min_connections(1)
        .idle_timeout(None)
        .acquire_timeout(WRITE_QUEUE_TIMEOUT)
        .connect(url)
        .await?;
    // The migrator holds PostgreSQL's migration lock: instances starting together take turns.
    migrations::POSTGRES.run(&writer).await?;
    let reads = postgres_pool()
        .max_connections(READERS)
        .connect(url)
        .await?;
    Ok((reads, writer))
}

/// A new database on the PostgreSQL server that `server` reaches (through any database its user
/// may connect to), for tests and benchmarks that each want a store of their own: empty, or a copy
/// of `template`. The URL of the new database.
pub async fn scratch_postgres(server: &str, template: Option<&str>) -> anyhow::Result<String> {
    use sqlx::Connection as _;
    let mut admin = sqlx::PgConnection::connect(server).await?;
    let name = ids::random_id("cs_scratch_", 8);
    let copy = template
        .map(|t| format!(" TEMPLATE \"{t}\""))
        .unwrap_or_default();
    admin
        .execute(format!("CREATE DATABASE \"{name}\"{copy}").as_str())
        .await?;
    admin.close().await?;
    database_url(server, &name)
}

/// A store for a test of the engine's own: a new database on the PostgreSQL server
/// `COUNTERSIGN_TEST_POSTGRES` names (as in `make test`'s second pass), or SQLite in memory.
#[cfg(test)]
pub(crate) async fn for_test() -> Store {
    let url = match std::env::var("COUNTERSIGN_TEST_POSTGRES") {
        Ok(server) => scratch_postgres(&server, None).await.unwrap(),
        Err(_) => "sqlite::memory:".to_owned(),
    };
    Store::open(&url).await.unwrap()
}

/// `server` naming the database `name` instead.
pub fn database_url(server: &str, name: &str) -> anyhow::Result<String> {
    let mut url = url::Url::parse(server)?;
    url.set_path(name);
    Ok(url.into())
}

/// `url` with `key=value` in its query, unless it names `key` already.
pub fn with_param(url: &str, key: &str, value: &str) -> String {
    let query = url.split_once('?').map(|(_, q)| q).unwrap_or("");
    if query.split('&').any(|p| p.split('=').next() == Some(key)) {
        url.to_owned()
    } else if url.contains('?') {
        format!("{url}&{key}={value}")
    } else {
        format!("{url}?{key}={value}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parameter_is_added_once() {
        assert_eq!(
            with_param("sqlite:///a.db", "mode", "ro"),
            "sqlite:///a.db?mode=ro"
        );
        assert_eq!(
            with_param("sqlite:///a.db?x=1", "mode", "ro"),
            "sqlite:///a.db?x=1&mode=ro"
        );
        assert_eq!(
            with_param("sqlite:///a.db?mode=rw", "mode", "ro"),
            "sqlite:///a.db?mode=rw"
        );
    }

    /// A commit of 2,000 pages, under the writer's backstop, is copied into the database by the
    /// checkpointer: the database file grows to hold it though no write checkpointed.
    #[tokio::test]
    async fn the_log_is_copied_back_after_a_commit_by_the_checkpointer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.db");
        let store = Store::open(&format!("sqlite://{}", path.display()))
            .await
            .unwrap();
        let before = std::fs::metadata(&path).unwrap().len();
        let mut w = store.write().await.unwrap();
        // The writer checkpoints only past the backstop: its commits never wait for the copy.
        let threshold: i64 = sqlx::query_scalar("PRAGMA wal_autocheckpoint")
            .fetch_one(&mut *w.tx)
            .await
            .unwrap();
        assert_eq!(threshold, i64::from(checkpoint::BACKSTOP_PAGES));
        sqlx::query("CREATE TABLE filler (text TEXT)")
            .execute(&mut *w.tx)
            .await
            .unwrap();
        sqlx::query("INSERT INTO filler (text) VALUES ($1)")
            .bind("x".repeat(8 << 20))
            .execute(&mut *w.tx)
            .await
            .unwrap();
        w.commit().await.unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while std::fs::metadata(&path).unwrap().len() < before + (8 << 20) {
            assert!(
                std::time::Instant::now() < deadline,
                "the log was never copied back"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
}
