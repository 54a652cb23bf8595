//! A request dropped while its transaction begins (its client went away) leaves no transaction
//! open behind it: the write lock is free for another instance or process at once, whether the
//! begin was dropped before BEGIN ran, while it ran, or after its answer came back.

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
