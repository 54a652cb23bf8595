//! The few subjects a plan lists beside an effect (`subjects.sample`) are outside the digest: the
//! plan signs only the set's total and digest. A sample is therefore shown as the plan's only
//! once it is checked against that digest — at once when it is the whole set, otherwise against
//! the full set once the console has paged and checked it (`SubjectSet::sample_check`) — and
//! until then it says so.

use countersign_proto::digest::subjects_digest;
use countersign_proto::plan::{Effect, Subjects};
use serde::Serialize;
use ts_rs::TS;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum SampleCheck {
    /// The sample is the whole set and hashes to the signed digest.
    Signed,
    /// Every id in it is in the full set, which was paged and matched the signed digest.
    Checked,
    /// Not checked yet: shown marked so, and used in no sentence.
    Unchecked,
    /// It contradicts the signed set: not shown, and the plan is not approvable.
    Mismatch,
}

impl SampleCheck {
    /// Whether the sample may be shown and named as the plan's.
    pub fn holds(self) -> bool {
        matches!(self, SampleCheck::Signed | SampleCheck::Checked)
    }
}

/// What can be said of `subjects.sample` from the plan alone.
pub fn check(subjects: &Subjects) -> SampleCheck {
    let listed = subjects.sample.len() as u64;
    if listed < subjects.total {
        return SampleCheck::Unchecked;
    }
    if listed == subjects.total && subjects_digest(&subjects.sample) == subjects.digest {
        SampleCheck::Signed
    } else {
        SampleCheck::Mismatch
    }
}

/// The one subject of `effect`, when its set is a single id the plan signs: a consequence may name
/// it ("grants admin on prj_421 to usr_92").
pub fn only_subject(effect: &Effect) -> Option<&str> {
    let subjects = effect.subjects.as_ref()?;
    match subjects.sample.as_slice() {
        [one] if subjects.total == 1 && check(subjects) == SampleCheck::Signed => Some(one),
        _ => None,
    }
}

/// The first effect whose sample contradicts its signed set, if any.
pub fn contradicted(effects: &[Effect]) -> Option<&Effect> {
    effects
        .iter()
        .find(|e| e.subjects.as_ref().map(check) == Some(SampleCheck::Mismatch))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subjects(total: u64, sample: &[&str], set: &[&str]) -> Subjects {
        serde_json::from_value(serde_json::json!({
            "total": total,
            "sample": sample,
            "digest": subjects_digest(set),
        }))
        .unwrap()
    }

    #[test]
    fn a_sample_is_the_plans_only_when_it_hashes_to_the_signed_set() {
        assert_eq!(
            check(&subjects(1, &["usr_92"], &["usr_92"])),
            SampleCheck::Signed
        );
        assert_eq!(
            check(&subjects(1, &["usr_92"], &["usr_mallory"])),
            SampleCheck::Mismatch
        );
        assert_eq!(
            check(&subjects(
                2,
                &["usr_1", "usr_2", "usr_3"],
                &["usr_1", "usr_2"]
            )),
            SampleCheck::Mismatch,
            "more listed than the set holds"
        );
        assert_eq!(
            check(&subjects(3, &["usr_1"], &["usr_1", "usr_2", "usr_3"])),
            SampleCheck::Unchecked
        );
    }
}
