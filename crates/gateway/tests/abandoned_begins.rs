//! A request dropped while its transaction begins (its client went away) leaves no transaction
//! open behind it, whether the begin was dropped before BEGIN ran, while it ran, or after its
//! answer came back: the write lock is free for another instance or process at once, and every
//! read connection reads the present.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Waker};
use std::time::Duration;

use countersign_engine::Store;

use crate::common::on_disk;

/// Long enough for any write here; a begin left open would hold the lock for good.
const LOCK_FREE_WITHIN: Duration = Duration::from_secs(10);

/// Polls `future` `polls` times, a few milliseconds apart (so that the connection's worker or
/// the server answers in between), then drops it, finished or not.
async fn poll_then_drop<F: Future>(future: F, polls: usize) {
    let mut future = pin!(future);
    let mut context = Context::from_waker(Waker::noop());
    for _ in 0..polls {
        if future.as_mut().poll(&mut context).is_ready() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_dropped_as_it_begins_leaves_the_write_lock_free() {
    let database = on_disk(false).await;
    let store = Store::open(&database).await.unwrap();
    let other = Store::open(&database).await.unwrap();
    for polls in 1..=8 {
        for _ in 0..3 {
            poll_then_drop(store.write(), polls).await;
            let taken = tokio::time::timeout(LOCK_FREE_WITHIN, other.write())
                .await
                .unwrap_or_else(|_| {
                    panic!("a write dropped after {polls} polls still holds the write lock")
                })
                .unwrap();
            taken.commit().await.unwrap();
        }
    }
    // The store that dropped them writes again.
    store.write().await.unwrap().commit().await.unwrap();
}

/// What each of the store's read connections reads for the probe, all of them held at once.
async fn probe_on_every_reader(store: &Store) -> Vec<Option<String>> {
    let mut readers = futures_util::future::try_join_all((0..8).map(|_| store.pool().acquire()))
        .await
        .unwrap();
    let mut seen = Vec::new();
    for reader in &mut readers {
        seen.push(
            sqlx::query_scalar("SELECT value FROM meta WHERE key = 'probe'")
                .fetch_optional(&mut **reader)
                .await
                .unwrap(),
        );
    }
    seen
}

async fn set_probe(store: &Store, value: &str) {
    let mut w = store.write().await.unwrap();
    sqlx::query("DELETE FROM meta WHERE key = 'probe'")
        .execute(&mut *w.tx)
        .await
        .unwrap();
    sqlx::query("INSERT INTO meta (key, value) VALUES ('probe', $1)")
        .bind(value)
        .execute(&mut *w.tx)
        .await
        .unwrap();
    w.commit().await.unwrap();
}

/// A snapshot dropped as it began left, on PostgreSQL, its reader connection inside a
/// repeatable-read transaction: the reads that connection served next, outside any transaction of
/// their own (the queue's `304` check is one), all read the state of the first of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_dropped_as_it_begins_leaves_no_reader_in_the_past() {
    let database = on_disk(false).await;
    let store = Store::open(&database).await.unwrap();
    // Every reader open first, so that a snapshot's first poll already sends its BEGIN.
    probe_on_every_reader(&store).await;
    for polls in 1..=4 {
        for round in 0..3 {
            set_probe(&store, &format!("before {polls}.{round}")).await;
            poll_then_drop(store.snapshot(), polls).await;
            // The dropped begin's connection back in its pool, to be one of the readers below.
            tokio::time::sleep(Duration::from_millis(50)).await;
            probe_on_every_reader(&store).await;
            let value = format!("after {polls}.{round}");
            set_probe(&store, &value).await;
            for seen in probe_on_every_reader(&store).await {
                assert_eq!(
                    seen.as_deref(),
                    Some(value.as_str()),
                    "a reader still reads from before a snapshot dropped after {polls} polls"
                );
            }
        }
    }
}
