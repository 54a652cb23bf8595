//! Commit notices between gateway instances on one PostgreSQL database: every write transaction
//! sends a NOTIFY on commit, and each instance's listener wakes its event streams, which then read
//! what changed from the store. A notice carries nothing but its sender's name.

use std::time::Duration;

use sqlx::postgres::PgListener;
use tokio::sync::watch;

pub const CHANNEL: &str = "countersign_commits";

/// Listens on its own connection until the store is dropped.
pub async fn listen(
    url: &str,
    instance: String,
    commits: watch::Sender<u64>,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let mut listener = PgListener::connect(url).await?;
    listener.listen(CHANNEL).await?;
    Ok(tokio::spawn(async move {
        loop {
            match listener.try_recv().await {
                Ok(Some(notice)) if notice.payload() == instance => {}
                Ok(Some(_)) => commits.send_modify(|n| *n += 1),
                // The connection was lost and is made again on the next call; what was committed
                // meanwhile is read by the streams this wakes.
                Ok(None) => commits.send_modify(|n| *n += 1),
                Err(e) => {
                    tracing::warn!(error = %e, "the commit listener lost PostgreSQL; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }))
}
