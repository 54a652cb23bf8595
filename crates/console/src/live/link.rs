//! Live sync: the gateway's event stream first, conditional polling when the stream is down, and
//! an explicit link state (online, degraded, offline) with the last successful sync.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use countersign_proto::approvals::{PlanStatus, PlanSummary, RiskFlag};
use tokio::sync::watch;

use crate::client::GatewayClient;
use crate::console::Console;
use crate::error::ErrorView;
use crate::live::events::QueueEvent;
pub use crate::live::snapshot::{Link, Snapshot};
use crate::live::sync::{Backoff, Poller};

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

/// Whether a plan belongs in the approver's queue: waiting for people, and not blocked. A
/// blocked plan can never be approved, so it reaches no person (PROTOCOL section 2), whatever a
/// gateway sends.
fn listed(summary: &PlanSummary) -> bool {
    matches!(
        summary.status,
        PlanStatus::PendingApproval | PlanStatus::Stale
    ) && !summary.risk.contains(&RiskFlag::Blocked)
}

pub struct Live {
    client: GatewayClient,
    poller: Poller,
    last_event_id: Option<String>,
    timing: Timing,
    publish: watch::Sender<Snapshot>,
    /// Whose outbox goes out whenever the gateway answers a listing.
    console: Option<Arc<Console>>,
}

impl Live {
    pub fn new(client: GatewayClient, timing: Timing) -> (Live, watch::Receiver<Snapshot>) {
        let (publish, receiver) = watch::channel(Snapshot::default());
        let live = Live {
            client,
            poller: Poller::default(),
            last_event_id: None,
            timing,
            publish,
            console: None,
        };
        (live, receiver)
    }

    /// Live sync into `console`'s snapshot (what [`Console::queue`] and a session's status read),
    /// sending the console's outbox again each time the gateway answers.
    pub fn for_console(console: Arc<Console>, timing: Timing) -> Live {
        Live {
            client: console.client().clone(),
            poller: Poller::default(),
            last_event_id: None,
            timing,
            publish: console.publisher().clone(),
            console: Some(console),
        }
    }

    fn set(&self, link: Link, items: Option<Vec<PlanSummary>>, error: Option<ErrorView>) {
        self.publish.send_modify(|s| {
            s.link = link;
            s.last_error = error;
            if link != Link::Offline {
                s.last_sync = Some(Utc::now());
            }
            if let Some(mut items) = items {
                items.retain(listed);
                // `apply` inserts events by binary search: the order is ours to keep, not
                // something the gateway (or a relay) is trusted to have sent.
                items.sort_by(|a, b| (a.expires_at, &a.plan_id).cmp(&(b.expires_at, &b.plan_id)));
                if items != s.items {
                    s.items = items;
                    s.generation += 1;
                }
            }
        });
    }

    /// Lists the queue; false when the gateway did not answer. An answer is the moment to send
    /// what the outbox holds.
    async fn list(&mut self, link: Link) -> bool {
        match self.poller.poll(&self.client).await {
            Ok(_) => {
                self.timing.offline.succeeded();
                let items = self.poller.take_list().map(|l| l.items);
                self.set(link, items, None);
                if let Some(console) = &self.console {
                    console.send_outbox().await;
                }
                true
            }
            Err(e) => {
                tracing::debug!(error = %e, "listing the queue failed");
                self.set(Link::Offline, None, Some(e.view()));
                false
            }
        }
    }

    /// Asks who this approver is to the gateway's policy (their teams may have changed since the
    /// stream was last open). A gateway without the answer leaves it unknown: every open plan
    /// may then be this approver's.
    async fn whoami(&mut self) {
        let me = match self.client.me().await {
            Ok(me) => Some(me),
            Err(e) => {
                tracing::debug!(error = %e, "the gateway did not say who this approver is");
                return;
            }
        };
        self.publish.send_modify(|s| {
            if s.me != me {
                s.me = me;
                s.generation += 1;
            }
        });
    }

