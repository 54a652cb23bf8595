//! Desktop notifications over the real session bus, watched with `dbus-monitor`: a new risky
//! plan's, and the reminders of plans about to expire and of snoozes that end, on a test clock
//! (`COUNTERSIGN_TEST_CLOCK`, docs/testing.md) so that minutes pass in seconds.
//! Run under `tests/with-keyring.sh` and `tests/with-display.sh` (as `make test` does).

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use countersign_e2e::proxy::FaultProxy;
use countersign_e2e::webdriver::queue_row;
use countersign_e2e::TestGateway;
use serde_json::json;

use crate::app::{eventually, serial, App, Launch};
use crate::demo_plans::{contractors_of_support, preview, retention_plan};

/// A notification server on the session bus: the one already there, or dunst started for the
/// test (the CI session has none).
pub struct NotificationServer(Option<Child>);

impl NotificationServer {
    pub fn ensure() -> anyhow::Result<NotificationServer> {
        if name_has_owner("org.freedesktop.Notifications")? {
            return Ok(NotificationServer(None));
        }
        let dunst = Command::new("dunst")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting dunst (make deps installs it)")?;
        let server = NotificationServer(Some(dunst));
        for _ in 0..100 {
            if name_has_owner("org.freedesktop.Notifications")? {
                return Ok(server);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        anyhow::bail!("dunst did not take org.freedesktop.Notifications")
    }
}

impl Drop for NotificationServer {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn name_has_owner(name: &str) -> anyhow::Result<bool> {
    let out = Command::new("dbus-send")
        .args([
            "--session",
            "--print-reply",
            "--dest=org.freedesktop.DBus",
            "/org/freedesktop/DBus",
            "org.freedesktop.DBus.NameHasOwner",
            &format!("string:{name}"),
        ])
        .output()?;
    Ok(String::from_utf8_lossy(&out.stdout).contains("boolean true"))
}

/// `dbus-monitor` watching the `Notify` calls on the session bus; each call's printed message.
pub struct NotifyCalls {
    monitor: Child,
    calls: Arc<Mutex<Vec<String>>>,
}

impl NotifyCalls {
    pub fn watch() -> anyhow::Result<NotifyCalls> {
        let mut monitor = Command::new("dbus-monitor")
            .args([
                "--session",
                "type='method_call',interface='org.freedesktop.Notifications',member='Notify'",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("starting dbus-monitor")?;
        let calls = Arc::new(Mutex::new(Vec::<String>::new()));
        let lines = BufReader::new(monitor.stdout.take().expect("piped"));
        let seen = calls.clone();
        std::thread::spawn(move || {
            for line in lines.lines().map_while(Result::ok) {
                let mut seen = seen.lock().unwrap();
                if line.starts_with("method call") && line.contains("member=Notify") {
                    seen.push(String::new());
                } else if let Some(call) = seen.last_mut() {
                    call.push_str(&line);
                    call.push('\n');
                }
            }
        });
        Ok(NotifyCalls { monitor, calls })
    }

    pub fn naming(&self, text: &str) -> usize {
        let calls = self.calls.lock().unwrap();
        calls.iter().filter(|call| call.contains(text)).count()
    }

    pub fn total(&self) -> usize {
        self.calls.lock().unwrap().len()
    }
}

impl Drop for NotifyCalls {
    fn drop(&mut self) {
        let _ = self.monitor.kill();
        let _ = self.monitor.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_risky_plan_sends_one_notify_call() -> anyhow::Result<()> {
    let _one = serial().await;
    let _server = NotificationServer::ensure()?;
    let gateway = TestGateway::start().await?;
    let agent = gateway.agent("ops").await?;
    let before = contractors_of_support(&agent).await?;
    let notify = NotifyCalls::watch()?;
    let code = gateway.invite("Dana").await?;
    let app = App::start(Launch::new(&gateway.url, &code)).await?;
    app.find(&queue_row(&before)).await?;

    let risky = preview(
        &agent,
        "memberships.grant",
        json!({"project": "prj_421", "subject": "usr_92", "role": "editor"}),
    )
    .await?;
    eventually("a Notify call for the new plan", || async {
        Ok(notify.naming(&risky) > 0)
    })
    .await?;
    // A calm plan after it, then a second risky one: once the second's call is in, the queue has
    // been through every pass that could have announced the first again, or the calm one.
    let calm = retention_plan(&agent, "prj_420", 45).await?;
    app.find(&queue_row(&calm)).await?;
    let marker = preview(
        &agent,
        "memberships.grant",
        json!({"project": "prj_421", "subject": "usr_41", "role": "editor"}),
    )
    .await?;
    eventually("a Notify call for the second risky plan", || async {
        Ok(notify.naming(&marker) > 0)
    })
    .await?;
    assert_eq!(notify.naming(&risky), 1, "once per plan");
    assert_eq!(notify.naming(&before), 0, "quiet on the first look");
    assert_eq!(notify.naming(&calm), 0, "a calm plan is no news");
    assert_eq!(notify.total(), 2);
    Ok(())
}

/// Ten minutes ahead, five times as fast: a fifteen-minute plan made just before the app starts
/// is under five minutes from its expiry when first listed, and stays there for a minute; a
/// snooze ends in seconds.
const TEST_CLOCK: &str = "600,5";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plans_about_to_expire_remind_once_and_a_snooze_comes_back() -> anyhow::Result<()> {
    let _one = serial().await;
    let _server = NotificationServer::ensure()?;
    let gateway = TestGateway::start().await?;
    let proxy = FaultProxy::start(gateway.url.trim_start_matches("http://")).await?;
    let agent = gateway.agent("ops").await?;
    let notify = NotifyCalls::watch()?;
    let expiring = retention_plan(&agent, "prj_184", 14).await?;
    let snoozed = retention_plan(&agent, "prj_420", 45).await?;
    let code = gateway.invite("Dana").await?;
    let mut launch = Launch::new(&proxy.url, &code);
    launch
        .env
        .push(("COUNTERSIGN_TEST_CLOCK", TEST_CLOCK.to_owned()));
    let app = App::start(launch).await?;
    eventually("a reminder for each of the two plans", || async {
        Ok(notify.naming(&expiring) == 1 && notify.naming(&snoozed) == 1)
    })
    .await?;
    assert_eq!(notify.naming("Expires in 5 minutes"), 2);

    app.open(&snoozed).await?;
    app.click("[data-testid='snooze-15']").await?;
    // The window moves on to the next plan and says until when this one sleeps.
    let note = app.text("[data-testid='snooze-note']").await?;
    assert!(note.contains(&snoozed), "{note}");
    assert_eq!(
        app.count(&queue_row(&snoozed)).await?,
        0,
        "out of the queue"
    );

    // Thirty plans come due together: made while the app is cut off, they arrive in one listing.
    proxy.down(true);
    app.find("[data-testid='link-state'][data-link='offline']")
        .await?;
    let mut thirty = Vec::new();
    for days in 60..90 {
        thirty.push(retention_plan(&agent, "prj_184", days).await?);
    }
    proxy.down(false);
    eventually("one notification for the thirty", || async {
        Ok(notify.naming("30 plans that need you expire within 5 minutes") == 1)
    })
    .await?;
    eventually("the snoozed plan back, with its notification", || async {
        Ok(notify.naming("Back from snooze") == 1)
    })
    .await?;
    app.find(&queue_row(&snoozed)).await?;
    app.shoot("reminders").await?;

    // Both came long after the first reminders, through many passes of the reminder loop.
    assert_eq!(notify.naming(&expiring), 1, "reminded once");
    assert_eq!(notify.naming(&snoozed), 2, "its reminder and its return");
    for plan in &thirty {
        assert_eq!(notify.naming(plan), 0, "{plan} is in the one notification");
    }
    assert_eq!(notify.total(), 4);
    Ok(())
}
