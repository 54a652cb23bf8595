//! Follows the session's live snapshot: tells the window when the queue or the link changed,
//! keeps the tray's count, and announces plans that arrive while the app runs.

use std::sync::Arc;

use countersign_console::console::Console;
use countersign_console::live::Snapshot;
use countersign_desktop::seen::Seen;
use tauri::{AppHandle, Emitter};
use tokio::sync::watch;

use crate::{notification, tray};

pub const QUEUE_CHANGED: &str = "queue-changed";

pub async fn follow(app: AppHandle, console: Arc<Console>, mut changes: watch::Receiver<Snapshot>) {
    let mut seen = Seen::default();
    let mut shown = None;
    loop {
        let (now, pending, arrivals) = {
            let snapshot = changes.borrow_and_update();
            // The first look is the first listing, not the empty snapshot before it.
            let arrivals = match snapshot.last_sync {
                Some(_) => seen.arrivals(snapshot.items.iter().map(|p| p.plan_id.as_str())),
                None => Vec::new(),
            };
            // Everything the window shows but the time of the last sync, which the header
            // reads from status() when it redraws.
            let now = (
                snapshot.generation,
                snapshot.link,
                snapshot.outbox,
                snapshot.queued.clone(),
                snapshot.last_error.as_ref().map(|e| e.code.clone()),
            );
            (now, snapshot.items.len(), arrivals)
        };
        if shown.as_ref() != Some(&now) {
            shown = Some(now);
            let _ = app.emit(QUEUE_CHANGED, ());
            tray::set_pending(&app, pending);
        }
        for plan_id in arrivals {
            tauri::async_runtime::spawn(notification::announce(
                app.clone(),
                console.clone(),
                plan_id,
            ));
        }
        if changes.changed().await.is_err() {
            return;
        }
    }
}
