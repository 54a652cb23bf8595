//! The email outbox's records. An execution only queues its messages, in its own transaction;
//! after it commits, a dispatcher takes each due message, checks its recipient again (seed 004:
//! an irreversible message is revalidated right before it is sent), hands it to a [`Sender`]
//! (the server's SMTP relay), and records what happened: `sent`, retried later, `held` for a
//! person, or `failed`. Leases let several dispatchers share one database. A message held or
//! failed waits for an approver's signed remedy ([`remedy`]).

mod remedy;

pub use remedy::{apply_remedy, deliveries};

use std::future::Future;

use chrono::{DateTime, Utc};

use crate::registry::Registry;
use crate::{ids, Store};

/// Attempts before a message that the relay keeps refusing for now is given up as `failed`:
/// with the backoff below, about two hours of a relay that is down.
pub const MAX_ATTEMPTS: i64 = 12;

/// The longest wait between two attempts.
const MAX_BACKOFF_SECS: i64 = 3600;

/// How long a dispatcher owns a message it is sending: another dispatcher on the same database
/// leaves it alone until then, and takes it up again if this one died mid-send.
const LEASE: chrono::Duration = chrono::Duration::minutes(5);

/// Messages taken per pass, so one large removal does not hold the others back for long.
const BATCH: i64 = 200;

/// What one pass did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pass {
    pub sent: usize,
    pub held: usize,
    pub retrying: usize,
    pub failed: usize,
}

impl Pass {
    pub fn is_empty(&self) -> bool {
        *self == Pass::default()
    }
}

/// A message due for sending.
pub struct Queued {
    pub id: i64,
    pub plan_id: Option<String>,
    pub user_id: String,
    pub recipient: String,
    pub subject: String,
    pub body: String,
    /// Attempts before this one.
    pub attempts: i64,
    /// As read: a claim succeeds only if no other dispatcher changed it since.
    next_attempt_at: Option<String>,
}

/// [`Queued`]'s columns, in its order.
type QueuedRow = (
    i64,
    Option<String>,
    String,
    String,
    String,
    String,
    i64,
    Option<String>,
);

impl From<QueuedRow> for Queued {
    fn from(row: QueuedRow) -> Queued {
        let (id, plan_id, user_id, recipient, subject, body, attempts, next_attempt_at) = row;
        Queued {
            id,
            plan_id,
            user_id,
            recipient,
            subject,
            body,
            attempts,
            next_attempt_at,
        }
    }
}

/// How one attempt ended; a reason travels with all but success.
pub enum Outcome {
    Sent,
    Held(String),
    Retry(String),
    Failed(String),
}

/// Hands one message to the outside world: the server's SMTP relay.
pub trait Sender: Sync {
    fn send(&self, message: &Queued) -> impl Future<Output = Outcome> + Send;
}

/// Sends the messages due at `now`, each at most once per call, in batches; the clock is a
/// parameter so that retries can be tested without waiting for them.
pub async fn dispatch(
    store: &Store,
    registry: &Registry,
    sender: &impl Sender,
    now: DateTime<Utc>,
) -> anyhow::Result<Pass> {
    let mut pass = Pass::default();
    let mut after = 0;
    loop {
        let rows: Vec<QueuedRow> = sqlx::query_as(
            "SELECT id, plan_id, user_id, recipient, subject, body, attempts, next_attempt_at
             FROM email_outbox
             WHERE state = 'pending' AND (next_attempt_at IS NULL OR next_attempt_at <= $1)
               AND id > $2
             ORDER BY id LIMIT $3",
        )
        .bind(ids::to_text(now))
        .bind(after)
        .bind(BATCH)
        .fetch_all(store.pool())
        .await?;
        let queued: Vec<Queued> = rows.into_iter().map(Queued::from).collect();
        let Some(last) = queued.last() else {
            return Ok(pass);
        };
        after = last.id;
        deliver(store, registry, sender, queued, now, &mut pass).await?;
    }
}

