//! What changed between a plan and the plan that superseded it: effects added, removed and
//! changed (values, subjects in and out), the cost delta and the revisions that moved.

use std::collections::{BTreeMap, BTreeSet};

use countersign_proto::plan::{Change, Effect, Preview};
use rust_decimal::Decimal;
use serde::Serialize;
use serde_json::Value;
use ts_rs::TS;

use crate::review::diff::{value_diff_within, Budget, ValueChange};

/// Time all the diffs of one comparison may take together.
const CHANGED_DIFF_BUDGET: std::time::Duration = std::time::Duration::from_millis(500);

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
    /// The request's values that differ from the old plan's: none, when the gateway asked again
    /// with the same parameters, as a refresh does.
    pub request: Vec<ValueChange>,
}

impl WhatChanged {
    pub fn is_empty(&self) -> bool {
        self.effects_added.is_empty()
            && self.effects_removed.is_empty()
            && self.effects_changed.is_empty()
            && self.cost_delta == "0"
            && self.request.is_empty()
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
pub struct RevisionMove {
    pub resource: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// Full subject sets per (old effect id, new effect id): (before, after).
pub type SubjectSets = BTreeMap<(String, String), (Vec<String>, Vec<String>)>;

/// Effects are matched by consequence (type and resource, and which of several alike), since
/// effect ids are per plan.
type Key = (String, String, usize);

fn keyed(effects: &[Effect]) -> BTreeMap<Key, &Effect> {
    let mut seen: BTreeMap<(String, String), usize> = BTreeMap::new();
    effects
        .iter()
        .map(|e| {
            let n = seen
                .entry((e.effect_type.clone(), e.resource.clone()))
                .or_default();
            *n += 1;
            ((e.effect_type.clone(), e.resource.clone(), *n), e)
        })
        .collect()
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
    let olds = keyed(&old.effects);
    keyed(&new.effects)
        .into_iter()
        .filter_map(|(key, n)| {
            let o = olds.get(&key)?;
            let digest = |e: &Effect| e.subjects.as_ref().map(|s| s.digest.clone());
            (digest(o) != digest(n)).then(|| (o.id.clone(), n.id.clone()))
        })
        .collect()
}

/// How an effect's own properties moved: kind, cause, reversibility, reach and cost.
fn property_changes(o: &Effect, n: &Effect, budget: &Budget) -> Vec<ValueChange> {
    fn json<T: serde::Serialize>(value: &T) -> Value {
        serde_json::to_value(value).unwrap_or_default()
    }
    let pairs = [
        ("#kind", json(&o.kind), json(&n.kind)),
        ("#cause", json(&o.cause), json(&n.cause)),
        ("#reversible", json(&o.reversible), json(&n.reversible)),
        ("#external", json(&o.external), json(&n.external)),
        ("#cost", json(&o.cost), json(&n.cost)),
    ];
    pairs
        .into_iter()
        .filter(|(_, a, b)| a != b)
        .map(|(path, a, b)| ValueChange {
            path: path.to_owned(),
            diff: value_diff_within(&a, &b, budget),
        })
        .collect()
}

/// What changed from `old` to `new`. `subjects` maps (old effect id, new effect id) to both full
/// subject sets, for the pairs [`subject_sets_to_fetch`] named.
pub fn what_changed(old: &Preview, new: &Preview, subjects: &SubjectSets) -> WhatChanged {
    let budget = Budget::new(CHANGED_DIFF_BUDGET);
    let olds = keyed(&old.effects);
    let news = keyed(&new.effects);
    let mut changed = Vec::new();
    for (key, n) in &news {
        let Some(o) = olds.get(key) else { continue };
        let mut values = property_changes(o, n, &budget);
        let before: BTreeMap<_, _> = o.changes.iter().map(|c| (&c.path, c)).collect();
        let after: BTreeMap<_, _> = n.changes.iter().map(|c| (&c.path, c)).collect();
        let paths: BTreeSet<&String> = before.keys().chain(after.keys()).copied().collect();
        for path in paths {
            let (b, a) = (before.get(path), after.get(path));
            let side = |c: Option<&&Change>, f: fn(&Change) -> &Value| {
                c.map(|c| f(c).clone()).unwrap_or_default()
            };
            let (old_after, new_after) = (side(b, |c| &c.after), side(a, |c| &c.after));
            if old_after != new_after {
                values.push(ValueChange {
                    path: path.clone(),
                    diff: value_diff_within(&old_after, &new_after, &budget),
                });
            }
            let (old_before, new_before) = (side(b, |c| &c.before), side(a, |c| &c.before));
            if old_before != new_before {
                values.push(ValueChange {
                    path: format!("{path} (before)"),
                    diff: value_diff_within(&old_before, &new_before, &budget),
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
        if values.is_empty()
            && added.is_empty()
            && removed.is_empty()
            && totals.0 == totals.1
            && o.description == n.description
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
    let delta = new
        .estimated_cost
        .amount_max
        .value()
        .checked_sub(old.estimated_cost.amount_max.value());
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
        effects_added: news
            .iter()
            .filter(|(k, _)| !olds.contains_key(*k))
            .map(|(_, e)| reference(e))
            .collect(),
        effects_removed: olds
            .iter()
            .filter(|(k, _)| !news.contains_key(*k))
            .map(|(_, e)| reference(e))
            .collect(),
        effects_changed: changed,
        cost_delta: match delta {
            None => "out of range".to_owned(),
            Some(d) if d > Decimal::ZERO => format!("+{d}"),
            Some(d) => d.normalize().to_string(),
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
        request: crate::review::request::request_changes(old, new, &budget),
    }
}
