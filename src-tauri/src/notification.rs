//! A desktop notification for a new plan the approver's rules select, judged on the fetched
//! plan's own risk flags. notify-rust, because on Linux it is a plain
//! `org.freedesktop.Notifications.Notify` call and reports the click (the "default" action),
//! which tauri-plugin-notification does not on desktop.

use std::sync::Arc;

use countersign_console::console::Console;
use countersign_console::live::notify::NotifyRules;
use countersign_console::review::rules::Turn;
use countersign_console::review::PlanView;
use countersign_console::text::{notification_body, visible};
use notify_rust::Notification;
use tauri::AppHandle;

use crate::window;

/// Why a plan is announced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// It arrived in the queue.
    New,
    /// It was there, and now waits on this approver: a rule of the gateway's policy widened to
    /// them. A reminder, whatever the plan's risk.
    NowMine,
    /// The approver snoozed it, and the snooze ended.
    Unsnoozed,
    /// It waits on this approver and expires within five minutes: once.
    ExpiresSoon,
}

/// Fetches `plan_id` and shows a notification when the approver's rules, as `rules` gives them
/// once the plan is fetched (they change in Settings), select it, or when it now waits on them.
pub async fn announce(
    app: AppHandle,
    console: Arc<Console>,
    plan_id: String,
    arrival: Arrival,
    rules: impl Fn() -> NotifyRules,
) {
    let plan = match console.plan_view(&plan_id).await {
        Ok(plan) => plan,
        Err(e) => {
            tracing::debug!(plan_id, error = %e, "a new plan could not be fetched to judge it");
            return;
        }
    };
    let announced = match arrival {
        Arrival::New => rules().selects_plan(&plan),
        Arrival::NowMine | Arrival::ExpiresSoon => {
            plan.status == "pending_approval"
                && plan.turn == Turn::Me
                && !plan.risk.iter().any(|f| f == "blocked")
        }
        Arrival::Unsnoozed => matches!(plan.status.as_str(), "pending_approval" | "stale"),
    };
    if !announced {
        return;
    }
    let (mut summary, body) = words(&plan);
    let lead = match arrival {
        Arrival::New => None,
        Arrival::NowMine => Some("Now waiting on you"),
        Arrival::Unsnoozed => Some("Back from snooze"),
        Arrival::ExpiresSoon => Some("Expires in 5 minutes"),
    };
    if let Some(lead) = lead {
        summary = visible(&format!("{lead}: {}", plan.capability_id));
    }
    // Waiting for the click blocks: a thread of its own per notification shown.
    std::thread::spawn(move || show(&app, &plan_id, &summary, &body));
}

/// One notification for `count` plans waiting on this approver that expire within five minutes;
/// a click opens the first of them (`first`). Nothing is fetched: it names none of their words.
pub fn expiring(app: &AppHandle, count: usize, first: &str) {
    let (app, first) = (app.clone(), first.to_owned());
    let summary = format!("{count} plans that need you expire within 5 minutes");
    let body = "Open Countersign to decide them before they expire.".to_owned();
    std::thread::spawn(move || show(&app, &first, &summary, &body));
}

/// The notification's summary and body, every character visible and the body's markup escaped:
/// notification servers read bodies as markup, and the words come from an agent's plan. Only
/// words the plan signs: its capability and what its effects do, never the gateway's label.
fn words(plan: &PlanView) -> (String, String) {
    let what = if plan.consequence.is_empty() {
        &plan.gist
    } else {
        &plan.consequence
    };
    texts(&plan.capability_id, what, &plan.plan_id, &plan.agent_id)
}

fn texts(capability: &str, what: &str, plan_id: &str, agent_id: &str) -> (String, String) {
    (
        visible(&format!("To approve: {capability}")),
        notification_body(&format!("{what}\n{plan_id} · agent {agent_id}")),
    )
}

fn show(app: &AppHandle, plan_id: &str, summary: &str, body: &str) {
    let shown = Notification::new()
        .appname("Countersign")
        .summary(summary)
        .body(body)
        .icon("countersign")
        .action("default", "Open")
        .show();
    match shown {
        #[cfg(all(unix, not(target_os = "macos")))]
        Ok(handle) => handle.wait_for_action(|action| {
            if action == "default" {
                window::open_plan(app, plan_id);
            }
        }),
        #[cfg(not(all(unix, not(target_os = "macos"))))]
        Ok(_) => {
            let _ = (app, plan_id);
        }
        Err(e) => tracing::warn!(plan_id, error = %e, "the notification could not be shown"),
    }
}

#[cfg(test)]
mod tests {
    use super::texts;

    #[test]
    fn agent_words_reach_a_notification_visible_and_never_as_markup() {
        let (summary, body) = texts(
            "Rename \u{202E}txt.exe",
            "grants <b>admin</b> & more",
            "plan_1",
            "agt_ops",
        );
        assert_eq!(summary, "To approve: Rename \u{FFFD}txt.exe");
        assert_eq!(
            body,
            "grants &lt;b&gt;admin&lt;/b&gt; &amp; more\nplan_1 · agent agt_ops"
        );
    }
}
