//! Follows the session's live snapshot: tells the window when the queue or the link changed,
//! keeps the tray's count, announces plans that arrive while the app runs, and brings back
//! snoozed plans and plans about to expire.

use std::sync::Arc;

use countersign_console::console::Console;
use countersign_console::live::notify::NotifyRules;
use countersign_console::live::reminders::{to_announce, Due};
use countersign_console::live::Snapshot;
use countersign_console::review::rules::{turn, Turn};
use countersign_desktop::memory::Release;
use countersign_desktop::seen::Seen;
use tauri::{AppHandle, Emitter, Manager};
use tokio::sync::{watch, Semaphore};

use crate::notification::{self, Arrival};
use crate::tray;

pub const QUEUE_CHANGED: &str = "queue-changed";
/// A plan changed at the gateway, whether or not the queue shows it (a plan ran, a standing
/// approval was used): the Standing screen reads its list again.
pub const PLANS_CHANGED: &str = "plans-changed";

const FETCHES_AT_ONCE: usize = 4;

/// How often ended snoozes and plans about to expire are looked for.
const REMINDERS_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// The approver's notification rules as they are when a plan arrives (they change in Settings).
pub type Rules = Arc<dyn Fn() -> NotifyRules + Send + Sync>;

pub async fn follow(
    app: AppHandle,
    console: Arc<Console>,
    mut changes: watch::Receiver<Snapshot>,
    rules: Rules,
) {
    let mut seen = Seen::default();
    // Plans already waiting on me: one that starts to (a rule widened to my team) is a reminder.
    let mut mine = Seen::default();
    let mut shown = None;
    let mut plan_events = 0;
    // Plans new to the queue since the window was last told: a screen reader hears of them.
    let mut arrived: Vec<String> = Vec::new();
    // Each arrival is fetched to be judged on its own flags; a burst of thousands (a busy agent)
    // must not become thousands of requests at once.
    let fetches = Arc::new(Semaphore::new(FETCHES_AT_ONCE));
    loop {
        let (now, pending, arrivals, events) = {
            let snapshot = changes.borrow_and_update();
            // The first look is the first listing, not the empty snapshot before it.
            let arrivals = match snapshot.last_sync {
                Some(_) => {
                    let ids = snapshot.items.iter().map(|p| p.plan_id.as_str());
                    let mut new: Vec<(String, Arrival)> = seen
                        .arrivals(ids)
                        .into_iter()
                        .map(|id| (id, Arrival::New))
                        .collect();
                    let me = snapshot.me.as_ref();
                    let waiting = snapshot.items.iter().filter(|p| turn(p, me) == Turn::Me);
                    for plan_id in mine.arrivals(waiting.map(|p| p.plan_id.as_str())) {
                        if !new.iter().any(|(id, _)| *id == plan_id) {
                            new.push((plan_id, Arrival::NowMine));
                        }
                    }
                    new
                }
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
            // The tray counts the plans waiting on this approver, or every plan if they asked.
            let counting = rules();
            let me = snapshot.me.as_ref();
            let pending = snapshot
                .items
                .iter()
                .filter(|p| counting.counts(turn(p, me)))
                .count();
            (now, pending, arrivals, snapshot.plan_events)
        };
        arrived.extend(
            arrivals
                .iter()
                .filter(|(_, why)| matches!(why, Arrival::New))
                .map(|(id, _)| id.clone()),
        );
        if events != plan_events {
            plan_events = events;
            let _ = app.emit(PLANS_CHANGED, ());
        }
        if shown.as_ref() != Some(&now) {
            shown = Some(now);
            // The window is told what moved within its rows; before it asked for any, to ask
            // (null): the link or the outbox may have moved while its first ask was under way.
            let change = console.queue_change(&std::mem::take(&mut arrived));
            let _ = app.emit(QUEUE_CHANGED, change);
            app.state::<Release>().after_work();
            tray::set_pending(&app, pending);
        }
        for (plan_id, arrival) in arrivals {
            let (app, console, fetches) = (app.clone(), console.clone(), fetches.clone());
            let rules = rules.clone();
            tauri::async_runtime::spawn(async move {
                if let Ok(_permit) = fetches.acquire().await {
                    notification::announce(app, console, plan_id, arrival, || rules()).await;
                }
            });
        }
        remind(&app, &console, &rules);
        // The clock alone brings a plan back (a snooze that ends, a plan about to expire):
        // looked for every few seconds until the queue changes, and nothing else is redone.
        loop {
            tokio::select! {
                changed = changes.changed() => match changed {
                    Ok(()) => break,
                    Err(_) => return,
                },
                () = tokio::time::sleep(console.clock().every(REMINDERS_EVERY)) => remind(&app, &console, &rules),
            }
        }
    }
}

/// Brings back what is due, each with a notification: ended snoozes (their rows come back with
/// the change of the queue that ending them made) and plans about to expire that wait on this
/// approver.
fn remind(app: &AppHandle, console: &Arc<Console>, rules: &Rules) {
    let due = console.due();
    if due.is_empty() {
        return;
    }
    let (one_by_one, more) = to_announce(due);
    if let Some((count, first)) = more {
        notification::expiring(app, count, &first);
    }
    for (plan_id, why) in one_by_one {
        let arrival = match why {
            Due::Unsnoozed => Arrival::Unsnoozed,
            Due::ExpiresSoon => Arrival::ExpiresSoon,
        };
        let (app, console, rules) = (app.clone(), console.clone(), rules.clone());
        tauri::async_runtime::spawn(async move {
            notification::announce(app, console, plan_id, arrival, || rules()).await;
        });
    }
}
