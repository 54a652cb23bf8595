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
            match sets[..index]
                .iter()
                .find(|(_, earlier)| Arc::ptr_eq(earlier, set))
            {
                Some((owner, _)) => {
                    summaries.shared.insert(effect_id.clone(), owner.clone());
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
