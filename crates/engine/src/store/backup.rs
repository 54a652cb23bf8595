//! A SQLite store copied while it serves, and a copy restored into an empty place
//! (docs/operations.md, "Backups"). A PostgreSQL store is backed up with `pg_dump`.
//!
//! The copy is SQLite's `VACUUM INTO` on a read-only connection: one read transaction, so one
//! consistent state however many writes go on beside it (under WAL a reader never blocks the
//! writer), written as a compact file. It is the online backup API's result without its FFI:
//! the API's advantage, copying in steps that release the source's lock, is moot when reading
//! takes no lock a writer waits for.

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use sqlx::{AnyConnection, Connection as _};

use super::{with_param, Dialect, Store};

/// What a backup or a restore holds, for the line the command prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contents {
    /// `None` for a store no gateway has served yet (only admin commands ran on it).
    pub gateway_id: Option<String>,
    pub plans: i64,
    pub decisions: i64,
    pub audit_rows: i64,
    pub standing_approvals: i64,
}

/// Copies the store at `url` into `out`, which must not exist: written beside it first and
/// renamed into place when complete, so that `out` is never a half-written copy. `out` is
/// readable by its owner only: it holds the gateway's identity key.
pub async fn backup(url: &str, out: &Path) -> anyhow::Result<Contents> {
    sqlx::any::install_default_drivers();
    let source = sqlite_path(url, "back up")?;
    anyhow::ensure!(source.exists(), "no store at {}", source.display());
    anyhow::ensure!(
        !out.exists(),
        "{} exists; a backup never overwrites",
        out.display()
    );
    let partial = partial(out);
    let _ = std::fs::remove_file(&partial);
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&partial)?;
    let copied = async {
        let mut conn = AnyConnection::connect(&with_param(url, "mode", "ro")).await?;
        sqlx::query("VACUUM INTO $1")
            .bind(
                partial
                    .to_str()
                    .ok_or_else(|| anyhow::anyhow!("a path in UTF-8"))?,
            )
            .execute(&mut conn)
            .await?;
        conn.close().await?;
        let contents = verified(&partial).await?;
        std::fs::File::open(&partial)?.sync_all()?;
        std::fs::rename(&partial, out)?;
        anyhow::Ok(contents)
    }
    .await;
    if copied.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    copied
}

/// Puts the backup `from` in place as the store at `url`, which must be empty or not exist;
/// then opens it as a store, which migrates a backup taken by an older gateway.
pub async fn restore(from: &Path, url: &str) -> anyhow::Result<Contents> {
    let target = sqlite_path(url, "restore")?;
    let contents = verified(from).await?;
    let empty = match std::fs::metadata(&target) {
        Ok(meta) => meta.len() == 0,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(e) => return Err(e.into()),
    };
    anyhow::ensure!(
        empty,
        "{} is not empty: a restore goes into a new store, never over one",
        target.display()
    );
    for suffix in ["-wal", "-shm"] {
        let mut side = target.clone().into_os_string();
        side.push(suffix);
        let _ = std::fs::remove_file(side);
    }
    let partial = partial(&target);
    let _ = std::fs::remove_file(&partial);
    let mut copy = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&partial)?;
    std::io::copy(&mut std::fs::File::open(from)?, &mut copy)?;
    copy.sync_all()?;
    std::fs::rename(&partial, &target)?;
    let store = Store::open(url).await?;
    store.close().await;
    Ok(contents)
}

/// The backup at `path`, checked whole (`PRAGMA integrity_check`) and read for its contents; a
/// file that is not a Countersign store is refused.
async fn verified(path: &Path) -> anyhow::Result<Contents> {
    sqlx::any::install_default_drivers();
    anyhow::ensure!(path.is_file(), "no backup at {}", path.display());
    read_contents(path)
        .await
        .with_context(|| format!("{} is not a whole Countersign store", path.display()))
}

async fn read_contents(path: &Path) -> anyhow::Result<Contents> {
    let url = format!("sqlite://{}?mode=ro", path.display());
    let mut conn = AnyConnection::connect(&url).await?;
    let check: String = sqlx::query_scalar("PRAGMA integrity_check")
        .fetch_one(&mut conn)
        .await?;
    anyhow::ensure!(check == "ok", "{} is damaged: {check}", path.display());
    let gateway_id: Option<String> =
        sqlx::query_scalar("SELECT value FROM meta WHERE key = 'gateway_id'")
            .fetch_optional(&mut conn)
            .await
            .map_err(|_| anyhow::anyhow!("it has no gateway's settings (meta)"))?;
    let contents = {
        let mut count = async |table: &str| -> anyhow::Result<i64> {
            Ok(sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}"))
                .fetch_one(&mut conn)
                .await?)
        };
        Contents {
            gateway_id,
            plans: count("plans").await?,
            decisions: count("decisions").await?,
            audit_rows: count("execution_audit").await? + count("preview_audit").await?,
            standing_approvals: count("standing_approvals").await?,
        }
    };
    conn.close().await?;
    Ok(contents)
}

/// The file of a SQLite store's URL; other stores are refused, naming their tool.
fn sqlite_path(url: &str, verb: &str) -> anyhow::Result<PathBuf> {
    if Dialect::of_url(url)? == Dialect::Postgres {
        anyhow::bail!(
            "{verb} a PostgreSQL store with pg_dump and pg_restore (docs/operations.md, \"Backups\")"
        );
    }
    let path = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .unwrap_or(url);
    let path = path.split('?').next().unwrap_or(path);
    anyhow::ensure!(
        !path.is_empty() && !path.contains(":memory:"),
        "an in-memory store has nothing to {verb}"
    );
    Ok(PathBuf::from(path))
}

/// Where a copy is written before it is complete.
fn partial(path: &Path) -> PathBuf {
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    PathBuf::from(partial)
}
