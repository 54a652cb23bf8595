//! Delivery of the email outbox. An execution only queues its messages, in its own transaction;
//! after it commits, the dispatcher takes each due message, checks its recipient again (seed 004:
//! an irreversible message is revalidated right before it is sent), hands it to the SMTP relay,
//! and records what happened: `sent`, retried later, `held` for a person, or `failed`.

use std::sync::{Arc, Weak};
use std::time::Duration;

use chrono::{DateTime, Utc};
use lettre::message::header::ContentType;
use lettre::message::Mailbox;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use serde_json::{json, Map, Value};
use sqlx::AnyConnection;

use crate::{ids, AppState, Store};

/// Attempts before a message that the relay keeps refusing for now is given up as `failed`:
/// with the backoff below, about two hours of a relay that is down.
pub const MAX_ATTEMPTS: i64 = 12;

/// The longest wait between two attempts.
const MAX_BACKOFF_SECS: i64 = 3600;

/// How long one message may take at the relay: a relay that accepts and then says nothing must
/// not stall every other message behind it.
const SEND_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a dispatcher owns a message it is sending: another dispatcher on the same database
/// leaves it alone until then, and takes it up again if this one died mid-send.
const LEASE: chrono::Duration = chrono::Duration::minutes(5);

/// Messages taken per pass, so one large removal does not hold the others back for long.
const BATCH: i64 = 200;

/// How often the dispatcher looks for retries that fell due when nothing was committed.
const RETRY_TICK: Duration = Duration::from_secs(5);

/// The SMTP relay messages leave through, and the sender they carry.
pub struct Relay {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    send_timeout: Duration,
}

impl Relay {
    /// `smtp://host:port` (plain, for a relay on a trusted network), `smtp://host?tls=required`
    /// (STARTTLS) or `smtps://host` (TLS); credentials as `smtp://user:pass@host`.
    pub fn new(url: &str, from: &str) -> anyhow::Result<Relay> {
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
            .map_err(|e| anyhow::anyhow!("the SMTP relay URL {url:?} is not usable: {e}"))?
            .timeout(Some(Duration::from_secs(30)))
            .build();
        let from = from
            .parse()
            .map_err(|e| anyhow::anyhow!("the sender address {from:?} is not usable: {e}"))?;
        Ok(Relay {
            transport,
            from,
            send_timeout: SEND_TIMEOUT,
        })
    }

    /// How long one message may take at this relay (a minute unless set).
    pub fn with_send_timeout(mut self, limit: Duration) -> Relay {
        self.send_timeout = limit;
        self
    }
}

/// What one pass did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pass {
    pub sent: usize,
    pub held: usize,
    pub retrying: usize,
    pub failed: usize,
}

impl Pass {
    fn is_empty(&self) -> bool {
        *self == Pass::default()
    }
}

#[derive(sqlx::FromRow)]
struct Queued {
    id: i64,
    plan_id: Option<String>,
    user_id: String,
    recipient: String,
    subject: String,
    body: String,
    attempts: i64,
    /// As read: a claim succeeds only if no other dispatcher changed it since.
    next_attempt_at: Option<String>,
}

enum Outcome {
    Sent,
    Held(String),
    Retry(String),
    Failed(String),
}

