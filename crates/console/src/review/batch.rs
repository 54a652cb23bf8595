//! Batch review for team leads: several plans side by side (credits, subjects, overlaps of their
//! subject sets), decided in one step that still signs each plan's own digest.

use countersign_proto::decision::Decision;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::console::Console;
use crate::error::{ConsoleError, ErrorView};
use crate::review::overlap::{self, SetRef};
use crate::review::window::MAX_BATCH;
use crate::review::{decision_view, DecisionView, PlanView};
use crate::signing::confirm::{ask, Confirm};
use crate::signing::Checked;
use crate::wire::CREDITS;

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct BatchColumn {
    pub plan_id: String,
    /// The gateway's label for the plan, not signed.
    pub label: String,
    pub capability_id: String,
    pub gist: String,
    pub agent_id: String,
    pub on_behalf_of: Option<String>,
    pub effects_direct: u32,
    pub effects_derived: u32,
    #[ts(type = "number")]
    pub subjects: u64,
    pub warnings: u32,
    pub errors: u32,
    pub credits_max: String,
    pub currency: String,
    pub approvals_received: u32,
    pub approvals_required: u32,
    pub digest: String,
    pub digest_matches: bool,
    pub risk: Vec<String>,
    pub consequence: String,
    pub approvable: bool,
    pub not_approvable_reason: Option<String>,
}

