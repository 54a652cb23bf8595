//! What a plan signs about each effect's subjects (total, sample, digest) and the counts its
//! record keeps, worked out once per distinct set. For a large plan this runs before the writer is
//! taken: sorting, hashing and counting 100,000 ids is the costly part of storing a preview, and
//! under the writer every decision would wait for it.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use countersign_pack::{Planned, Subject};
use countersign_proto::digest::subjects_digest;
use countersign_proto::plan::{Subjects, SUBJECT_SAMPLE_LIMIT};

/// An effect's id and its full subject set, as a plan stores them.
pub type SubjectSet = (String, Arc<Vec<Subject>>);

/// The subject sets of `planned`'s effects, by effect id: what its plan stores as subject rows.
pub fn sets_of(planned: &Planned) -> Vec<SubjectSet> {
    planned
        .effects
        .iter()
        .filter(|e| !e.subjects.is_empty())
        .map(|e| (e.effect.id.clone(), e.subjects.clone()))
        .collect()
}

/// The summaries of a plan's subject sets; effects that share one set share its summary, and its
/// rows: they are stored once, under the first effect that names the set.
#[derive(Default)]
pub struct SubjectSummaries {
    sets: Vec<(Arc<Vec<Subject>>, Subjects)>,
    /// The subject rows the plan stores: one per subject of each set.
    pub rows: u64,
    /// The effects whose set an earlier effect names too, each with the effect its rows are
    /// stored under (a bulk removal's notification names exactly the people it removes).
    pub shared: BTreeMap<String, String>,
    /// How many different subjects the sets name together.
    pub distinct: u64,
}

impl SubjectSummaries {
    pub fn of(sets: &[SubjectSet]) -> SubjectSummaries {
        let mut summaries = SubjectSummaries::default();
        for (index, (effect_id, set)) in sets.iter().enumerate() {
            match owner(sets, index) {
                Some(owner) => {
                    summaries.shared.insert(effect_id.clone(), owner.to_owned());
                }
                None => summaries.rows += set.len() as u64,
            }
            if !set.is_empty() && summaries.find(set).is_none() {
                summaries.sets.push((set.clone(), summarize(set)));
            }
        }
        summaries.distinct = match summaries.sets.as_slice() {
            [] => 0,
            [(_, only)] => only.total,
            many => {
                let mut ids = HashSet::new();
                for (set, _) in many {
                    ids.extend(set.iter().map(|s| s.id.as_str()));
                }
                ids.len() as u64
            }
        };
        summaries
    }

    /// The signed summary of `effect_id`'s subjects `set`: from here if `set` is one of these
    /// sets, worked out now otherwise.
    pub fn of_effect(&self, effect_id: &str, set: &Arc<Vec<Subject>>) -> Subjects {
        let mut subjects = self.find(set).cloned().unwrap_or_else(|| summarize(set));
        subjects.cursor = (subjects.total > subjects.sample.len() as u64)
            .then(|| {
                subjects
                    .sample
                    .last()
                    .map(|last| cursor_after(effect_id, last))
            })
            .flatten();
        subjects
    }

    /// The sets whose rows the plan stores: each set once, under the first effect naming it.
    pub fn stored<'a>(&'a self, sets: &'a [SubjectSet]) -> impl Iterator<Item = &'a SubjectSet> {
        sets.iter()
            .filter(|(effect_id, _)| !self.shared.contains_key(effect_id))
    }

    fn find(&self, set: &Arc<Vec<Subject>>) -> Option<&Subjects> {
        self.sets
            .iter()
            .find(|(known, _)| Arc::ptr_eq(known, set))
            .map(|(_, subjects)| subjects)
    }
}

/// The subject rows `sets` store: each set once, however many effects name it.
pub fn rows_stored(sets: &[SubjectSet]) -> u64 {
    (0..sets.len())
        .filter(|&index| owner(sets, index).is_none())
        .map(|index| sets[index].1.len() as u64)
        .sum()
}

/// The earlier effect whose set `sets[index]` names too, if one does: its rows are that effect's.
fn owner(sets: &[SubjectSet], index: usize) -> Option<&str> {
    sets[..index]
        .iter()
        .find(|(_, earlier)| Arc::ptr_eq(earlier, &sets[index].1))
        .map(|(effect_id, _)| effect_id.as_str())
}

/// A set's total, sample and digest; its cursor depends on the effect that names it.
fn summarize(subjects: &[Subject]) -> Subjects {
    let mut ids: Vec<&str> = subjects.iter().map(|s| s.id.as_str()).collect();
    if !ids.is_sorted() {
        ids.sort_unstable();
    }
    Subjects {
        total: ids.len() as u64,
        cursor: None,
        sample: ids
            .iter()
            .take(SUBJECT_SAMPLE_LIMIT)
            .map(|s| (*s).to_owned())
            .collect(),
        digest: subjects_digest(ids),
    }
}

/// Where the subjects endpoint continues after `last_id`.
pub fn cursor_after(effect_id: &str, last_id: &str) -> String {
    format!("c_{effect_id}_{}", hex::encode(last_id))
}

/// The last id a cursor of `effect_id` stands after, if the cursor is one of ours.
pub fn cursor_position(effect_id: &str, cursor: &str) -> Option<String> {
    let encoded = cursor
        .strip_prefix("c_")?
        .strip_prefix(effect_id)?
        .strip_prefix('_')?;
    String::from_utf8(hex::decode(encoded).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ids: &[&str]) -> Arc<Vec<Subject>> {
        Arc::new(
            ids.iter()
                .map(|id| Subject::new((*id).to_owned(), (*id).to_owned()))
                .collect(),
        )
    }

    /// A set two effects name is stored once, under the first; an equal set of its own is not
    /// the same set (its labels or details may differ) and is stored again.
    #[test]
    fn a_set_named_twice_is_stored_once_under_its_first_effect() {
        let removed = set(&["usr_a", "usr_b", "usr_c"]);
        let sets: Vec<SubjectSet> = vec![
            ("eff_1".to_owned(), removed.clone()),
            ("eff_2".to_owned(), set(&["usr_b"])),
            ("eff_3".to_owned(), set(&["usr_a", "usr_b", "usr_c"])),
            ("eff_4".to_owned(), removed),
        ];
        let summaries = SubjectSummaries::of(&sets);
        assert_eq!(rows_stored(&sets), 7);
        assert_eq!(summaries.rows, 7);
        assert_eq!(
            summaries.shared,
            BTreeMap::from([("eff_4".to_owned(), "eff_1".to_owned())])
        );
        let stored: Vec<&str> = summaries.stored(&sets).map(|(id, _)| id.as_str()).collect();
        assert_eq!(stored, ["eff_1", "eff_2", "eff_3"]);
    }
}
