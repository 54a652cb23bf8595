//! Which plans of a batch share subjects, and how many subjects they name together, worked out by
//! merging their subject sets as they are paged in: every set arrives ids ascending, so one pass
//! over all of them at once finds each shared id, holding one page per set and never a copy of
//! every id of every plan.

use std::collections::{BTreeMap, VecDeque};
use std::future::Future;

use countersign_proto::digest::SubjectsHasher;
use countersign_proto::guard::SubjectPage;

use crate::error::ConsoleError;

/// Subject ids an overlap names as its sample.
pub const OVERLAP_SAMPLE: usize = 5;

/// One effect's subject set to merge: whose it is, how many it holds, its digest.
pub struct SetRef {
    /// The plan's index in the batch.
    pub plan: usize,
    pub plan_id: String,
    pub effect_id: String,
    pub total: u64,
    pub digest: String,
}

/// Where the pages of a set come from: the gateway, or a test.
pub trait Pages {
    fn page(
        &self,
        plan_id: &str,
        effect_id: &str,
        cursor: Option<&str>,
    ) -> impl Future<Output = Result<SubjectPage, ConsoleError>> + Send;
}

/// What the merge found.
#[derive(Debug, Default, PartialEq)]
pub struct Merged {
    /// Distinct subjects over all plans.
    pub distinct: u64,
    /// Distinct subjects per plan, by index.
    pub per_plan: Vec<u64>,
    /// Per pair of plans (by index, the lower first) that share subjects: how many, and the first
    /// few.
    pub shared: BTreeMap<(usize, usize), (u64, Vec<String>)>,
    /// The most ids held at once while merging: one page per set at the most.
    pub most_held: usize,
}

/// One set being read: its current page, where the next one starts, its hash so far.
struct Stream<'a> {
    set: &'a SetRef,
    page: VecDeque<String>,
    cursor: Option<String>,
    started: bool,
    hasher: SubjectsHasher,
    seen: u64,
    last: Option<String>,
}

