//! A gateway stopping (docs/operations.md, "Stopping"): first it drains (takes no new work,
//! tells its event streams and waits to go elsewhere), then, at the drain's deadline, what is
//! still running gives up: a provider call still out is recorded as of unknown outcome, never
//! left in flight and never run again.

use tokio::sync::watch;

/// Where a gateway is in stopping; every engine has one, untouched until it stops.
pub struct Shutdown {
    draining: watch::Sender<bool>,
    deadline: watch::Sender<bool>,
}

impl Default for Shutdown {
    fn default() -> Shutdown {
        Shutdown {
            draining: watch::Sender::new(false),
            deadline: watch::Sender::new(false),
        }
    }
}

impl Shutdown {
    /// Stopping begins: streams and waits end, telling their clients to come back.
    pub fn drain(&self) {
        self.draining.send_replace(true);
    }

    /// The drain's time is up: calls still out give up.
    pub fn pass_deadline(&self) {
        self.drain();
        self.deadline.send_replace(true);
    }

    /// Changes when stopping begins (it holds `true` from then on).
    pub fn draining(&self) -> watch::Receiver<bool> {
        self.draining.subscribe()
    }

    /// Resolves once the drain's deadline has passed; never, while the gateway serves.
    pub async fn deadline_passed(&self) {
        let mut deadline = self.deadline.subscribe();
        // The sender lives as long as the engine, which outlives every call it runs.
        let _ = deadline.wait_for(|passed| *passed).await;
    }
}