/// Plans whose subject sets share subjects.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct Overlap {
    pub plans: Vec<String>,
    #[ts(type = "number")]
    pub subjects: u64,
    pub sample: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct BatchView {
    pub plans: Vec<BatchColumn>,
    pub total_credits: String,
    #[ts(type = "number")]
    pub distinct_subjects: u64,
    pub overlaps: Vec<Overlap>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct BatchItem {
    pub plan_id: String,
    pub digest: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct BatchResult {
    pub plan_id: String,
    /// `answered`, `queued` or `refused`.
    pub outcome: String,
    pub decision: Option<DecisionView>,
    pub error: Option<ErrorView>,
}

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct BatchOutcome {
    pub results: Vec<BatchResult>,
}

fn column(view: &PlanView) -> BatchColumn {
    let count = |severity: &str| {
        view.validation
            .iter()
            .filter(|v| v.severity == severity)
            .count() as u32
    };
    BatchColumn {
        plan_id: view.plan_id.clone(),
        label: view.label.clone(),
        capability_id: view.capability_id.clone(),
        gist: view.gist.clone(),
        agent_id: view.agent_id.clone(),
        on_behalf_of: view.on_behalf_of.clone(),
        effects_direct: view.effects.iter().filter(|e| !e.derived).count() as u32,
        effects_derived: view.effects.iter().filter(|e| e.derived).count() as u32,
        subjects: 0,
        warnings: count("warning"),
        errors: count("error"),
        credits_max: view.cost.max.clone(),
        currency: view.cost.currency.clone(),
        approvals_received: view.approvals_received,
        approvals_required: view.approvals_required,
        digest: view.digest.clone(),
        digest_matches: view.digest_matches,
        risk: view.risk.clone(),
        consequence: view.consequence.clone(),
        approvable: view.approvable,
        not_approvable_reason: view.not_approvable_reason.clone(),
    }
}

fn checked_batch<T>(items: &[T]) -> Result<(), ConsoleError> {
    if items.is_empty() || items.len() > MAX_BATCH {
        return Err(ConsoleError::Invalid(format!(
            "a batch holds 1 to {MAX_BATCH} plans, not {}",
            items.len()
        )));
    }
    Ok(())
}

fn refused(plan_id: &str, e: &ConsoleError) -> BatchResult {
    BatchResult {
        plan_id: plan_id.to_owned(),
        outcome: "refused".to_owned(),
        decision: None,
        error: Some(e.view()),
    }
}

impl Console {
    /// The plans side by side: one column each, the credits of those priced in credits, the
    /// distinct subjects over all their subject sets, and which plans share subjects.
    pub async fn batch_view(&self, plan_ids: &[String]) -> Result<BatchView, ConsoleError> {
        checked_batch(plan_ids)?;
        let mut columns = Vec::new();
        let mut sets = Vec::new();
        for (index, plan_id) in plan_ids.iter().enumerate() {
            let fetched = self.client().plan(plan_id).await?;
            columns.push(column(&self.review(&fetched)));
            for effect in &fetched.record.plan.effects {
                if let Some(subjects) = &effect.subjects {
                    sets.push(SetRef {
                        plan: index,
                        plan_id: plan_id.clone(),
                        effect_id: effect.id.clone(),
                        total: subjects.total,
                        digest: subjects.digest.clone(),
                    });
                }
            }
        }
        let merged = overlap::merge(self.client(), plan_ids.len(), &sets).await?;
        for (column, subjects) in columns.iter_mut().zip(&merged.per_plan) {
            column.subjects = *subjects;
        }
        let total = columns
            .iter()
            .filter(|c| c.currency == CREDITS)
            .try_fold(Decimal::ZERO, |sum, c| {
                sum.checked_add(c.credits_max.parse::<Decimal>().unwrap_or_default())
            });
        let overlaps = merged
            .shared
            .into_iter()
            .map(|((a, b), (subjects, sample))| Overlap {
                plans: vec![plan_ids[a].clone(), plan_ids[b].clone()],
                subjects,
                sample,
            })
            .collect();
        Ok(BatchView {
            plans: columns,
            total_credits: total.map_or_else(|| "out of range".to_owned(), |t| format!("{t:.2}")),
            distinct_subjects: merged.distinct,
            overlaps,
        })
    }

    /// Decides several plans in one step: each plan fetched and checked against the digest the
    /// approver saw; for approvals one confirmation listing every plan and the digest it signs;
    /// then one envelope per plan over its own digest, each sent through the outbox.
    pub async fn decide_batch(
        &self,
        decision: Decision,
        items: &[BatchItem],
        reason: Option<String>,
        confirm: &dyn Confirm,
    ) -> Result<BatchOutcome, ConsoleError> {
        checked_batch(items)?;
        let reason = reason.filter(|r| !r.trim().is_empty());
        if decision == Decision::Reject && reason.is_none() {
            return Err(ConsoleError::Invalid(
                "a rejection needs a reason".to_owned(),
            ));
        }
        let mut results: Vec<Option<BatchResult>> = Vec::new();
        let mut checked: Vec<Checked> = Vec::new();
        for item in items {
            match self.check(&item.plan_id, &item.digest, decision).await {
                Ok(c) => {
                    checked.push(c);
                    results.push(None);
                }
                Err(e) => results.push(Some(refused(&item.plan_id, &e))),
            }
        }
        if decision == Decision::Approve && !checked.is_empty() {
            let lines: Vec<String> = checked.iter().map(Checked::line).collect();
            let consequence = checked
                .iter()
                .map(|c| (c.fetched.record.plan.plan_id.clone(), c.consequence()))
                .filter(|(_, sentence)| !sentence.is_empty())
                .map(|(id, sentence)| format!("{id}: {sentence}"))
                .collect::<Vec<_>>()
                .join("\n");
            let title = format!("Approve {} plans, each over its own digest?", checked.len());
            if !ask(confirm, &title, &consequence, &lines) {
                return Err(ConsoleError::Cancelled);
            }
        }
        let mut sent = checked.into_iter();
        let mut out = Vec::new();
        for (item, result) in items.iter().zip(results) {
            if let Some(result) = result {
                out.push(result);
                continue;
            }
            let Some(checked) = sent.next() else { break };
            out.push(match self.send(&checked, decision, reason.clone()).await {
                Ok(answer) => BatchResult {
                    plan_id: item.plan_id.clone(),
                    outcome: "answered".to_owned(),
                    decision: Some(decision_view(&answer)),
                    error: None,
                },
                Err(e @ ConsoleError::Queued(_)) => BatchResult {
                    plan_id: item.plan_id.clone(),
                    outcome: "queued".to_owned(),
                    decision: None,
                    error: Some(e.view()),
                },
                Err(e) => refused(&item.plan_id, &e),
            });
        }
        Ok(BatchOutcome { results: out })
    }
}