impl<'a> Stream<'a> {
    fn new(set: &'a SetRef) -> Stream<'a> {
        Stream {
            set,
            page: VecDeque::new(),
            cursor: None,
            started: false,
            hasher: SubjectsHasher::default(),
            seen: 0,
            last: None,
        }
    }

    /// Fills the page when it ran out and the set has more; checks order, count and, at the
    /// end, the digest.
    async fn fill(&mut self, pages: &impl Pages) -> Result<(), ConsoleError> {
        if !self.page.is_empty() || (self.started && self.cursor.is_none()) {
            return Ok(());
        }
        let set = self.set;
        let page = pages
            .page(&set.plan_id, &set.effect_id, self.cursor.as_deref())
            .await?;
        self.started = true;
        if page.items.is_empty() && page.next_cursor.is_some() {
            return Err(ConsoleError::Protocol(
                "an empty subject page that claims more".to_owned(),
            ));
        }
        for item in page.items {
            if self.last.as_ref().is_some_and(|last| *last >= item.id) {
                return Err(ConsoleError::Protocol(format!(
                    "the subjects of {} {} do not come in ascending order",
                    set.plan_id, set.effect_id
                )));
            }
            self.hasher.push(&item.id);
            self.seen += 1;
            self.last = Some(item.id.clone());
            self.page.push_back(item.id);
        }
        if self.seen > set.total {
            return Err(ConsoleError::Protocol(format!(
                "the subject pages of {} {} run past their total of {}",
                set.plan_id, set.effect_id, set.total
            )));
        }
        self.cursor = page.next_cursor;
        if self.cursor.is_none() {
            let digest = std::mem::take(&mut self.hasher).finish();
            if self.seen != set.total || digest != set.digest {
                return Err(ConsoleError::Protocol(format!(
                    "the subjects of {} {} are not the set its digest names",
                    set.plan_id, set.effect_id
                )));
            }
        }
        Ok(())
    }
}

/// Merges the sets of `plans` plans, each checked against its digest on the way.
pub async fn merge(
    pages: &impl Pages,
    plans: usize,
    sets: &[SetRef],
) -> Result<Merged, ConsoleError> {
    let mut streams: Vec<Stream> = sets.iter().map(Stream::new).collect();
    let mut merged = Merged {
        per_plan: vec![0; plans],
        ..Merged::default()
    };
    loop {
        for stream in &mut streams {
            stream.fill(pages).await?;
        }
        merged.most_held = merged
            .most_held
            .max(streams.iter().map(|s| s.page.len()).sum());
        let Some(least) = streams.iter().filter_map(|s| s.page.front()).min().cloned() else {
            return Ok(merged);
        };
        let mut holders: Vec<usize> = Vec::new();
        for stream in &mut streams {
            if stream.page.front() == Some(&least) {
                stream.page.pop_front();
                if !holders.contains(&stream.set.plan) {
                    holders.push(stream.set.plan);
                }
            }
        }
        holders.sort_unstable();
        merged.distinct += 1;
        for &plan in &holders {
            merged.per_plan[plan] += 1;
        }
        for (i, &a) in holders.iter().enumerate() {
            for &b in &holders[i + 1..] {
                let (count, sample) = merged.shared.entry((a, b)).or_default();
                *count += 1;
                if sample.len() < OVERLAP_SAMPLE {
                    sample.push(least.clone());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use countersign_proto::digest::subjects_digest;
    use countersign_proto::guard::SubjectItem;
    use serde_json::Value;

    use super::*;

    /// Sets held in memory, served in pages of `size`.
    struct Fake {
        sets: BTreeMap<(String, String), Vec<String>>,
        size: usize,
    }

    impl Pages for Fake {
        async fn page(
            &self,
            plan_id: &str,
            effect_id: &str,
            cursor: Option<&str>,
        ) -> Result<SubjectPage, ConsoleError> {
            let ids = &self.sets[&(plan_id.to_owned(), effect_id.to_owned())];
            let from: usize = cursor.map_or(0, |c| c.parse().unwrap());
            let to = (from + self.size).min(ids.len());
            Ok(SubjectPage {
                items: ids[from..to]
                    .iter()
                    .map(|id| SubjectItem {
                        id: id.clone(),
                        label: String::new(),
                        detail: Value::Null,
                    })
                    .collect(),
                next_cursor: (to < ids.len()).then(|| to.to_string()),
                total: ids.len() as u64,
            })
        }
    }

    fn ids(range: std::ops::Range<u32>) -> Vec<String> {
        let mut ids: Vec<String> = range.map(|n| format!("usr_{n:06}")).collect();
        ids.sort();
        ids
    }

    fn set(fake: &mut Fake, plan: usize, effect: &str, members: Vec<String>) -> SetRef {
        let set = SetRef {
            plan,
            plan_id: format!("plan_{plan}"),
            effect_id: effect.to_owned(),
            total: members.len() as u64,
            digest: subjects_digest(&members),
        };
        fake.sets
            .insert((set.plan_id.clone(), effect.to_owned()), members);
        set
    }

    #[tokio::test]
    async fn shared_subjects_are_counted_pair_by_pair_holding_one_page_per_set() {
        let mut fake = Fake {
            sets: BTreeMap::new(),
            size: 1000,
        };
        let sets = vec![
            set(&mut fake, 0, "eff_1", ids(0..100_000)),
            // The same plan's second effect over part of the same people counts them once.
            set(&mut fake, 0, "eff_2", ids(0..10)),
            set(&mut fake, 1, "eff_1", ids(99_990..100_100)),
            set(&mut fake, 2, "eff_1", ids(200_000..200_050)),
        ];
        let merged = merge(&fake, 3, &sets).await.unwrap();
        assert_eq!(merged.per_plan, vec![100_000, 110, 50]);
        assert_eq!(merged.distinct, 100_000 + 100 + 50);
        assert_eq!(merged.shared.len(), 1);
        let (count, sample) = &merged.shared[&(0, 1)];
        assert_eq!(*count, 10);
        assert_eq!(sample, &ids(99_990..99_995));
        assert!(
            merged.most_held <= sets.len() * fake.size,
            "{} ids held at once",
            merged.most_held
        );
    }

    #[tokio::test]
    async fn a_set_out_of_order_or_not_its_digest_is_refused() {
        let mut fake = Fake {
            sets: BTreeMap::new(),
            size: 2,
        };
        let mut bad = set(&mut fake, 0, "eff_1", ids(0..5));
        bad.digest = subjects_digest(ids(0..4));
        assert!(merge(&fake, 1, &[bad]).await.is_err());
        let mut reversed = ids(0..5);
        reversed.reverse();
        let disorder = set(&mut fake, 1, "eff_1", reversed);
        assert!(merge(&fake, 2, &[disorder]).await.is_err());
    }
}