/// Sends the messages due at `now`, each at most once per call, in batches; the clock is a
/// parameter so that retries can be tested without waiting for them.
pub async fn dispatch(store: &Store, relay: &Relay, now: DateTime<Utc>) -> anyhow::Result<Pass> {
    let mut pass = Pass::default();
    let mut after = 0;
    loop {
        let queued: Vec<Queued> = sqlx::query_as(
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
        let Some(last) = queued.last() else {
            return Ok(pass);
        };
        after = last.id;
        deliver(store, relay, queued, now, &mut pass).await?;
    }
}

async fn deliver(
    store: &Store,
    relay: &Relay,
    queued: Vec<Queued>,
    now: DateTime<Utc>,
    pass: &mut Pass,
) -> anyhow::Result<()> {
    for message in queued {
        let Some((lease, current)) = claim(store, &message).await? else {
            continue;
        };
        let outcome = match current {
            Some(address) if address == message.recipient => send(relay, &message).await,
            Some(address) => Outcome::Held(format!(
                "recipient_changed: {} is now {address}, not {} as planned",
                message.user_id, message.recipient
            )),
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
        record(store, &message, &lease, outcome, now).await?;
    }
    Ok(())
}

/// Takes the message for this dispatcher until the lease runs out, and reads its recipient's
/// address as it is now: the lease (the row's `next_attempt_at`, which only this claim wrote)
/// and the address. `None` when another dispatcher holds it. The lease runs from the wall clock,
/// however long this pass has taken.
async fn claim(
    store: &Store,
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
    let address: Option<String> = sqlx::query_scalar("SELECT email FROM users WHERE id = $1")
        .bind(&message.user_id)
        .fetch_optional(&mut *w.tx)
        .await?;
    w.commit().await?;
    Ok(Some((lease, address)))
}

async fn send(relay: &Relay, message: &Queued) -> Outcome {
    let to: Mailbox = match message.recipient.parse() {
        Ok(to) => to,
        Err(e) => return Outcome::Failed(format!("invalid_address: {e}")),
    };
    let email = Message::builder()
        .from(relay.from.clone())
        .to(to)
        // The same id on every attempt, so a receiver can drop the copy a crash mid-send resent.
        .message_id(Some(format!(
            "<outbox-{}.{}@countersign>",
            message.id,
            message.plan_id.as_deref().unwrap_or("inline")
        )))
        .subject(message.subject.clone())
        .header(ContentType::TEXT_PLAIN)
        .body(message.body.clone());
    let email = match email {
        Ok(email) => email,
        Err(e) => return Outcome::Failed(format!("unbuildable: {e}")),
    };
    let sent = match tokio::time::timeout(relay.send_timeout, relay.transport.send(email)).await {
        Ok(sent) => sent,
        Err(_) if message.attempts + 1 >= MAX_ATTEMPTS => {
            return Outcome::Failed(format!("gave_up after {MAX_ATTEMPTS} attempts: timed out"))
        }
        Err(_) => return Outcome::Retry("relay_unavailable: no answer in time".to_owned()),
    };
    match sent {
        Ok(_) => Outcome::Sent,
        Err(e) if e.is_permanent() => Outcome::Failed(format!("refused: {e}")),
        Err(e) if message.attempts + 1 >= MAX_ATTEMPTS => {
            Outcome::Failed(format!("gave_up after {MAX_ATTEMPTS} attempts: {e}"))
        }
        Err(e) => Outcome::Retry(format!("relay_unavailable: {e}")),
    }
}

/// Records what happened, if the lease is still this dispatcher's: one that outlived its lease
/// and lost the message to another dispatcher changes nothing.
async fn record(
    store: &Store,
    message: &Queued,
    lease: &str,
    outcome: Outcome,
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
                                 sent_at = $5
         WHERE id = $6 AND state = 'pending' AND next_attempt_at = $7",
    )
    .bind(state)
    .bind(attempts)
    .bind(error)
    .bind(next)
    .bind(sent_at)
    .bind(message.id)
    .bind(lease)
    .execute(&mut *w.tx)
    .await?;
    w.commit().await
}

/// Delivers for as long as the gateway's state lives: after every commit (an execution that
/// queued messages), and every few seconds for retries that fell due.
pub fn spawn(state: &Arc<AppState>, relay: Relay) {
    let state: Weak<AppState> = Arc::downgrade(state);
    tokio::spawn(async move {
        let Some(mut commits) = state.upgrade().map(|s| s.store.commits()) else {
            return;
        };
        loop {
            let Some(strong) = state.upgrade() else {
                return;
            };
            match dispatch(&strong.store, &relay, ids::now()).await {
                Ok(pass) if !pass.is_empty() => tracing::info!(?pass, "mail delivered"),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = ?e, "mail delivery failed; trying again"),
            }
            drop(strong);
            tokio::select! {
                changed = commits.changed() => if changed.is_err() { return },
                () = tokio::time::sleep(RETRY_TICK) => {}
            }
        }
    });
}

/// Messages needing a person shown per plan record; the counts cover all of them.
const ATTENTION_SHOWN: i64 = 100;

/// How the messages of one plan stand, for its record: a count per state, and the messages held
/// or failed, with why, since those need a person.
pub async fn deliveries(conn: &mut AnyConnection, plan_id: &str) -> Result<Value, sqlx::Error> {
    let counts: Vec<(String, i64)> = sqlx::query_as(
        "SELECT state, COUNT(*) FROM email_outbox WHERE plan_id = $1 GROUP BY state ORDER BY state",
    )
    .bind(plan_id)
    .fetch_all(&mut *conn)
    .await?;
    let attention: Vec<(String, String, String, i64, Option<String>)> = sqlx::query_as(
        "SELECT user_id, recipient, state, attempts, last_error FROM email_outbox
         WHERE plan_id = $1 AND state IN ('held', 'failed') ORDER BY id LIMIT $2",
    )
    .bind(plan_id)
    .bind(ATTENTION_SHOWN)
    .fetch_all(&mut *conn)
    .await?;
    let counts: Map<String, Value> = counts.into_iter().map(|(s, n)| (s, json!(n))).collect();
    let attention: Vec<Value> = attention
        .into_iter()
        .map(|(user, to, state, attempts, error)| {
            json!({"user_id": user, "recipient": to, "state": state,
                   "attempts": attempts, "last_error": error})
        })
        .collect();
    Ok(json!({"counts": counts, "attention": attention}))
}
