//! Signed decisions: the plan is fetched again and its digest recomputed, a risky approval is
//! confirmed on its consequence before anything is signed or written, and each envelope goes
//! through the outbox (written first, sent until answered).

use chrono::Utc;
use countersign_proto::approvals::DecisionResponse;
use countersign_proto::decision::{Decision, Statement};
use countersign_proto::digest::plan_digest;

use crate::client::FetchedPlan;
use crate::console::Console;
use crate::error::ConsoleError;
use crate::review::words;
use crate::review::{self, console_risk, decision_view, DecisionView};
use crate::signing::confirm::{ask, short_digest, Confirm};
use crate::signing::journal::Delivery;

/// A plan fetched again, whose digest is the one the approver saw.
pub(crate) struct Checked {
    pub fetched: FetchedPlan,
    pub digest: String,
}

impl Checked {
    /// "plan_id  gist · sha256:abcd…wxyz": what one approval signs, for the confirmation.
    pub fn line(&self) -> String {
        format!(
            "{}  {} · {}",
            self.fetched.record.plan.plan_id,
            words::gist(&self.fetched.record.plan),
            short_digest(&self.digest)
        )
    }

    /// The consequence sentence, empty when the plan carries no risk flag.
    pub fn consequence(&self) -> String {
        let plan = &self.fetched.record.plan;
        words::consequence(plan, !console_risk(plan).is_empty())
    }
}

impl Console {
    /// Re-fetches the plan, recomputes its digest, insists it is the digest the approver was
    /// shown (`seen_digest`, from [`crate::review::PlanView::digest`]), refuses what may not be
    /// approved, asks `confirm` with the consequence when the plan carries any risk flag, and
    /// sends a signed approval of exactly that digest.
    pub async fn approve(
        &self,
        plan_id: &str,
        seen_digest: &str,
        reason: Option<String>,
        confirm: &dyn Confirm,
    ) -> Result<DecisionView, ConsoleError> {
        let checked = self.check(plan_id, seen_digest, Decision::Approve).await?;
        let consequence = checked.consequence();
        if !consequence.is_empty() {
            let title = format!("Approve {plan_id}?");
            if !ask(confirm, &title, &consequence, &[checked.line()]) {
                return Err(ConsoleError::Cancelled);
            }
        }
        let answer = self.send(&checked, Decision::Approve, reason).await?;
        Ok(decision_view(&answer))
    }

    /// A signed rejection; the reason is required.
    pub async fn reject(
        &self,
        plan_id: &str,
        seen_digest: &str,
        reason: String,
    ) -> Result<DecisionView, ConsoleError> {
        if reason.trim().is_empty() {
            return Err(ConsoleError::Invalid(
                "a rejection needs a reason".to_owned(),
            ));
        }
        let checked = self.check(plan_id, seen_digest, Decision::Reject).await?;
        let answer = self.send(&checked, Decision::Reject, Some(reason)).await?;
        Ok(decision_view(&answer))
    }

    /// Fetches the plan again and checks it may be decided as the approver saw it.
    pub(crate) async fn check(
        &self,
        plan_id: &str,
        seen_digest: &str,
        decision: Decision,
    ) -> Result<Checked, ConsoleError> {
        // A gateway that does not answer gets the decision later, through the outbox: signed
        // over the plan as the approver last saw it, which the digest pins.
        let fetched = match self.fetch(plan_id).await {
            Ok(fetched) => fetched,
            Err(e @ ConsoleError::Unreachable { .. }) => self.last_fetched(plan_id).ok_or(e)?,
            Err(e) => return Err(e),
        };
        let plan = &fetched.record.plan;
        let computed =
            plan_digest(&fetched.raw).map_err(|e| ConsoleError::Protocol(e.to_string()))?;
        if computed != plan.plan_digest {
            return Err(ConsoleError::DigestMismatch {
                claimed: plan.plan_digest.clone(),
                computed,
            });
        }
        if computed != seen_digest {
            return Err(ConsoleError::DigestMismatch {
                claimed: seen_digest.to_owned(),
                computed,
            });
        }
        if decision == Decision::Approve {
            let me = Some(self.signer().approver_id());
            if let Some(why) = review::refusal(&fetched.record, true, me, Utc::now()) {
                return Err(ConsoleError::NotApprovable(why));
            }
            if let Some(effect) = self.contradicted_sample(plan) {
                return Err(ConsoleError::NotApprovable(format!(
                    "The subjects the gateway lists for {effect} are not the set the plan signs."
                )));
            }
        }
        Ok(Checked {
            fetched,
            digest: computed,
        })
    }

    /// Signs `decision` over the checked plan's own digest, writes it to the outbox and sends it.
    pub(crate) async fn send(
        &self,
        checked: &Checked,
        decision: Decision,
        reason: Option<String>,
    ) -> Result<DecisionResponse, ConsoleError> {
        let plan = &checked.fetched.record.plan;
        let signer = self.signer();
        let statement = Statement::new(
            signer.signs_as(),
            (&plan.plan_id, &checked.digest),
            decision,
            reason.filter(|r| !r.trim().is_empty()),
            // As long as the plan: a decision waiting in the outbox stays good while the plan is.
            plan.expires_at,
        );
        let Some(journal) = self.journal() else {
            let envelope = signer.sign(&statement)?;
            return self.client().decide(&plan.plan_id, &envelope).await;
        };
        // A decision for this plan already waiting goes out again as it is; a second envelope
        // would be refused even if the first one counted.
        let waiting = journal
            .pending(signer.gateway_id())
            .await?
            .into_iter()
            .find(|e| e.plan_id == plan.plan_id);
        let id = match waiting {
            Some(entry) => entry.id,
            None => {
                let envelope = signer.sign(&statement)?;
                journal
                    .record(
                        signer.gateway_id(),
                        &plan.plan_id,
                        decision,
                        &envelope,
                        &signer.public_key(),
                    )
                    .await?
            }
        };
        let delivery = journal.deliver(self.client(), id).await;
        self.note_outbox().await;
        match delivery? {
            Delivery::Answered(answer) => Ok(answer),
            Delivery::Refused(e) => Err(e),
            Delivery::Queued(e) => Err(ConsoleError::Queued(e.to_string())),
        }
    }
}
