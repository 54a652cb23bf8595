//! One approver at one gateway: the queue, plan views, and signed decisions. Shared as
//! `Arc<Console>` by concurrent callers: every method takes `&self`, and no lock is held across
//! network I/O that another caller needs.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use chrono::Utc;
use countersign_proto::approvals::ApproverProfile;
use countersign_proto::plan::Preview;
use tokio::sync::watch;

use crate::client::{FetchedPlan, GatewayClient};
use crate::error::ConsoleError;
use crate::live::clock::Clock;
use crate::live::reminders::Snoozes;
use crate::live::sync::{Poller, DEFAULT_POLL_INTERVAL};
use crate::live::window::{Listed, Windows};
use crate::live::Snapshot;
use crate::review::changed::{subject_sets_to_fetch, what_changed};
use crate::review::sample::{self, SampleCheck};
use crate::review::words;
use crate::review::SubjectCache;
pub use crate::review::SubjectCheck;
use crate::review::{self, PlanView, QueueView, RefreshView, RowContext, RowGist};
use crate::signing::journal::{Flushed, Journal};
use crate::signing::signer::Signer;

/// Gists remembered at most; past it, those of plans no longer listed are forgotten.
const MAX_GISTS: usize = 50_000;
/// Gists one call reads at most: a window's rows in view (and some beyond), not its queue.
pub const GISTS_AT_ONCE: usize = 100;
/// Plans read at once for their gists.
const GIST_FETCHES: usize = 4;
/// Plans kept as last fetched, for decisions while the gateway does not answer.
const RECENT_PLANS: usize = 16;

pub struct Console {
    client: GatewayClient,
    signer: Signer,
    journal: Option<Journal>,
    /// The last synced state: what `queue()` and a session's status read, without I/O.
    publish: watch::Sender<Snapshot>,
    /// Only for [`Console::sync`], the one-shot listing of the CLI.
    poller: tokio::sync::Mutex<Poller>,
    gists: Mutex<HashMap<String, String>>,
    /// Plans as last fetched: what a decision made while the gateway is away is signed over.
    recent: Mutex<std::collections::VecDeque<FetchedPlan>>,
    pub(crate) subjects: SubjectCache,
    /// The approver's poll interval in seconds: the shortest wait between listings while the
    /// event stream is down (a gateway may ask for a longer one).
    poll_every: AtomicU64,
    /// Plans this approver snoozed, and those it was reminded of.
    snoozes: Mutex<Snoozes>,
    /// What snoozes and reminders are judged by.
    clock: Clock,
    /// The queue window's rows as last sent, and the list they were cut from.
    windows: Windows,
    /// Bumped whenever a gist is remembered: a filter's words may match it now.
    gist_epoch: AtomicU64,
}

/// Queue rows see the gists and the outbox the console knows.
struct Context<'a> {
    gists: &'a HashMap<String, String>,
    snapshot: &'a Snapshot,
    snoozes: &'a Snoozes,
    now: chrono::DateTime<Utc>,
}

impl RowContext for Context<'_> {
    fn gist(&self, plan_id: &str) -> Option<String> {
        self.gists.get(plan_id).cloned()
    }
    fn queued(&self, plan_id: &str) -> bool {
        self.snapshot.queued.contains(plan_id)
    }
    fn me(&self) -> Option<&ApproverProfile> {
        self.snapshot.me.as_ref()
    }
    fn snoozed_until(&self, plan_id: &str) -> Option<chrono::DateTime<Utc>> {
        self.snoozes.until(plan_id, self.now)
    }
}

impl Console {
    /// The console for the gateway at `url`, using this machine's credential for `gateway_id`.
    pub fn open(url: &str, gateway_id: &str) -> Result<Console, ConsoleError> {
        let signer = Signer::load(gateway_id)?.ok_or(ConsoleError::NotEnrolled)?;
        Console::with_signer(url, signer)
    }

