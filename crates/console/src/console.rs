//! One approver at one gateway: the queue, plan views, and signed decisions.

use chrono::{SubsecRound, Utc};
use countersign_proto::approvals::DecisionResponse;
use countersign_proto::decision::{new_nonce, Decision, Statement, STATEMENT_TYPE};
use countersign_proto::digest::plan_digest;

use std::collections::BTreeMap;

use countersign_proto::digest::SubjectsHasher;
use serde::Serialize;
use ts_rs::TS;

use crate::changed::{subject_sets_to_fetch, what_changed, WhatChanged};
use crate::client::GatewayClient;
use crate::error::ConsoleError;
use crate::journal::{Delivery, Flushed, Journal};
use crate::review::{self, PlanView, QueueView};
use crate::signer::Signer;
use crate::sync::Poller;

pub struct Console {
    client: GatewayClient,
    signer: Signer,
    poller: Poller,
    journal: Option<Journal>,
}

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

impl Console {
    /// The console for the gateway at `url`, using this machine's credential for `gateway_id`.
    pub fn open(url: &str, gateway_id: &str) -> Result<Console, ConsoleError> {
        let signer = Signer::load(gateway_id)?.ok_or(ConsoleError::NotEnrolled)?;
        Console::with_signer(url, signer)
    }

    pub fn with_signer(url: &str, signer: Signer) -> Result<Console, ConsoleError> {
        let client = GatewayClient::new(url, None)?.with_token(signer.token());
        Ok(Console {
            client,
            signer,
            poller: Poller::default(),
            journal: None,
        })
    }

    /// Sends decisions through `journal`: written before sending, resent until answered.
    pub fn with_journal(mut self, journal: Journal) -> Console {
        self.journal = Some(journal);
        self
    }

    pub fn journal(&self) -> Option<&Journal> {
        self.journal.as_ref()
    }

    /// Sends the decisions still waiting in the outbox once more.
    pub async fn flush(&self) -> Result<Flushed, ConsoleError> {
        match &self.journal {
            Some(journal) => journal.flush(&self.client, self.signer.gateway_id()).await,
            None => Ok(Flushed::default()),
        }
    }

    /// Asks for a fresh preview of `plan_id` and says what changed since the plan it supersedes.
    pub async fn refresh(
        &mut self,
        plan_id: &str,
    ) -> Result<(PlanView, WhatChanged), ConsoleError> {
        let old = self.client.plan(plan_id).await?;
        let new = self.client.refresh(plan_id).await?;
        let (old_plan, new_plan) = (&old.record.plan, &new.record.plan);
        let mut subjects = BTreeMap::new();
        // The new plan exists now, whatever happens next: a failed subject fetch only leaves
        // that effect's ids out of the comparison (its totals still show).
        for (old_effect, new_effect) in subject_sets_to_fetch(old_plan, new_plan) {
            let was = self
                .client
                .all_subjects(&old_plan.plan_id, &old_effect)
                .await;
            let is = self
                .client
                .all_subjects(&new_plan.plan_id, &new_effect)
                .await;
            match (was, is) {
                (Ok(was), Ok(is)) => {
                    subjects.insert((old_effect, new_effect), (was, is));
                }
                (Err(e), _) | (_, Err(e)) => {
                    tracing::warn!(error = %e, effect = %new_effect, "subjects left out of what changed");
                }
            }
        }
        let changed = what_changed(old_plan, new_plan, &subjects);
        self.poller.invalidate();
        let view = review::plan_view(&new, None, Some(self.signer.approver_id()), Utc::now());
        Ok((view, changed))
    }

    /// Pages through every subject of an effect and checks the set against its digest.
    pub async fn verify_subjects(
        &self,
        plan_id: &str,
        effect_id: &str,
    ) -> Result<SubjectCheck, ConsoleError> {
        let fetched = self.client.plan(plan_id).await?;
        let effect = fetched
            .record
            .plan
            .effects
            .iter()
            .find(|e| e.id == effect_id)
            .ok_or_else(|| {
                ConsoleError::Invalid(format!("plan {plan_id} has no effect {effect_id}"))
            })?;
        let subjects = effect.subjects.as_ref().ok_or_else(|| {
            ConsoleError::Invalid(format!("effect {effect_id} names no subjects"))
        })?;
        let ids = self.client.all_subjects(plan_id, effect_id).await?;
        let ascending = ids.windows(2).all(|w| w[0] < w[1]);
        let mut hasher = SubjectsHasher::default();
        for id in &ids {
            hasher.push(id);
        }
        let computed = hasher.finish();
        Ok(SubjectCheck {
            plan_id: plan_id.to_owned(),
            effect_id: effect_id.to_owned(),
            total: subjects.total,
            received: ids.len() as u64,
            matches: ascending && computed == subjects.digest && ids.len() as u64 == subjects.total,
            expected_digest: subjects.digest.clone(),
            computed_digest: computed,
            ascending,
        })
    }

