//! Snoozes and reminders, local to this approver: a snoozed plan leaves the queue's default view
//! until its time (never past two minutes before it expires) and comes back with a notification;
//! a plan that needs me and expires within five minutes reminds me once. What the console does with
//! them is in `snooze`.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use chrono::{DateTime, Duration, Utc};
use countersign_proto::approvals::{ApproverProfile, PlanSummary};

use crate::error::ConsoleError;
use crate::private_files;
use crate::review::rules::{turn, Turn};

/// A snooze ends this long before its plan expires, at the latest.
pub const SNOOZE_MARGIN: Duration = Duration::minutes(2);
/// A plan that needs me reminds me this long before it expires.
pub const REMIND_BEFORE: Duration = Duration::minutes(5);

/// Plans about to expire announced one by one at most at once; more are one notification.
pub const SEPARATE_REMINDERS: usize = 3;

/// How many plans about to expire one notification stands for, and the first of them.
pub type Summarized = (usize, String);

/// What to tell the approver of `due`: each ended snooze and up to [`SEPARATE_REMINDERS`] plans
/// about to expire by themselves, and how many more expire soon (with the first of them, which
/// the summary opens). A queue of thousands expiring together is one notification, not a storm.
pub fn to_announce(due: Vec<(String, Due)>) -> (Vec<(String, Due)>, Option<Summarized>) {
    let expiring = due
        .iter()
        .filter(|(_, why)| *why == Due::ExpiresSoon)
        .count();
    if expiring <= SEPARATE_REMINDERS {
        return (due, None);
    }
    let (unsnoozed, soon): (Vec<_>, Vec<_>) =
        due.into_iter().partition(|(_, why)| *why == Due::Unsnoozed);
    let first = soon.first().map(|(id, _)| id.clone()).unwrap_or_default();
    (unsnoozed, Some((soon.len(), first)))
}

/// Why a plan is brought to the approver again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Due {
    /// Its snooze ended.
    Unsnoozed,
    /// It needs me and expires within [`REMIND_BEFORE`].
    ExpiresSoon,
}

#[derive(Debug, Default)]
pub struct Snoozes {
    until: HashMap<String, DateTime<Utc>>,
    reminded: HashSet<String>,
    /// Where the snoozes are kept, so that they survive a restart of the app.
    kept_in: Option<PathBuf>,
}

impl Snoozes {
    /// The snoozes kept in the file at `path` by an earlier run, kept there from now on. A file
    /// that does not read is left for the next snooze to replace: snoozes are a convenience, and
    /// a plan that shows early is decided, not lost.
    pub fn kept_in(path: PathBuf) -> Snoozes {
        let until = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                tracing::warn!(error = %e, path = %path.display(), "the snoozes do not read");
                HashMap::new()
            }),
            Err(_) => HashMap::new(),
        };
        Snoozes {
            until,
            reminded: HashSet::new(),
            kept_in: Some(path),
        }
    }

    fn keep(&self) {
        let Some(path) = &self.kept_in else {
            return;
        };
        let written = serde_json::to_vec(&self.until)
            .map_err(|e| ConsoleError::Invalid(e.to_string()))
            .and_then(|bytes| private_files::write(path, &bytes));
        if let Err(e) = written {
            tracing::warn!(error = %e, "the snoozes could not be kept");
        }
    }

    /// Snoozes `plan_id` (expiring at `expires_at`) for `minutes` from `now`, cut to two minutes
    /// before it expires; a plan closer to its expiry than that is not snoozed.
    pub fn snooze(
        &mut self,
        plan_id: &str,
        expires_at: DateTime<Utc>,
        minutes: u32,
        now: DateTime<Utc>,
    ) -> Result<DateTime<Utc>, ConsoleError> {
        if !(1..=24 * 60).contains(&minutes) {
            return Err(ConsoleError::Invalid(
                "A snooze lasts 1 minute to a day.".to_owned(),
            ));
        }
        let until = (now + Duration::minutes(i64::from(minutes))).min(expires_at - SNOOZE_MARGIN);
        if until <= now {
            return Err(ConsoleError::Invalid(format!(
                "Plan {plan_id} expires in less than two minutes: decide it now."
            )));
        }
        self.until.insert(plan_id.to_owned(), until);
        self.keep();
        Ok(until)
    }

    pub fn unsnooze(&mut self, plan_id: &str) {
        if self.until.remove(plan_id).is_some() {
            self.keep();
        }
    }

    /// Until when `plan_id` is hidden, if it still is at `now`.
    /// How many plans are snoozed at `now`: a snooze that ends changes it.
    pub fn asleep(&self, now: DateTime<Utc>) -> usize {
        self.until.values().filter(|until| **until > now).count()
    }

    pub fn until(&self, plan_id: &str, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.until
            .get(plan_id)
            .copied()
            .filter(|until| *until > now)
    }

    /// The plans to bring back at `now`, each once: snoozes that ended (their plan still listed)
    /// and plans that need `me` and expire soon. Forgets plans no longer listed.
    pub fn due(
        &mut self,
        listed: &[PlanSummary],
        me: Option<&ApproverProfile>,
        now: DateTime<Utc>,
    ) -> Vec<(String, Due)> {
        // Looked at every few seconds over a queue of thousands: nothing is allocated for it, and
        // the few snoozed and reminded plans are looked up in the listing.
        let is_listed = |id: &str| listed.iter().any(|p| p.plan_id == id);
        self.reminded.retain(|id| is_listed(id));
        let mut due = Vec::new();
        let snoozed = self.until.len();
        self.until.retain(|id, until| {
            let over = *until <= now;
            if over && is_listed(id) {
                due.push((id.clone(), Due::Unsnoozed));
            }
            !over && is_listed(id)
        });
        if self.until.len() != snoozed {
            self.keep();
        }
        for plan in listed {
            let soon = plan.expires_at > now && plan.expires_at - now <= REMIND_BEFORE;
            if soon
                && turn(plan, me) == Turn::Me
                && !self.until.contains_key(&plan.plan_id)
                && !due.iter().any(|(id, _)| *id == plan.plan_id)
                && self.reminded.insert(plan.plan_id.clone())
            {
                due.push((plan.plan_id.clone(), Due::ExpiresSoon));
            }
        }
        due
    }
}

#[cfg(test)]
mod tests;
