//! Snoozing from the console: the queue's rows carry until when, and the desktop asks what is due
//! (`reminders`). A snooze that begins or ends is a change of the queue like any other: it moves
//! the snapshot's generation, so the live change the window is sent carries the row, whatever
//! clock the window reads.

use crate::console::Console;
use crate::error::ConsoleError;
use crate::live::reminders::Due;

impl Console {
    /// Hides `plan_id` from the queue's default view for `minutes`.
    pub fn snooze(&self, plan_id: &str, minutes: u32) -> Result<(), ConsoleError> {
        let expires_at = {
            let snapshot = self.publisher().borrow();
            snapshot
                .items
                .iter()
                .find(|p| p.plan_id == plan_id)
                .map(|p| p.expires_at)
                .ok_or_else(|| {
                    ConsoleError::Invalid(format!("Plan {plan_id} is not in the queue."))
                })?
        };
        self.snoozes()
            .snooze(plan_id, expires_at, minutes, self.clock().now())?;
        self.queue_moved();
        Ok(())
    }

    pub fn unsnooze(&self, plan_id: &str) {
        self.snoozes().unsnooze(plan_id);
        self.queue_moved();
    }

    /// The plans to bring to the approver again now; nothing before the queue was first listed,
    /// so that snoozes kept from an earlier run are judged against the plans, not against none.
    pub fn due(&self) -> Vec<(String, Due)> {
        let due = {
            let snapshot = self.publisher().borrow();
            if snapshot.last_sync.is_none() {
                return Vec::new();
            }
            self.snoozes()
                .due(&snapshot.items, snapshot.me.as_ref(), self.clock().now())
        };
        if due.iter().any(|(_, why)| *why == Due::Unsnoozed) {
            self.queue_moved();
        }
        due
    }

    fn queue_moved(&self) {
        self.publisher().send_modify(|s| s.generation += 1);
    }
}
