//! Keeping the queue current by conditional polling (`If-None-Match`, `X-Poll-Interval`).

use std::time::Duration;

use chrono::{DateTime, Utc};
use countersign_proto::approvals::ApprovalList;

use crate::client::{GatewayClient, Poll};
use crate::error::ConsoleError;

/// Where the console's listing of the queue stands (its ETag), and when it last heard from the
/// gateway.
#[derive(Debug, Default)]
pub struct Poller {
    etag: Option<String>,
    list: Option<ApprovalList>,
    interval: Option<Duration>,
    last_sync: Option<DateTime<Utc>>,
}

/// Used until the gateway says otherwise (PROTOCOL section 4).
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(5);

/// The longest wait the gateway may ask for: a gateway (or a relay) that says "come back in a
/// day" would otherwise hide new plans from the approver for that long.
pub const MAX_POLL_INTERVAL: Duration = Duration::from_secs(60);

/// The wait the gateway's `X-Poll-Interval` asks for, kept within 1 s and [`MAX_POLL_INTERVAL`].
fn asked_interval(seconds: u64) -> Duration {
    Duration::from_secs(seconds).clamp(Duration::from_secs(1), MAX_POLL_INTERVAL)
}

impl Poller {
    /// Polls once; `Ok(true)` when the queue changed.
    pub async fn poll(&mut self, client: &GatewayClient) -> Result<bool, ConsoleError> {
        let outcome = client.pending(self.etag.as_deref()).await?;
        self.last_sync = Some(Utc::now());
        let (changed, interval) = match outcome {
            Poll::NotModified { poll_interval } => (false, poll_interval),
            Poll::Changed {
                list,
                etag,
                poll_interval,
            } => {
                self.etag = etag;
                self.list = Some(list);
                (true, poll_interval)
            }
        };
        if let Some(seconds) = interval {
            self.interval = Some(asked_interval(seconds));
        }
        Ok(changed)
    }

    /// The listing the last poll brought, once: the snapshot it goes into is the one copy kept
    /// (10,000 summaries held twice were 10 MB of the app's memory for nothing, issue 28).
    pub fn take_list(&mut self) -> Option<ApprovalList> {
        self.list.take()
    }

    pub fn interval(&self) -> Duration {
        self.interval.unwrap_or(DEFAULT_POLL_INTERVAL)
    }

    /// The wait before the next listing for an approver who asked for `floor`: never shorter
    /// than the gateway asked, nor than the approver did.
    pub fn interval_at_least(&self, floor: Duration) -> Duration {
        self.interval.unwrap_or(floor).max(floor)
    }

    pub fn last_sync(&self) -> Option<DateTime<Utc>> {
        self.last_sync
    }

    /// Forgets the ETag so that the next poll lists again (after a decision, say).
    pub fn invalidate(&mut self) {
        self.etag = None;
    }
}

/// Exponential backoff with full jitter for an unreachable gateway, capped at `max`.
#[derive(Debug, Clone)]
pub struct Backoff {
    failures: u32,
    base: Duration,
    max: Duration,
}

impl Backoff {
    pub fn new(base: Duration, max: Duration) -> Backoff {
        Backoff {
            failures: 0,
            base,
            max,
        }
    }

    /// The wait before the next attempt after one more failure.
    pub fn failed(&mut self) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let ceiling = self
            .base
            .saturating_mul(1u32 << self.failures.min(16))
            .min(self.max);
        let millis = ceiling.as_millis().max(1) as u64;
        Duration::from_millis(rand::Rng::gen_range(
            &mut rand::thread_rng(),
            millis / 2..=millis,
        ))
    }

    pub fn succeeded(&mut self) {
        self.failures = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gateway_cannot_stretch_the_poll_interval_past_a_minute() {
        assert_eq!(asked_interval(5), Duration::from_secs(5));
        assert_eq!(asked_interval(0), Duration::from_secs(1));
        assert_eq!(asked_interval(86_400), MAX_POLL_INTERVAL);
        assert_eq!(asked_interval(u64::MAX), MAX_POLL_INTERVAL);
    }

    #[test]
    fn the_approver_may_poll_less_often_than_the_gateway_asks_never_more() {
        let mut poller = Poller::default();
        let secs = Duration::from_secs;
        assert_eq!(
            poller.interval_at_least(secs(30)),
            secs(30),
            "no answer yet"
        );
        poller.interval = Some(asked_interval(10));
        assert_eq!(poller.interval_at_least(secs(2)), secs(10));
        assert_eq!(poller.interval_at_least(secs(30)), secs(30));
    }

    #[test]
    fn a_listing_is_handed_over_once_and_not_kept() {
        let mut poller = Poller {
            list: Some(ApprovalList {
                items: Vec::new(),
                revision: "rev_1".to_owned(),
                next_cursor: None,
            }),
            ..Poller::default()
        };
        assert_eq!(
            poller.take_list().map(|l| l.revision),
            Some("rev_1".to_owned())
        );
        assert!(
            poller.take_list().is_none(),
            "the snapshot holds the one copy"
        );
    }

    #[test]
    fn backoff_grows_within_its_cap_and_resets() {
        let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(2));
        let first = backoff.failed();
        assert!(first >= Duration::from_millis(100) && first <= Duration::from_millis(200));
        for _ in 0..20 {
            assert!(backoff.failed() <= Duration::from_secs(2));
        }
        assert!(backoff.failed() >= Duration::from_secs(1));
        backoff.succeeded();
        assert!(backoff.failed() <= Duration::from_millis(200));
    }
}