async fn deliver(
    store: &Store,
    registry: &Registry,
    sender: &impl Sender,
    queued: Vec<Queued>,
    now: DateTime<Utc>,
    pass: &mut Pass,
) -> anyhow::Result<()> {
    for message in queued {
        let Some((lease, current)) = claim(store, registry, &message).await? else {
            continue;
        };
        let mut release_to = None;
        let outcome = match current {
            Some(address) if address == message.recipient => sender.send(&message).await,
            Some(address) => {
                let why = format!(
                    "recipient_changed: {} is now {address}, not {} as planned",
                    message.user_id, message.recipient
                );
                release_to = Some(address);
                Outcome::Held(why)
            }
            None => Outcome::Held(format!(
                "recipient_gone: {} no longer exists",
                message.user_id
            )),
        };
        match &outcome {
            Outcome::Sent => pass.sent += 1,
            Outcome::Held(_) => pass.held += 1,
            Outcome::Retry(_) => pass.retrying += 1,
            Outcome::Failed(_) => pass.failed += 1,
        }
        record(store, &message, &lease, (outcome, release_to), now).await?;
    }
    Ok(())
}

/// Takes the message for this dispatcher until the lease runs out, and reads its recipient's
/// address as it is now: the lease (the row's `next_attempt_at`, which only this claim wrote)
/// and the address. `None` when another dispatcher holds it. The lease runs from the wall clock,
/// however long this pass has taken.
async fn claim(
    store: &Store,
    registry: &Registry,
    message: &Queued,
) -> Result<Option<(String, Option<String>)>, sqlx::Error> {
    let now = ids::now();
    let lease = format!(
        "{}#{}",
        ids::to_text(now + LEASE),
        ids::random_id("lease_", 6)
    );
    let mut w = store.write().await?;
    let taken = sqlx::query(
        "UPDATE email_outbox SET next_attempt_at = $1
         WHERE id = $2 AND state = 'pending' AND next_attempt_at IS NOT DISTINCT FROM $3",
    )
    .bind(&lease)
    .bind(message.id)
    .bind(&message.next_attempt_at)
    .execute(&mut *w.tx)
    .await?
    .rows_affected();
    if taken == 0 {
        return Ok(None);
    }
    let address = registry.address(&mut w.tx, &message.user_id).await?;
    w.commit().await?;
    Ok(Some((lease, address)))
}

/// Records what happened, if the lease is still this dispatcher's: one that outlived its lease
/// and lost the message to another dispatcher changes nothing. A message held for a changed
/// address keeps the address found, where a release would send it.
async fn record(
    store: &Store,
    message: &Queued,
    lease: &str,
    (outcome, release_to): (Outcome, Option<String>),
    pass_time: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let attempts = message.attempts + 1;
    // The later of the pass's clock (tests move it ahead) and the wall clock (a long pass).
    let now = pass_time.max(ids::now());
    let (state, error, next, sent_at) = match outcome {
        Outcome::Sent => ("sent", None, None, Some(ids::to_text(now))),
        Outcome::Held(why) => ("held", Some(why), None, None),
        Outcome::Failed(why) => ("failed", Some(why), None, None),
        // 2, 4, 8 … seconds up to an hour: a relay that is down for a while is not hammered.
        Outcome::Retry(why) => {
            let wait = (1i64 << attempts.min(20)).min(MAX_BACKOFF_SECS);
            let next = ids::to_text(now + chrono::Duration::seconds(wait));
            ("pending", Some(why), Some(next), None)
        }
    };
    let mut w = store.write().await?;
    sqlx::query(
        "UPDATE email_outbox SET state = $1, attempts = $2, last_error = $3, next_attempt_at = $4,
                                 sent_at = $5, release_to = $8
         WHERE id = $6 AND state = 'pending' AND next_attempt_at = $7",
    )
    .bind(state)
    .bind(attempts)
    .bind(error)
    .bind(next)
    .bind(sent_at)
    .bind(message.id)
    .bind(lease)
    .bind(release_to)
    .execute(&mut *w.tx)
    .await?;
    w.commit().await
}
