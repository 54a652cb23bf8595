//! Keeps the queue current and tells the window when it changed.

use std::time::Duration;

use countersign_console::sync::Backoff;
use tauri::{AppHandle, Emitter, Manager};

use crate::commands::AppModel;

pub async fn run(app: AppHandle) {
    let mut backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(60));
    let mut was_online = None;
    loop {
        let model = app.state::<AppModel>();
        let outcome = {
            let mut session = model.session.lock().await;
            match session.as_mut() {
                Some(session) => {
                    let result = session.sync().await;
                    Some((result, session.console.poller().interval()))
                }
                None => None,
            }
        };
        let wait = match outcome {
            None => {
                let _ = app.emit("queue-changed", ());
                return;
            }
            Some((Ok(changed), interval)) => {
                backoff.succeeded();
                if changed || was_online != Some(true) {
                    let _ = app.emit("queue-changed", ());
                }
                was_online = Some(true);
                interval
            }
            Some((Err(e), _)) => {
                tracing::warn!(error = %e, "sync failed");
                if was_online != Some(false) {
                    let _ = app.emit("queue-changed", ());
                }
                was_online = Some(false);
                backoff.failed()
            }
        };
        tokio::time::sleep(wait).await;
    }
}
