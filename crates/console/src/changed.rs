//! What changed between a plan and the plan that superseded it: effects added, removed and
//! changed (values, subjects in and out), the cost delta and the revisions that moved.

use std::collections::{BTreeMap, BTreeSet};

use countersign_proto::plan::{Effect, Preview};
use rust_decimal::Decimal;
use serde::Serialize;
use ts_rs::TS;

use crate::diff::{value_diff, ValueDiff};

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct WhatChanged {
    pub from_plan: String,
    pub to_plan: String,
    pub effects_added: Vec<EffectRef>,
    pub effects_removed: Vec<EffectRef>,
    pub effects_changed: Vec<EffectChange>,
    /// New `amount_max` minus old, signed, e.g. `+0.05`.
    pub cost_delta: String,
    pub moved: Vec<RevisionMove>,
}

impl WhatChanged {
    pub fn is_empty(&self) -> bool {
        self.effects_added.is_empty()
            && self.effects_removed.is_empty()
            && self.effects_changed.is_empty()
            && self.cost_delta == "0"
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct EffectRef {
    pub effect_type: String,
    pub resource: String,
    pub description: String,
    #[ts(type = "number | null")]
    pub subjects_total: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct EffectChange {
    pub effect_type: String,
    pub resource: String,
    pub description_before: String,
    pub description_after: String,
    pub values: Vec<ValueChange>,
    #[ts(type = "number | null")]
    pub subjects_before: Option<u64>,
    #[ts(type = "number | null")]
    pub subjects_after: Option<u64>,
    pub subjects_added: Vec<String>,
    pub subjects_removed: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct ValueChange {
    pub path: String,
    pub diff: ValueDiff,
}

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct RevisionMove {
    pub resource: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// Full subject sets per (old effect id, new effect id): (before, after).
pub type SubjectSets = BTreeMap<(String, String), (Vec<String>, Vec<String>)>;

/// Effects are matched by consequence (type and resource), since ids are per plan.
fn key(effect: &Effect) -> (String, String) {
    (effect.effect_type.clone(), effect.resource.clone())
}

fn reference(effect: &Effect) -> EffectRef {
    EffectRef {
        effect_type: effect.effect_type.clone(),
        resource: effect.resource.clone(),
        description: effect.description.clone(),
        subjects_total: effect.subjects.as_ref().map(|s| s.total),
    }
}

/// The effects of `old` and `new` whose subject sets differ (by digest): only these need their
/// full sets fetched for [`what_changed`]. Pairs of (old effect id, new effect id).
pub fn subject_sets_to_fetch(old: &Preview, new: &Preview) -> Vec<(String, String)> {
    let olds: BTreeMap<_, _> = old.effects.iter().map(|e| (key(e), e)).collect();
    new.effects
        .iter()
        .filter_map(|n| {
            let o = olds.get(&key(n))?;
            let digest = |e: &Effect| e.subjects.as_ref().map(|s| s.digest.clone());
            (digest(o) != digest(n)).then(|| (o.id.clone(), n.id.clone()))
        })
        .collect()
}

/// What changed from `old` to `new`. `subjects` maps (old effect id, new effect id) to both full
/// subject sets, for the pairs [`subject_sets_to_fetch`] named.
pub fn what_changed(old: &Preview, new: &Preview, subjects: &SubjectSets) -> WhatChanged {
    let olds: BTreeMap<_, _> = old.effects.iter().map(|e| (key(e), e)).collect();
    let news: BTreeMap<_, _> = new.effects.iter().map(|e| (key(e), e)).collect();
    let mut changed = Vec::new();
    for n in &new.effects {
        let Some(o) = olds.get(&key(n)) else { continue };
        let mut values = Vec::new();
        let before: BTreeMap<_, _> = o.changes.iter().map(|c| (&c.path, c)).collect();
        let after: BTreeMap<_, _> = n.changes.iter().map(|c| (&c.path, c)).collect();
        let paths: BTreeSet<&String> = before.keys().chain(after.keys()).copied().collect();
        for path in paths {
            let (b, a) = (before.get(path), after.get(path));
            if b.map(|c| (&c.before, &c.after)) != a.map(|c| (&c.before, &c.after)) {
                let old_after = b.map(|c| c.after.clone()).unwrap_or_default();
                let new_after = a.map(|c| c.after.clone()).unwrap_or_default();
                values.push(ValueChange {
                    path: path.clone(),
                    diff: value_diff(&old_after, &new_after),
                });
            }
        }
        let (added, removed) = match subjects.get(&(o.id.clone(), n.id.clone())) {
            Some((was, is)) => {
                let was: BTreeSet<&String> = was.iter().collect();
                let is: BTreeSet<&String> = is.iter().collect();
                (
                    is.difference(&was).map(|s| (*s).clone()).collect(),
                    was.difference(&is).map(|s| (*s).clone()).collect(),
                )
            }
            None => (vec![], vec![]),
        };
        let totals = (
            o.subjects.as_ref().map(|s| s.total),
            n.subjects.as_ref().map(|s| s.total),
        );
        let cost_differs = o.cost != n.cost;
        if values.is_empty()
            && added.is_empty()
            && removed.is_empty()
            && totals.0 == totals.1
            && o.description == n.description
            && !cost_differs
        {
            continue;
        }
        changed.push(EffectChange {
            effect_type: n.effect_type.clone(),
            resource: n.resource.clone(),
            description_before: o.description.clone(),
            description_after: n.description.clone(),
            values,
            subjects_before: totals.0,
            subjects_after: totals.1,
            subjects_added: added,
            subjects_removed: removed,
        });
    }
    let delta: Decimal =
        new.estimated_cost.amount_max.value() - old.estimated_cost.amount_max.value();
    let old_reads: BTreeMap<_, _> = old
        .read_revisions
        .iter()
        .map(|r| (&r.resource, &r.revision))
        .collect();
    let new_reads: BTreeMap<_, _> = new
        .read_revisions
        .iter()
        .map(|r| (&r.resource, &r.revision))
        .collect();
    let resources: BTreeSet<&String> = old_reads.keys().chain(new_reads.keys()).copied().collect();
    WhatChanged {
        from_plan: old.plan_id.clone(),
        to_plan: new.plan_id.clone(),
        effects_added: new
            .effects
            .iter()
            .filter(|e| !olds.contains_key(&key(e)))
            .map(reference)
            .collect(),
        effects_removed: old
            .effects
            .iter()
            .filter(|e| !news.contains_key(&key(e)))
            .map(reference)
            .collect(),
        effects_changed: changed,
        cost_delta: if delta > Decimal::ZERO {
            format!("+{delta}")
        } else {
            delta.normalize().to_string()
        },
        moved: resources
            .into_iter()
            .filter(|r| old_reads.get(r) != new_reads.get(r))
            .map(|r| RevisionMove {
                resource: r.clone(),
                before: old_reads.get(r).map(|v| (*v).clone()),
                after: new_reads.get(r).map(|v| (*v).clone()),
            })
            .collect(),
    }
}