    /// Replaces the signing key (see [`Signer::rotate`]), once the outbox is empty: a queued
    /// envelope signed with the old key could no longer be delivered.
    pub async fn rotate_key(&mut self) -> Result<(), ConsoleError> {
        if self.signer.rotation_pending() {
            return self.signer.rotate(&self.client).await;
        }
        if let Some(journal) = &self.journal {
            if !journal.pending(self.signer.gateway_id()).await?.is_empty() {
                return Err(ConsoleError::Invalid(
                    "decisions are still queued for this gateway: send them first".to_owned(),
                ));
            }
        }
        self.signer.rotate(&self.client).await
    }

    /// Enrolls with the gateway at `url` with an invite issued for `display_name`, and opens a
    /// console on it.
    pub async fn enroll(
        url: &str,
        code: &str,
        display_name: &str,
    ) -> Result<Console, ConsoleError> {
        let client = GatewayClient::new(url, None)?;
        let signer = Signer::enroll(&client, code, Some(display_name)).await?;
        Console::with_signer(url, signer)
    }

    pub fn signer(&self) -> &Signer {
        &self.signer
    }

    pub fn client(&self) -> &GatewayClient {
        &self.client
    }

    pub fn poller(&self) -> &Poller {
        &self.poller
    }

    /// Polls the queue; `Ok(true)` when it changed.
    pub async fn sync(&mut self) -> Result<bool, ConsoleError> {
        self.poller.poll(&self.client).await
    }

    /// The queue as last synced.
    pub fn queue(&self) -> QueueView {
        review::queue(self.poller.list().map_or(&[], |l| &l.items))
    }

    fn title(&self, plan_id: &str) -> Option<&str> {
        self.poller
            .list()?
            .items
            .iter()
            .find(|s| s.plan_id == plan_id)
            .map(|s| s.title.as_str())
    }

    /// Fetches the plan and reviews it.
    pub async fn plan_view(&self, plan_id: &str) -> Result<PlanView, ConsoleError> {
        let fetched = self.client.plan(plan_id).await?;
        Ok(review::plan_view(
            &fetched,
            self.title(plan_id),
            Some(self.signer.approver_id()),
            Utc::now(),
        ))
    }

    /// Re-fetches the plan, recomputes its digest, insists it is the digest the approver was shown
    /// (`seen_digest`, from [`PlanView::digest`]), refuses what may not be approved, and sends a
    /// signed approval of exactly that digest.
    pub async fn approve(
        &mut self,
        plan_id: &str,
        seen_digest: &str,
        reason: Option<String>,
    ) -> Result<DecisionResponse, ConsoleError> {
        self.decide(plan_id, seen_digest, Decision::Approve, reason)
            .await
    }

    pub async fn reject(
        &mut self,
        plan_id: &str,
        seen_digest: &str,
        reason: String,
    ) -> Result<DecisionResponse, ConsoleError> {
        if reason.trim().is_empty() {
            return Err(ConsoleError::Invalid(
                "a rejection needs a reason".to_owned(),
            ));
        }
        self.decide(plan_id, seen_digest, Decision::Reject, Some(reason))
            .await
    }

    async fn decide(
        &mut self,
        plan_id: &str,
        seen_digest: &str,
        decision: Decision,
        reason: Option<String>,
    ) -> Result<DecisionResponse, ConsoleError> {
        let fetched = self.client.plan(plan_id).await?;
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
        let now = Utc::now();
        if decision == Decision::Approve {
            if let Some(why) =
                review::refusal(&fetched.record, true, Some(self.signer.approver_id()), now)
            {
                return Err(ConsoleError::NotApprovable(why));
            }
        }
        let issued_at = now.trunc_subsecs(0);
        let statement = Statement {
            kind: STATEMENT_TYPE.to_owned(),
            plan_id: plan_id.to_owned(),
            plan_digest: computed,
            decision,
            reason: reason.filter(|r| !r.trim().is_empty()),
            approver_id: self.signer.approver_id().to_owned(),
            key_id: self.signer.key_id().to_owned(),
            audience: self.signer.gateway_id().to_owned(),
            nonce: new_nonce(),
            issued_at,
            // As long as the plan: a decision waiting in the outbox stays good while the plan is.
            expires_at: plan.expires_at,
        };
        self.poller.invalidate();
        let Some(journal) = &self.journal else {
            let envelope = self.signer.sign(&statement)?;
            return self.client.decide(plan_id, &envelope).await;
        };
        // A decision for this plan already waiting goes out again as it is; a second envelope
        // would be refused even if the first one counted.
        let waiting = journal
            .pending(self.signer.gateway_id())
            .await?
            .into_iter()
            .find(|e| e.plan_id == plan_id);
        if let Some(entry) = waiting {
            return match journal.deliver(&self.client, entry.id).await? {
                Delivery::Answered(answer) => Ok(answer),
                Delivery::Refused(e) => Err(e),
                Delivery::Queued(e) => Err(ConsoleError::Queued(e.to_string())),
            };
        }
        let envelope = self.signer.sign(&statement)?;
        let id = journal
            .record(
                self.signer.gateway_id(),
                plan_id,
                decision,
                &envelope,
                &self.signer.public_key(),
            )
            .await?;
        match journal.deliver(&self.client, id).await? {
            Delivery::Answered(answer) => Ok(answer),
            Delivery::Refused(e) => Err(e),
            Delivery::Queued(e) => Err(ConsoleError::Queued(e.to_string())),
        }
    }
}
