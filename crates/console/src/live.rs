//! Live sync: the gateway's event stream first, conditional polling when the stream is down, and
//! an explicit link state (online, degraded, offline) with the last successful sync.

use std::time::Duration;

use chrono::{DateTime, Utc};
use countersign_proto::approvals::{PlanStatus, PlanSummary};
use serde::Serialize;
use tokio::sync::watch;
use ts_rs::TS;

use crate::client::GatewayClient;
use crate::events::QueueEvent;
use crate::sync::{Backoff, Poller};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Link {
    /// The event stream is open: changes arrive as they happen.
    Online,
    /// The stream is down but polling works: changes arrive within a poll interval.
    Degraded,
    /// The gateway does not answer: the queue shown is as of `last_sync`.
    Offline,
}

/// What a live console shows: the pending plans and how fresh they are.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub items: Vec<PlanSummary>,
    pub link: Link,
    pub last_sync: Option<DateTime<Utc>>,
    /// Bumped on every change of the queue, so watchers can tell a new list from a state change.
    pub generation: u64,
}

/// How long to wait before trying the event stream again after it failed.
pub struct Timing {
    pub stream_retry: Backoff,
    pub offline: Backoff,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            stream_retry: Backoff::new(Duration::from_secs(1), Duration::from_secs(60)),
            offline: Backoff::new(Duration::from_secs(1), Duration::from_secs(60)),
        }
    }
}

fn listed(status: PlanStatus) -> bool {
    matches!(status, PlanStatus::PendingApproval | PlanStatus::Stale)
}

pub struct Live {
    client: GatewayClient,
    poller: Poller,
    last_event_id: Option<String>,
    timing: Timing,
    publish: watch::Sender<Snapshot>,
}

impl Live {
    pub fn new(client: GatewayClient, timing: Timing) -> (Live, watch::Receiver<Snapshot>) {
        let (publish, receiver) = watch::channel(Snapshot {
            items: Vec::new(),
            link: Link::Offline,
            last_sync: None,
            generation: 0,
        });
        let live = Live {
            client,
            poller: Poller::default(),
            last_event_id: None,
            timing,
            publish,
        };
        (live, receiver)
    }

    fn set(&self, link: Link, items: Option<Vec<PlanSummary>>) {
        self.publish.send_modify(|s| {
            s.link = link;
            if link != Link::Offline {
                s.last_sync = Some(Utc::now());
            }
            if let Some(items) = items {
                if items != s.items {
                    s.items = items;
                    s.generation += 1;
                }
            }
        });
    }

    /// Lists the queue; false when the gateway did not answer.
    async fn list(&mut self, link: Link) -> bool {
        match self.poller.poll(&self.client).await {
            Ok(_) => {
                self.timing.offline.succeeded();
                let items = self.poller.list().map(|l| l.items.clone());
                self.set(link, items);
                true
            }
            Err(e) => {
                tracing::debug!(error = %e, "listing the queue failed");
                self.set(Link::Offline, None);
                false
            }
        }
    }

    fn apply(&mut self, summary: PlanSummary) {
        let mut items = self.publish.borrow().items.clone();
        items.retain(|s| s.plan_id != summary.plan_id);
        if listed(summary.status) {
            items.push(summary);
        }
        items.sort_by(|a, b| (a.expires_at, &a.plan_id).cmp(&(b.expires_at, &b.plan_id)));
        self.set(Link::Online, Some(items));
    }

    /// Keeps the snapshot current until every receiver is gone.
    pub async fn run(mut self) {
        loop {
            if self.publish.is_closed() {
                return;
            }
            match self.client.events(self.last_event_id.as_deref()).await {
                Ok(mut stream) => {
                    // One listing once the stream is open covers everything before it; the retry
                    // backoff resets only when the stream delivers, so a stream that opens and
                    // closes at once is not retried every second.
                    self.list(Link::Online).await;
                    loop {
                        match stream.next().await {
                            Ok(Some(QueueEvent::Plan { id, summary })) => {
                                // An event without an id keeps the last one (SSE's rule).
                                if id.is_some() {
                                    self.last_event_id = id;
                                }
                                self.apply(*summary);
                                self.timing.stream_retry.succeeded();
                            }
                            Ok(Some(QueueEvent::Resync { id })) => {
                                self.timing.stream_retry.succeeded();
                                self.last_event_id = id;
                                self.poller.invalidate();
                                self.list(Link::Online).await;
                            }
                            Ok(None) | Err(_) => break,
                        }
                        if self.publish.is_closed() {
                            return;
                        }
                    }
                    tracing::debug!("event stream ended; polling until it is back");
                }
                Err(e) => tracing::debug!(error = %e, "event stream unavailable"),
            }
            self.poll_until_retry().await;
        }
    }

    /// Polls at the gateway's interval until it is time to try the stream again.
    async fn poll_until_retry(&mut self) {
        let retry_at = tokio::time::Instant::now() + self.timing.stream_retry.failed();
        loop {
            let link = if self.list(Link::Degraded).await {
                Link::Degraded
            } else {
                Link::Offline
            };
            let now = tokio::time::Instant::now();
            if now >= retry_at || self.publish.is_closed() {
                return;
            }
            let wait = if link == Link::Offline {
                self.timing.offline.failed()
            } else {
                self.poller.interval()
            };
            tokio::time::sleep(wait.min(retry_at - now)).await;
        }
    }
}