    /// The console for the gateway at `url` with `signer`'s credential, which must have been
    /// enrolled with (or moved to) that URL's origin.
    pub fn with_signer(url: &str, signer: Signer) -> Result<Console, ConsoleError> {
        let client = signer.client(url)?;
        Ok(Console {
            client,
            signer,
            journal: None,
            publish: watch::Sender::new(Snapshot::default()),
            poller: tokio::sync::Mutex::new(Poller::default()),
            gists: Mutex::new(HashMap::new()),
            recent: Mutex::new(std::collections::VecDeque::new()),
            subjects: SubjectCache::default(),
            poll_every: AtomicU64::new(DEFAULT_POLL_INTERVAL.as_secs()),
            snoozes: Mutex::new(Snoozes::default()),
            clock: Clock::real(),
            windows: Windows::default(),
            gist_epoch: AtomicU64::new(0),
        })
    }

    /// Keeps this approver's snoozes in the file at `path`, starting from those an earlier run
    /// kept there.
    pub fn with_snoozes_kept_in(self, path: std::path::PathBuf) -> Console {
        *self.snoozes() = Snoozes::kept_in(path);
        self
    }

    /// Judges snoozes and reminders by `clock`.
    pub fn with_clock(mut self, clock: Clock) -> Console {
        self.clock = clock;
        self
    }

    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Sets the approver's poll interval; the live sync uses it from its next wait on.
    pub fn set_poll_interval(&self, every: Duration) {
        self.poll_every
            .store(every.as_secs().max(1), Ordering::Relaxed);
    }

    pub fn poll_interval(&self) -> Duration {
        Duration::from_secs(self.poll_every.load(Ordering::Relaxed))
    }

    /// Sends decisions through `journal`: written before sending, resent until answered.
    pub fn with_journal(mut self, journal: Journal) -> Console {
        self.journal = Some(journal);
        self
    }

    pub fn journal(&self) -> Option<&Journal> {
        self.journal.as_ref()
    }

    pub fn signer(&self) -> &Signer {
        &self.signer
    }

    pub fn client(&self) -> &GatewayClient {
        &self.client
    }

    pub(crate) fn snoozes(&self) -> std::sync::MutexGuard<'_, Snoozes> {
        self.snoozes.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn windows(&self) -> &Windows {
        &self.windows
    }

    /// Calls `f` with the listed plans and what the console adds to their rows. The snapshot is
    /// held, then the gists and the snoozes are taken, always in that order.
    pub(crate) fn with_rows<R>(&self, f: impl FnOnce(Listed<'_>) -> R) -> R {
        let snapshot = self.publish.borrow();
        let gists = self.gists.lock().unwrap_or_else(|p| p.into_inner());
        let snoozes = self.snoozes();
        let now = self.clock.now();
        let context = Context {
            gists: &gists,
            snapshot: &snapshot,
            snoozes: &snoozes,
            now,
        };
        f(Listed {
            summaries: &snapshot.items,
            context: &context,
            queue: snapshot.generation,
            gists: self.gist_epoch.load(Ordering::Relaxed),
            asleep: snoozes.asleep(now),
            now,
        })
    }

    pub(crate) fn publisher(&self) -> &watch::Sender<Snapshot> {
        &self.publish
    }

    /// The last synced state; changes whenever the queue, the link or the outbox does.
    pub fn changes(&self) -> watch::Receiver<Snapshot> {
        self.publish.subscribe()
    }

    pub fn snapshot(&self) -> Snapshot {
        self.publish.borrow().clone()
    }

    /// Sends the decisions still waiting in the outbox once more.
    pub async fn flush(&self) -> Result<Flushed, ConsoleError> {
        let flushed = match &self.journal {
            Some(journal) => {
                journal
                    .flush(&self.client, self.signer.gateway_id())
                    .await?
            }
            None => Flushed::default(),
        };
        self.note_outbox().await;
        Ok(flushed)
    }

    /// The outbox sent again when the gateway answers: a refusal becomes the status's error.
    pub(crate) async fn send_outbox(&self) {
        let Some(journal) = &self.journal else { return };
        match journal.pending(self.signer.gateway_id()).await {
            Ok(pending) if pending.is_empty() => return,
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "the outbox could not be read"),
        }
        match self.flush().await {
            Ok(flushed) => {
                if let Some((plan_id, why)) = flushed.refused.into_iter().next() {
                    self.publish.send_modify(|s| {
                        s.last_error = Some(crate::error::ErrorView {
                            message: format!(
                                "The queued decision on {plan_id} was refused: {}",
                                why.message
                            ),
                            code: why.code,
                        })
                    });
                }
            }
            Err(e) => tracing::debug!(error = %e, "the outbox could not be sent"),
        }
    }