    /// One plan's new summary, put in its place in the queue without copying or re-sorting it.
    fn apply(&mut self, summary: PlanSummary) {
        self.publish.send_modify(|s| {
            s.link = Link::Online;
            s.last_sync = Some(Utc::now());
            s.plan_events += 1;
            let old = s
                .items
                .iter()
                .position(|p| p.plan_id == summary.plan_id)
                .map(|at| s.items.remove(at));
            let changed = old.as_ref() != Some(&summary) && (old.is_some() || listed(&summary));
            if listed(&summary) {
                let at = s.items.partition_point(|p| {
                    (p.expires_at, &p.plan_id) < (summary.expires_at, &summary.plan_id)
                });
                s.items.insert(at, summary);
            }
            if changed {
                s.generation += 1;
            }
        });
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
                    self.whoami().await;
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
            let wait = match (&self.console, link) {
                (_, Link::Offline) => self.timing.offline.failed(),
                (Some(console), _) => self.poller.interval_at_least(console.poll_interval()),
                (None, _) => self.poller.interval(),
            };
            tokio::time::sleep(wait.min(retry_at - now)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn summary(id: &str, expires_at: &str, status: PlanStatus) -> PlanSummary {
        serde_json::from_value(json!({
            "plan_id": id, "plan_digest": "sha256:00", "capability_id": "c", "title": "T",
            "caller": {"agent_id": "agt_ops"}, "created_at": "2026-11-30T10:00:00Z",
            "expires_at": expires_at, "status": status,
            "estimated_cost": {"amount_min": "0", "amount_max": "0", "currency": "credits"},
            "effect_counts": {"direct": 1, "derived": 0}, "subjects_total": 0,
            "validation_counts": {"error": 0, "warning": 0, "info": 0}, "risk": [],
            "approvals": {"required": 1, "received": []}
        }))
        .unwrap()
    }

    #[tokio::test]
    async fn every_plan_event_is_counted_though_the_queue_does_not_show_its_plan() {
        let client = GatewayClient::new("http://127.0.0.1:9", None).unwrap();
        let (mut live, snapshots) = Live::new(client, Timing::default());
        live.apply(summary(
            "plan_ran",
            "2026-11-30T10:20:00Z",
            PlanStatus::Executed,
        ));
        let snapshot = snapshots.borrow();
        assert!(snapshot.items.is_empty());
        assert_eq!(snapshot.generation, 0, "the queue did not change");
        assert_eq!(snapshot.plan_events, 1, "but a plan did");
    }

    #[tokio::test]
    async fn events_keep_the_queue_in_expiry_order() {
        let client = GatewayClient::new("http://127.0.0.1:9", None).unwrap();
        let (mut live, snapshots) = Live::new(client, Timing::default());
        let pending = PlanStatus::PendingApproval;
        live.apply(summary("plan_b", "2026-11-30T10:20:00Z", pending));
        live.apply(summary("plan_c", "2026-11-30T10:30:00Z", pending));
        live.apply(summary("plan_a", "2026-11-30T10:20:00Z", pending));
        live.apply(summary("plan_d", "2026-11-30T10:10:00Z", PlanStatus::Stale));
        let order = |s: &Snapshot| {
            s.items
                .iter()
                .map(|p| p.plan_id.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            order(&snapshots.borrow()),
            ["plan_d", "plan_a", "plan_b", "plan_c"]
        );
        assert_eq!(snapshots.borrow().generation, 4);

        let listed = vec![
            summary("plan_c", "2026-11-30T10:30:00Z", pending),
            summary("plan_a", "2026-11-30T10:20:00Z", pending),
            summary("plan_b", "2026-11-30T10:20:00Z", pending),
            summary("plan_d", "2026-11-30T10:10:00Z", PlanStatus::Stale),
        ];
        live.set(Link::Online, Some(listed), None);
        assert_eq!(
            order(&snapshots.borrow()),
            ["plan_d", "plan_a", "plan_b", "plan_c"],
            "a listing out of order is put in order, so events land in their place"
        );
        assert_eq!(snapshots.borrow().generation, 4);

        live.apply(summary("plan_a", "2026-11-30T10:20:00Z", pending));
        assert_eq!(
            snapshots.borrow().generation,
            4,
            "the same summary changes nothing"
        );
        live.apply(summary(
            "plan_b",
            "2026-11-30T10:20:00Z",
            PlanStatus::Executed,
        ));
        live.apply(summary(
            "plan_x",
            "2026-11-30T10:20:00Z",
            PlanStatus::Rejected,
        ));
        assert_eq!(order(&snapshots.borrow()), ["plan_d", "plan_a", "plan_c"]);
        assert_eq!(
            snapshots.borrow().generation,
            5,
            "a plan never listed changes nothing"
        );
        live.apply(summary("plan_c", "2026-11-30T10:05:00Z", PlanStatus::Stale));
        assert_eq!(order(&snapshots.borrow()), ["plan_c", "plan_d", "plan_a"]);
        assert_eq!(snapshots.borrow().items[0].status, PlanStatus::Stale);
    }

    #[tokio::test]
    async fn a_blocked_plan_never_enters_the_queue() {
        let client = GatewayClient::new("http://127.0.0.1:9", None).unwrap();
        let (mut live, snapshots) = Live::new(client, Timing::default());
        let blocked = |id: &str| {
            let mut plan = summary(id, "2026-11-30T10:20:00Z", PlanStatus::PendingApproval);
            plan.risk = vec![RiskFlag::Bulk, RiskFlag::Blocked];
            plan
        };
        live.apply(blocked("plan_a"));
        assert!(snapshots.borrow().items.is_empty());
        assert_eq!(snapshots.borrow().generation, 0);
        let pending = summary(
            "plan_b",
            "2026-11-30T10:30:00Z",
            PlanStatus::PendingApproval,
        );
        live.set(
            Link::Online,
            Some(vec![blocked("plan_c"), pending.clone()]),
            None,
        );
        assert_eq!(snapshots.borrow().items, [pending]);
    }
}
