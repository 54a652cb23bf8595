//! SQLite's write-ahead log copied back into the database by a connection of its own, shortly
//! after commits, so that no write waits for it. Left to SQLite, the commit that takes the log
//! past its threshold copies it and syncs both files before it returns: with a 1 MB file's plan
//! (3 MB, a thousand pages) that was every preview, some 30 ms of `fsync` on a plain disk.

use std::time::Duration;

use sqlx::{AnyConnection, Connection as _, Executor as _};
use tokio::sync::watch;

/// The writer's own threshold, in pages: reached only when the checkpointer falls behind (a
/// reader holding an old snapshot for long), where SQLite's checkpoint on commit takes over.
pub const BACKSTOP_PAGES: u32 = 16_384;

/// How long after a commit the log is copied: the commits of a burst are copied together.
const AFTER: Duration = Duration::from_millis(100);

/// Checkpoints the database at `url` (on a connection set up by `pragmas`) after commits, until
/// the store (the sender of `commits`) is dropped. A checkpoint that fails (a full disk) is
/// tried again after the next commit.
pub async fn spawn(
    url: &str,
    pragmas: &str,
    mut commits: watch::Receiver<u64>,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let mut conn = AnyConnection::connect(url).await?;
    conn.execute(pragmas).await?;
    Ok(tokio::spawn(async move {
        while commits.changed().await.is_ok() {
            tokio::time::sleep(AFTER).await;
            // PASSIVE: it copies what no reader still needs and waits for nobody.
            if let Err(e) = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").await {
                tracing::warn!(error = %e, "the SQLite checkpoint failed; trying again later");
            }
        }
    }))
}
