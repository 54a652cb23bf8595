//! The full subject sets of effects as the console paged and checked them, and the cache that
//! keeps them, bounded by total rows: what `subjects` pages from and a sample is checked against.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use countersign_proto::digest::SubjectsHasher;
use serde::Serialize;
use ts_rs::TS;

use crate::review::sample::SampleCheck;

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

/// Strings of one kind laid end to end in one allocation. A set of 100,000 subjects kept as a
/// `String` per id, label and detail held a heap block each, about 140 bytes a subject in all
/// (issue 28: the window's process grew by 29 MB with the bulk plan open); here it is the
/// text and a word a string.
#[derive(Debug, Default)]
pub(crate) struct Column {
    text: String,
    ends: Vec<usize>,
}

impl Column {
    pub(crate) fn push(&mut self, value: &str) {
        self.text.push_str(value);
        self.ends.push(self.text.len());
    }

    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    pub(crate) fn get(&self, index: usize) -> &str {
        let start = index.checked_sub(1).map_or(0, |before| self.ends[before]);
        &self.text[start..self.ends[index]]
    }

    pub(crate) fn iter(&self) -> impl ExactSizeIterator<Item = &str> + Clone {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Gives back what growing page by page reserved beyond the set's size.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.text.shrink_to_fit();
        self.ends.shrink_to_fit();
    }
}

/// One effect's full subject set as received, ids ascending when the check says so.
#[derive(Debug)]
pub(crate) struct SubjectSet {
    pub ids: Column,
    pub labels: Column,
    /// Per subject, its detail in words ("" for none); empty when no subject has one.
    pub details: Column,
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
            let (mut low, mut high) = (0, self.ids.len());
            while low < high {
                let middle = low + (high - low) / 2;
                match self.ids.get(middle).cmp(id) {
                    std::cmp::Ordering::Less => low = middle + 1,
                    std::cmp::Ordering::Greater => high = middle,
                    std::cmp::Ordering::Equal => return true,
                }
            }
            false
        } else {
            self.ids.iter().any(|i| i == id)
        }
    }

    pub(crate) fn detail(&self, index: usize) -> Option<&str> {
        (index < self.details.len())
            .then(|| self.details.get(index))
            .filter(|d| !d.is_empty())
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
        let mut ids = Column::default();
        let mut labels = Column::default();
        for i in 0..rows {
            ids.push(&format!("usr_{i:07}"));
            labels.push("");
        }
        let check = SubjectCheck::of("p", "e", rows as u64, "", ids.iter());
        Arc::new(SubjectSet {
            labels,
            details: Column::default(),
            ids,
            check,
        })
    }

    #[test]
    fn a_column_gives_back_each_string_as_pushed() {
        let mut column = Column::default();
        for value in ["usr_1", "", "Zoë Ångström", "usr_22"] {
            column.push(value);
        }
        assert_eq!(column.len(), 4);
        assert_eq!(
            column.iter().collect::<Vec<_>>(),
            ["usr_1", "", "Zoë Ångström", "usr_22"]
        );
        assert_eq!(column.get(2), "Zoë Ångström");
    }

    #[test]
    fn a_set_finds_its_ids_in_order_or_not() {
        let sorted = set(1_000);
        assert!(sorted.contains("usr_0000000") && sorted.contains("usr_0000999"));
        assert!(!sorted.contains("usr_0001000") && !sorted.contains("usr_00005"));
        let mut ids = Column::default();
        for id in ["usr_b", "usr_a"] {
            ids.push(id);
        }
        let check = SubjectCheck::of("p", "e", 2, "", ids.iter());
        assert!(!check.ascending);
        let unsorted = SubjectSet {
            labels: Column::default(),
            details: Column::default(),
            ids,
            check,
        };
        assert!(unsorted.contains("usr_a") && !unsorted.contains("usr_c"));
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