    /// Puts the outbox's size and plans into the snapshot.
    pub(crate) async fn note_outbox(&self) {
        let Some(journal) = &self.journal else { return };
        let pending = match journal.pending(self.signer.gateway_id()).await {
            Ok(pending) => pending,
            Err(e) => {
                tracing::warn!(error = %e, "the outbox could not be read");
                return;
            }
        };
        let queued: std::collections::BTreeSet<String> =
            pending.iter().map(|e| e.plan_id.clone()).collect();
        self.publish.send_if_modified(|s| {
            let changed = s.outbox != pending.len() as u64 || s.queued != queued;
            if changed {
                s.outbox = pending.len() as u64;
                s.queued = queued;
                s.generation += 1;
            }
            changed
        });
    }

    /// Lists the queue once into the snapshot (for a one-shot caller; a window runs
    /// `Live`); `Ok(true)` when it changed.
    pub async fn sync(&self) -> Result<bool, ConsoleError> {
        if self.publish.borrow().me.is_none() {
            self.whoami().await;
        }
        let mut poller = self.poller.lock().await;
        let changed = poller.poll(&self.client).await?;
        let list = poller.take_list();
        drop(poller);
        self.publish.send_modify(|s| {
            s.last_sync = Some(Utc::now());
            s.last_error = None;
            if let Some(list) = list.filter(|l| l.items != s.items) {
                s.items = list.items;
                s.generation += 1;
            }
        });
        Ok(changed)
    }

    /// Asks the gateway who this approver is to its approval policy, and keeps the answer for
    /// the queue's rows and plan views; a gateway without the answer leaves it unknown.
    pub async fn whoami(&self) -> Option<ApproverProfile> {
        let me = self.client.me().await.ok()?;
        self.publish.send_modify(|s| {
            if s.me.as_ref() != Some(&me) {
                s.me = Some(me.clone());
                s.generation += 1;
            }
        });
        Some(me)
    }

    /// The queue as last synced, whole (the CLI's listing; a window asks for its rows).
    pub fn queue(&self) -> QueueView {
        self.with_rows(|listed| review::queue_in(listed.summaries, listed.context))
    }

    /// The ids of the listed plans. Read before the gists are locked, never while they are:
    /// `queue()` holds the snapshot and then takes the gists.
    fn listed(&self) -> Vec<String> {
        let snapshot = self.publish.borrow();
        snapshot.items.iter().map(|s| s.plan_id.clone()).collect()
    }

    pub(crate) fn remember_gist(&self, plan_id: &str, gist: &str) {
        let full = self.gists.lock().unwrap_or_else(|p| p.into_inner()).len() >= MAX_GISTS;
        let listed: Option<std::collections::HashSet<String>> =
            full.then(|| self.listed().into_iter().collect());
        let mut gists = self.gists.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(listed) = listed {
            gists.retain(|id, _| listed.contains(id));
        }
        gists.insert(plan_id.to_owned(), gist.to_owned());
        self.gist_epoch.fetch_add(1, Ordering::Relaxed);
    }

