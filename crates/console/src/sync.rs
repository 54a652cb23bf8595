//! Keeping the queue current by conditional polling (`If-None-Match`, `X-Poll-Interval`).

use std::time::Duration;

use chrono::{DateTime, Utc};
use countersign_proto::approvals::ApprovalList;

use crate::client::{GatewayClient, Poll};
use crate::error::ConsoleError;

/// What the console knows of the queue, and when it last heard from the gateway.
#[derive(Debug, Default)]
pub struct Poller {
    etag: Option<String>,
    list: Option<ApprovalList>,
    interval: Option<Duration>,
    last_sync: Option<DateTime<Utc>>,
}

/// Used until the gateway says otherwise (PROTOCOL section 4).
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(5);

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
            self.interval = Some(Duration::from_secs(seconds.max(1)));
        }
        Ok(changed)
    }

    pub fn list(&self) -> Option<&ApprovalList> {
        self.list.as_ref()
    }

    pub fn interval(&self) -> Duration {
        self.interval.unwrap_or(DEFAULT_POLL_INTERVAL)
    }

    pub fn last_sync(&self) -> Option<DateTime<Utc>> {
        self.last_sync
    }

    /// Forgets the ETag so that the next poll lists again (after a decision, say).
    pub fn invalidate(&mut self) {
        self.etag = None;
    }
}
