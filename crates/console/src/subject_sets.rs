//! The full subject sets of effects as the console paged and checked them, and the cache that
//! keeps them, bounded by total rows: what `subjects` pages from and a sample is checked against.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use countersign_proto::digest::SubjectsHasher;
use serde::Serialize;
use ts_rs::TS;

use crate::sample::SampleCheck;

/// Rows the cache holds at most, over all sets: one set of the protocol's largest size fits.
pub const MAX_CACHED_ROWS: usize = 1_000_000;
/// Plans whose effect list is kept for paging.
const CACHED_PLANS: usize = 16;

/// The full-set check of one effect's subjects against `subjects.digest`.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct SubjectCheck {
    pub plan_id: String,
    pub effect_id: String,
    #[ts(type = "number")]
    pub total: u64,
    #[ts(type = "number")]
    pub received: u64,
    pub expected_digest: String,
    pub computed_digest: String,
    pub ascending: bool,
    pub matches: bool,
}

impl SubjectCheck {
    /// Checks `ids`, in the order received, against the effect's claimed total and digest.
    pub fn of<'a>(
        plan_id: &str,
        effect_id: &str,
        total: u64,
        expected_digest: &str,
        ids: impl ExactSizeIterator<Item = &'a str> + Clone,
    ) -> SubjectCheck {
        let received = ids.len() as u64;
        let mut previous: Option<&str> = None;
        let mut ascending = true;
        let mut hasher = SubjectsHasher::default();
        for id in ids {
            if previous.is_some_and(|p| p >= id) {
                ascending = false;
            }
            previous = Some(id);
            hasher.push(id);
        }
        let computed = hasher.finish();
        SubjectCheck {
            plan_id: plan_id.to_owned(),
            effect_id: effect_id.to_owned(),
            total,
            received,
            matches: ascending && computed == expected_digest && received == total,
            expected_digest: expected_digest.to_owned(),
            computed_digest: computed,
            ascending,
        }
    }
}

/// One effect's full subject set as received, ids ascending when the check says so.
#[derive(Debug)]
pub(crate) struct SubjectSet {
    pub ids: Vec<String>,
    pub labels: Vec<String>,
    /// Per subject, its detail in words; empty when no subject has one.
    pub details: Vec<Option<String>>,
    pub check: SubjectCheck,
}

impl SubjectSet {
    /// What an unchecked `sample` of this effect is, against this full set as paged.
    pub(crate) fn sample_check(&self, sample: &[String]) -> SampleCheck {
        if !self.check.matches {
            return SampleCheck::Unchecked;
        }
        if sample.iter().all(|id| self.contains(id)) {
            SampleCheck::Checked
        } else {
            SampleCheck::Mismatch
        }
    }

    pub(crate) fn contains(&self, id: &str) -> bool {
        if self.check.ascending {
            self.ids
                .binary_search_by(|probe| probe.as_str().cmp(id))
                .is_ok()
        } else {
            self.ids.iter().any(|i| i == id)
        }
    }
}

/// What paging needs of a plan's effects.
#[derive(Debug, Clone)]
pub(crate) struct EffectInfo {
    pub id: String,
    pub description: String,
    pub for_subject: String,
    pub subjects: Option<(u64, String)>,
}

pub(crate) type Key = (String, String);

/// Sets in the order they were kept, and their rows in total.
type Sets = (VecDeque<(Key, Arc<SubjectSet>)>, usize);

#[derive(Default)]
pub(crate) struct SubjectCache {
    sets: Mutex<Sets>,
    plans: Mutex<VecDeque<(String, Arc<Vec<EffectInfo>>)>>,
}

impl SubjectCache {
    /// The full set of `effect_id` in `plan_id`, if it was paged and kept.
    pub(crate) fn checked(&self, plan_id: &str, effect_id: &str) -> Option<Arc<SubjectSet>> {
        self.set(&(plan_id.to_owned(), effect_id.to_owned()))
    }

    pub(crate) fn set(&self, key: &Key) -> Option<Arc<SubjectSet>> {
        let sets = self.sets.lock().unwrap_or_else(|p| p.into_inner());
        sets.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, s)| s.clone())
    }

    /// Keeps `set`, forgetting the oldest sets until the rows fit; a set larger than the whole
    /// cache is answered from but not kept.
    pub(crate) fn keep(&self, key: Key, set: Arc<SubjectSet>) {
        let rows = set.ids.len();
        if rows > MAX_CACHED_ROWS {
            return;
        }
        let mut sets = self.sets.lock().unwrap_or_else(|p| p.into_inner());
        let (entries, total) = &mut *sets;
        if entries.iter().any(|(k, _)| *k == key) {
            return;
        }
        while *total + rows > MAX_CACHED_ROWS {
            match entries.pop_front() {
                Some((_, old)) => *total -= old.ids.len(),
                None => break,
            }
        }
        *total += rows;
        entries.push_back((key, set));
    }

    /// Rows held now, over all sets.
    #[cfg(test)]
    fn rows(&self) -> usize {
        self.sets.lock().unwrap_or_else(|p| p.into_inner()).1
    }

    pub(crate) fn plan(&self, plan_id: &str) -> Option<Arc<Vec<EffectInfo>>> {
        let plans = self.plans.lock().unwrap_or_else(|p| p.into_inner());
        plans
            .iter()
            .find(|(id, _)| id == plan_id)
            .map(|(_, e)| e.clone())
    }

    pub(crate) fn keep_plan(&self, plan_id: &str, effects: Arc<Vec<EffectInfo>>) {
        let mut plans = self.plans.lock().unwrap_or_else(|p| p.into_inner());
        if plans.len() >= CACHED_PLANS {
            plans.pop_front();
        }
        plans.push_back((plan_id.to_owned(), effects));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(rows: usize) -> Arc<SubjectSet> {
        let ids: Vec<String> = (0..rows).map(|i| format!("usr_{i:07}")).collect();
        let check = SubjectCheck::of("p", "e", rows as u64, "", ids.iter().map(String::as_str));
        Arc::new(SubjectSet {
            labels: vec![String::new(); rows],
            details: Vec::new(),
            ids,
            check,
        })
    }

    #[test]
    fn the_subject_cache_is_bounded_by_total_rows() {
        let cache = SubjectCache::default();
        let key = |n: u32| ("plan".to_owned(), format!("eff_{n}"));
        cache.keep(key(1), set(600_000));
        cache.keep(key(2), set(300_000));
        assert_eq!(cache.rows(), 900_000);
        cache.keep(key(3), set(200_000));
        assert!(cache.rows() <= MAX_CACHED_ROWS);
        assert!(cache.set(&key(1)).is_none(), "the oldest set made room");
        assert!(cache.set(&key(3)).is_some());
        cache.keep(key(4), set(MAX_CACHED_ROWS + 1));
        assert!(cache.set(&key(4)).is_none(), "too large to keep");
        assert!(cache.rows() <= MAX_CACHED_ROWS);
    }
}