    /// The gists of `plan_ids`, the rows a window shows: those remembered at once, the others
    /// read from the gateway, four at a time. A gist is kept only when the plan's
    /// content matches its digest; a plan that is not listed, or cannot be read now, is left out
    /// (its row keeps counting effects). Nothing reads a plan for its gist unasked: a queue of
    /// 10,000 costs no request per plan, only the rows in view do.
    pub async fn gists(
        self: &std::sync::Arc<Self>,
        plan_ids: &[String],
    ) -> Result<Vec<RowGist>, ConsoleError> {
        if plan_ids.len() > GISTS_AT_ONCE {
            return Err(ConsoleError::Invalid(format!(
                "at most {GISTS_AT_ONCE} gists at once, not {}",
                plan_ids.len()
            )));
        }
        let listed: std::collections::HashSet<String> = self.listed().into_iter().collect();
        let mut known = Vec::new();
        let mut missing = Vec::new();
        {
            let gists = self.gists.lock().unwrap_or_else(|p| p.into_inner());
            for plan_id in plan_ids.iter().filter(|id| listed.contains(*id)) {
                match gists.get(plan_id) {
                    Some(gist) => known.push(RowGist {
                        plan_id: plan_id.clone(),
                        gist: gist.clone(),
                    }),
                    None if !missing.contains(plan_id) => missing.push(plan_id.clone()),
                    None => {}
                }
            }
        }
        let limit = std::sync::Arc::new(tokio::sync::Semaphore::new(GIST_FETCHES));
        let mut reads = tokio::task::JoinSet::new();
        for plan_id in missing {
            let (console, limit) = (self.clone(), limit.clone());
            reads.spawn(async move {
                let _permit = limit.acquire_owned().await.ok()?;
                let fetched = match console.client.plan(&plan_id).await {
                    Ok(fetched) => fetched,
                    Err(e) => {
                        tracing::debug!(error = %e, plan = %plan_id, "no gist for now");
                        return None;
                    }
                };
                let plan = &fetched.record.plan;
                let matches = countersign_proto::digest::plan_digest(&fetched.raw)
                    .is_ok_and(|digest| digest == plan.plan_digest);
                if !matches {
                    tracing::warn!(plan = %plan_id, "a plan's content does not match its digest");
                    return None;
                }
                let gist = words::gist(plan);
                console.remember_gist(&plan_id, &gist);
                Some(RowGist { plan_id, gist })
            });
        }
        while let Some(read) = reads.join_next().await {
            known.extend(read.ok().flatten());
        }
        Ok(known)
    }

    /// The effect of `plan` whose sample a full set paged since contradicts, if any: a sample
    /// too short to check by itself is checked once its set is.
    pub(crate) fn contradicted_sample(&self, plan: &Preview) -> Option<String> {
        plan.effects.iter().find_map(|e| {
            let subjects = e.subjects.as_ref()?;
            let set = self.subjects.checked(&plan.plan_id, &e.id)?;
            let contradicted = sample::check(subjects) == SampleCheck::Unchecked
                && set.sample_check(&subjects.sample) == SampleCheck::Mismatch;
            contradicted.then(|| e.id.clone())
        })
    }

    /// The gateway's title of `plan_id` (or of its capability) as the queue knew it.
    fn label(&self, plan_id: &str, capability_id: &str) -> Option<String> {
        let snapshot = self.publish.borrow();
        snapshot
            .items
            .iter()
            .find(|s| s.plan_id == plan_id)
            .or_else(|| {
                snapshot
                    .items
                    .iter()
                    .find(|s| s.capability_id == capability_id)
            })
            .map(|s| s.title.clone())
    }

    /// Reviews a fetched plan for this approver.
    pub(crate) fn review(&self, fetched: &FetchedPlan) -> PlanView {
        let plan = &fetched.record.plan;
        let label = self
            .label(&plan.plan_id, &plan.capability_id)
            .or_else(|| fetched.title.clone());
        let mut view = review::plan_view(
            fetched,
            label.as_deref(),
            Some(self.signer.approver_id()),
            Utc::now(),
        );
        // A sample too short to check by itself is checked against the full set, once paged.
        let mut contradicted = None;
        for effect in &mut view.effects {
            if effect.sample_check != Some(SampleCheck::Unchecked) {
                continue;
            }
            let Some(set) = self.subjects.checked(&view.plan_id, &effect.id) else {
                continue;
            };
            effect.sample_check = Some(set.sample_check(&effect.sample));
            if effect.sample_check == Some(SampleCheck::Mismatch) {
                effect.sample.clear();
                contradicted = Some(effect.id.clone());
            }
        }
        if let Some(effect) = contradicted {
            view.approvable = false;
            view.not_approvable_reason = Some(format!(
                "The subjects the gateway lists for {effect} are not the set the plan signs."
            ));
        }
        {
            let snapshot = self.publish.borrow();
            view.queued = snapshot.queued.contains(&view.plan_id);
            review::apply_rules(&mut view, &fetched.record, snapshot.me.as_ref());
        }
        if view.digest_matches {
            self.remember_gist(&view.plan_id, &view.gist);
        }
        view
    }

