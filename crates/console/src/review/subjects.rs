//! All subjects of a bulk effect: the whole set paged from the gateway once, checked against the
//! plan's `subjects.digest`, kept in the console's cache (`subject_sets`), and answered in
//! filtered windows with what else happens to each subject.

use std::sync::Arc;

use serde::Serialize;
use ts_rs::TS;

use crate::client::FetchedPlan;
use crate::console::Console;
use crate::error::ConsoleError;
use crate::review::subject_sets::{Column, EffectInfo, SubjectCheck, SubjectSet};
use crate::review::words;

/// Rows one page may ask for.
pub const MAX_PAGE: u64 = 500;

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct SubjectRow {
    pub id: String,
    pub label: Option<String>,
    /// What the effect does to this subject in particular, in words: `expires 2026-12-30 →
    /// 2026-12-14`.
    pub detail: Option<String>,
    /// What else happens to this subject: the plan's other effects whose subject set holds it.
    pub also: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct SubjectsPage {
    pub plan_id: String,
    pub effect_id: String,
    pub effect_description: String,
    /// Subjects in the effect.
    #[ts(type = "number")]
    pub total: u64,
    /// Rows matching the query.
    #[ts(type = "number")]
    pub matched: u64,
    #[ts(type = "number")]
    pub offset: u64,
    pub rows: Vec<SubjectRow>,
    pub check: SubjectCheck,
}

fn effects_of(fetched: &FetchedPlan) -> Vec<EffectInfo> {
    fetched
        .record
        .plan
        .effects
        .iter()
        .map(|e| EffectInfo {
            id: e.id.clone(),
            description: e.description.clone(),
            for_subject: words::for_subject(e),
            subjects: e.subjects.as_ref().map(|s| (s.total, s.digest.clone())),
        })
        .collect()
}

fn matches(query: &str, id: &str, label: &str) -> bool {
    query.is_empty() || id.to_lowercase().contains(query) || label.to_lowercase().contains(query)
}

impl Console {
    /// The full subject set of `effect_id` in a fetched plan, checked, from the cache when it is
    /// there.
    pub(crate) async fn subject_set(
        &self,
        fetched: &FetchedPlan,
        effect_id: &str,
    ) -> Result<Arc<SubjectSet>, ConsoleError> {
        let plan_id = &fetched.record.plan.plan_id;
        let effect = effects_of(fetched)
            .into_iter()
            .find(|e| e.id == effect_id)
            .ok_or_else(|| {
                ConsoleError::Invalid(format!("plan {plan_id} has no effect {effect_id}"))
            })?;
        self.set_of(plan_id, &effect).await
    }

    async fn set_of(
        &self,
        plan_id: &str,
        effect: &EffectInfo,
    ) -> Result<Arc<SubjectSet>, ConsoleError> {
        let key = (plan_id.to_owned(), effect.id.clone());
        if let Some(set) = self.subjects.set(&key) {
            return Ok(set);
        }
        let (total, digest) = effect.subjects.clone().ok_or_else(|| {
            ConsoleError::Invalid(format!("effect {} names no subjects", effect.id))
        })?;
        let (mut ids, mut labels, mut details) =
            (Column::default(), Column::default(), Column::default());
        let mut described = false;
        self.client()
            .each_subject_page(plan_id, &effect.id, |page| {
                for item in page {
                    let detail = words::detail(&item.detail);
                    described |= detail.is_some();
                    ids.push(&item.id);
                    labels.push(&item.label);
                    details.push(detail.as_deref().unwrap_or_default());
                }
            })
            .await?;
        if !described {
            details = Column::default();
        }
        for column in [&mut ids, &mut labels, &mut details] {
            column.shrink_to_fit();
        }
        let check = SubjectCheck::of(plan_id, &effect.id, total, &digest, ids.iter());
        let set = Arc::new(SubjectSet {
            ids,
            labels,
            details,
            check,
        });
        self.subjects.keep(key, set.clone());
        Ok(set)
    }

    async fn plan_effects(&self, plan_id: &str) -> Result<Arc<Vec<EffectInfo>>, ConsoleError> {
        if let Some(effects) = self.subjects.plan(plan_id) {
            return Ok(effects);
        }
        let fetched = self.client().plan(plan_id).await?;
        let effects = Arc::new(effects_of(&fetched));
        self.subjects.keep_plan(plan_id, effects.clone());
        Ok(effects)
    }

    /// Rows `[offset, offset + limit)` of the effect's subjects whose id or label contains
    /// `query` (case-insensitive; empty = all), each with what the plan's other effects do to
    /// it, and the full set's digest check. `limit` is at most 500.
    pub async fn subjects_page(
        &self,
        plan_id: &str,
        effect_id: &str,
        query: &str,
        offset: u64,
        limit: u64,
    ) -> Result<SubjectsPage, ConsoleError> {
        if limit > MAX_PAGE {
            return Err(ConsoleError::Invalid(format!(
                "a page holds at most {MAX_PAGE} subjects, not {limit}"
            )));
        }
        crate::client::id_checked(plan_id, "plan")?;
        crate::client::id_checked(effect_id, "effect")?;
        let effects = self.plan_effects(plan_id).await?;
        let effect = effects.iter().find(|e| e.id == effect_id).ok_or_else(|| {
            ConsoleError::Invalid(format!("plan {plan_id} has no effect {effect_id}"))
        })?;
        let set = self.set_of(plan_id, effect).await?;
        let mut others = Vec::new();
        for other in effects
            .iter()
            .filter(|e| e.id != effect_id && e.subjects.is_some())
        {
            match self.set_of(plan_id, other).await {
                Ok(other_set) => others.push((other, other_set)),
                Err(e) => tracing::warn!(error = %e, effect = %other.id, "left out of `also`"),
            }
        }
        let query = query.trim().to_lowercase();
        let matching =
            (0..set.ids.len()).filter(|&i| matches(&query, set.ids.get(i), set.labels.get(i)));
        let mut matched = 0u64;
        let mut rows = Vec::new();
        for i in matching {
            if matched >= offset && (rows.len() as u64) < limit {
                let id = set.ids.get(i);
                rows.push(SubjectRow {
                    id: id.to_owned(),
                    label: Some(set.labels.get(i).to_owned()).filter(|l| !l.is_empty()),
                    detail: set.detail(i).map(str::to_owned),
                    also: others
                        .iter()
                        .filter(|(_, s)| s.contains(id))
                        .map(|(e, _)| e.for_subject.clone())
                        .collect(),
                });
            }
            matched += 1;
        }
        Ok(SubjectsPage {
            plan_id: plan_id.to_owned(),
            effect_id: effect_id.to_owned(),
            effect_description: effect.description.clone(),
            total: effect.subjects.as_ref().map_or(0, |(t, _)| *t),
            matched,
            offset,
            rows,
            check: set.check.clone(),
        })
    }
}
