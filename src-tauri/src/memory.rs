//! Gives the memory a burst of work freed back to the system once the app goes quiet. Allocators
//! keep what a 10,000-plan listing, the queue sent to the window or a 100,000-subject set freed,
//! for allocations that an app left open for hours never makes: 9 MB idle and 7 MB more with the
//! bulk plan open under glibc (issue 28), 20 MB of the bulk plan's in mimalloc's arena.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

/// How long the app must have done no work before it gives memory back: a burst of changes
/// releases once, after it.
pub const QUIET: Duration = Duration::from_secs(1);

/// Told of work done; releases memory once the work stops.
#[derive(Clone)]
pub struct Release {
    worked: Arc<Notify>,
}

impl Release {
    /// The handle, and the task to spawn that calls `release` [`QUIET`] after the last work.
    pub fn new(
        release: impl Fn() + Send + 'static,
    ) -> (Release, impl Future<Output = ()> + Send + 'static) {
        let worked = Arc::new(Notify::new());
        let task = {
            let worked = worked.clone();
            async move {
                loop {
                    worked.notified().await;
                    while tokio::time::timeout(QUIET, worked.notified()).await.is_ok() {}
                    release();
                }
            }
        };
        (Release { worked }, task)
    }

    /// Work that allocated and freed much was just done.
    pub fn after_work(&self) {
        self.worked.notify_one();
    }

    /// Runs `work`, which allocates and frees much, and says so once it is done: a command that
    /// takes longer than [`QUIET`] is not trimmed half-way and then left untrimmed.
    pub async fn after<T>(&self, work: impl Future<Output = T>) -> T {
        let done = work.await;
        self.after_work();
        done
    }
}

/// Has mimalloc, the Rust heap since the policy engine's memory ceiling made it the global
/// allocator (regorus `allocator-memory-limits`), decommit a span as soon as it is freed rather
/// than 10 ms later, at the next allocation of the thread that owns it, which in an app gone quiet
/// never comes: 16 to 25 MiB of a 100,000-subject fetch stayed resident that way. A page retired
/// as the last of its size, or freed from another thread, still waits for its owner; `trim_heap`
/// takes what its own thread holds.
///
/// # Safety
/// mimalloc writes its options without synchronisation: call this first thing in `main`, before
/// any other thread exists.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub unsafe fn purge_freed_pages_at_once() {
    // SAFETY: one integer option, set while this is the only thread (the caller's promise).
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, 0) }
}

/// Elsewhere mimalloc keeps its own purge delay.
///
/// # Safety
/// As on Linux: call it first thing in `main`.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub unsafe fn purge_freed_pages_at_once() {}

/// Returns the free pages of both heaps to the system: mimalloc's (what the calling thread's heap
/// still holds) and glibc's, which GTK and WebKit's side of the app allocate from.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn trim_heap() {
    // SAFETY: both take no pointer and only walk the allocator's own structures, under its locks.
    unsafe {
        mi_collect(true);
        libc::malloc_trim(0);
    }
}

/// Elsewhere the allocators purge on their own schedule; nothing is trimmed here.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn trim_heap() {}

/// `mi_option_purge_delay` in the `mi_option_t` of mimalloc 2.2 (include/mimalloc.h).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

// The C library is linked through regorus-mimalloc-sys, which binds only what an allocator needs.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
extern "C" {
    fn mi_collect(force: bool);
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test(start_paused = true)]
    async fn a_burst_of_work_releases_once_after_it_ends() {
        let released = Arc::new(AtomicUsize::new(0));
        let (release, task) = Release::new({
            let released = released.clone();
            move || {
                released.fetch_add(1, Ordering::SeqCst);
            }
        });
        tokio::spawn(task);
        for _ in 0..5 {
            release.after_work();
            tokio::time::sleep(QUIET / 2).await;
        }
        assert_eq!(released.load(Ordering::SeqCst), 0, "still working");
        tokio::time::sleep(QUIET).await;
        assert_eq!(released.load(Ordering::SeqCst), 1);
        tokio::time::sleep(QUIET * 10).await;
        assert_eq!(
            released.load(Ordering::SeqCst),
            1,
            "nothing to give back when idle"
        );
        let answer = release
            .after(async {
                tokio::time::sleep(QUIET * 3).await;
                "a long command"
            })
            .await;
        assert_eq!(answer, "a long command");
        assert_eq!(released.load(Ordering::SeqCst), 1, "not while it ran");
        tokio::time::sleep(QUIET * 2).await;
        assert_eq!(released.load(Ordering::SeqCst), 2, "once after it");
    }
}