    /// Fetches the plan and reviews it; an executed plan whose record keeps no execution journal
    /// gets the one its audit trail keeps. A gateway that does not answer gets the plan as last
    /// fetched, marked so.
    pub async fn plan_view(&self, plan_id: &str) -> Result<PlanView, ConsoleError> {
        // Offline, the approver still reads (and may sign, through the outbox) what was shown.
        let fetched = match self.fetch(plan_id).await {
            Ok(fetched) => fetched,
            Err(e @ ConsoleError::Unreachable { .. }) => {
                let last = self.last_fetched(plan_id).ok_or(e)?;
                let mut view = self.review(&last);
                view.last_fetched = true;
                return Ok(view);
            }
            Err(e) => return Err(e),
        };
        let mut view = self.review(&fetched);
        if let Some(execution) = view.execution.as_mut().filter(|e| e.journal.is_empty()) {
            match self.client.audit(plan_id).await {
                Ok(audit) => {
                    let last = audit["executions"]
                        .as_array()
                        .and_then(|runs| runs.last())
                        .and_then(|run| run["journal"].as_array());
                    if let Some(entries) = last {
                        execution.journal = crate::review::execution::journal(entries);
                    }
                }
                Err(e) => tracing::debug!(error = %e, "no execution journal from the audit"),
            }
        }
        Ok(view)
    }

    /// Fetches a plan and keeps it as the last one seen.
    pub(crate) async fn fetch(&self, plan_id: &str) -> Result<FetchedPlan, ConsoleError> {
        let fetched = self.client.plan(plan_id).await?;
        let mut recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
        recent.retain(|f| f.record.plan.plan_id != plan_id);
        if recent.len() >= RECENT_PLANS {
            recent.pop_front();
        }
        recent.push_back(fetched.clone());
        Ok(fetched)
    }

    /// The plan as last fetched, if it was.
    pub(crate) fn last_fetched(&self, plan_id: &str) -> Option<FetchedPlan> {
        let recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
        recent
            .iter()
            .find(|f| f.record.plan.plan_id == plan_id)
            .cloned()
    }

    /// Asks for a fresh preview of `plan_id` and says what changed since the plan it supersedes.
    pub async fn refresh(&self, plan_id: &str) -> Result<RefreshView, ConsoleError> {
        let old = self.client.plan(plan_id).await?;
        let new = self.client.refresh(plan_id).await?;
        self.changed_between(&old, &new).await
    }

    /// The plan `new` that replaced `old`, reviewed, and what changed between them.
    pub(crate) async fn changed_between(
        &self,
        old: &FetchedPlan,
        new: &FetchedPlan,
    ) -> Result<RefreshView, ConsoleError> {
        let (old_plan, new_plan) = (&old.record.plan, &new.record.plan);
        let mut subjects = std::collections::BTreeMap::new();
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
        self.poller.lock().await.invalidate();
        Ok(RefreshView {
            plan: self.review(new),
            changed,
            amended: None,
        })
    }

    /// Pages through every subject of an effect and checks the set against its digest.
    pub async fn verify_subjects(
        &self,
        plan_id: &str,
        effect_id: &str,
    ) -> Result<SubjectCheck, ConsoleError> {
        let fetched = self.client.plan(plan_id).await?;
        let set = self.subject_set(&fetched, effect_id).await?;
        Ok(set.check.clone())
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
}
