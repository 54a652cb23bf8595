//! Values read from the store and served again while nothing can have changed them: no commit in
//! this process, nor a notice of one from another instance, since they were read, and younger
//! than a bound. The bound is how long a change made by another process that sends no notice
//! (the admin commands on a SQLite store) may go unseen.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::store::Store;

pub struct Recent<K, V> {
    commits: watch::Receiver<u64>,
    max_age: Duration,
    capacity: usize,
    entries: Mutex<HashMap<K, Read<V>>>,
}

struct Read<V> {
    commit: u64,
    at: Instant,
    value: V,
}

/// When a read began: taken before the store is asked, so that a commit during the read leaves
/// its value unserved.
#[derive(Clone, Copy)]
pub struct Stamp {
    commit: u64,
    at: Instant,
}

impl<K: Eq + Hash, V: Clone> Recent<K, V> {
    /// At most `capacity` values, each served for at most `max_age`.
    pub fn new(store: &Store, max_age: Duration, capacity: usize) -> Recent<K, V> {
        Recent {
            commits: store.commits(),
            max_age,
            capacity,
            entries: Mutex::new(HashMap::new()),
        }
    }

    pub fn stamp(&self) -> Stamp {
        Stamp {
            commit: *self.commits.borrow(),
            at: Instant::now(),
        }
    }

    /// The value read for `key`, if nothing can have changed it since.
    pub fn get(&self, key: &K) -> Option<V> {
        let commit = *self.commits.borrow();
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let read = entries.get(key)?;
        (read.commit == commit && read.at.elapsed() < self.max_age).then(|| read.value.clone())
    }

    /// Keeps `value`, read for `key` from the store as it was at `stamp`.
    pub fn put(&self, key: K, stamp: Stamp, value: V) {
        let commit = *self.commits.borrow();
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= self.capacity {
            entries.retain(|_, r| r.commit == commit && r.at.elapsed() < self.max_age);
            if entries.len() >= self.capacity {
                entries.clear();
            }
        }
        entries.insert(
            key,
            Read {
                commit: stamp.commit,
                at: stamp.at,
                value,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_value_is_served_until_a_commit_or_its_age() {
        let store = Store::open("sqlite::memory:").await.unwrap();
        let recent: Recent<&str, i64> = Recent::new(&store, Duration::from_millis(200), 8);
        let stamp = recent.stamp();
        recent.put("revision", stamp, 7);
        assert_eq!(recent.get(&"revision"), Some(7));
        assert_eq!(recent.get(&"other"), None);

        let tx = store.write().await.unwrap();
        tx.commit().await.unwrap();
        assert_eq!(recent.get(&"revision"), None, "a commit since the read");

        let stamp = recent.stamp();
        recent.put("revision", stamp, 8);
        assert_eq!(recent.get(&"revision"), Some(8));
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert_eq!(recent.get(&"revision"), None, "older than its bound");
    }

    #[tokio::test]
    async fn a_read_a_commit_overtook_is_never_served() {
        let store = Store::open("sqlite::memory:").await.unwrap();
        let recent: Recent<u8, i64> = Recent::new(&store, Duration::from_secs(60), 8);
        let stamp = recent.stamp();
        let tx = store.write().await.unwrap();
        tx.commit().await.unwrap();
        recent.put(1, stamp, 7);
        assert_eq!(recent.get(&1), None);
    }

    #[tokio::test]
    async fn a_full_cache_keeps_only_what_it_may_still_serve() {
        let store = Store::open("sqlite::memory:").await.unwrap();
        let recent: Recent<u8, u8> = Recent::new(&store, Duration::from_secs(60), 2);
        for key in 0..5 {
            recent.put(key, recent.stamp(), key);
        }
        let entries = recent.entries.lock().unwrap().len();
        assert!(entries <= 2, "{entries} kept");
        assert_eq!(recent.get(&4), Some(4), "the newest is kept");
    }
}
