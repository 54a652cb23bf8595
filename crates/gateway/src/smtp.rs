//! The SMTP relay an execution's queued emails leave through, after it committed: the engine's
//! outbox dispatcher hands each due message here, and records what became of it.

use std::sync::{Arc, Weak};
use std::time::Duration;

use countersign_api::AppState;
use countersign_engine::mail::{self, Outcome, Queued, Sender, MAX_ATTEMPTS};
use countersign_engine::{ids, secrets};
use lettre::message::header::ContentType;
use lettre::message::Mailbox;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

/// How long one message may take at the relay: a relay that accepts and then says nothing must
/// not stall every other message behind it.
const SEND_TIMEOUT: Duration = Duration::from_secs(60);

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
            .map_err(|e| {
                let url = secrets::redacted_url(url);
                anyhow::anyhow!("the SMTP relay URL {url} is not usable: {e}")
            })?
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

impl Sender for Relay {
    async fn send(&self, message: &Queued) -> Outcome {
        let to: Mailbox = match message.recipient.parse() {
            Ok(to) => to,
            Err(e) => return Outcome::Failed(format!("invalid_address: {e}")),
        };
        let email = Message::builder()
            .from(self.from.clone())
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
        let last_attempt = message.attempts + 1 >= MAX_ATTEMPTS;
        let sent = match tokio::time::timeout(self.send_timeout, self.transport.send(email)).await {
            Ok(sent) => sent,
            Err(_) if last_attempt => {
                return Outcome::Failed(format!("gave_up after {MAX_ATTEMPTS} attempts: timed out"))
            }
            Err(_) => return Outcome::Retry("relay_unavailable: no answer in time".to_owned()),
        };
        match sent {
            Ok(_) => Outcome::Sent,
            Err(e) if e.is_permanent() => Outcome::Failed(format!("refused: {e}")),
            Err(e) if last_attempt => {
                Outcome::Failed(format!("gave_up after {MAX_ATTEMPTS} attempts: {e}"))
            }
            Err(e) => Outcome::Retry(format!("relay_unavailable: {e}")),
        }
    }
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
            match mail::dispatch(&strong.store, strong.registry, &relay, ids::now()).await {
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
