//! The real desktop binary under tauri-driver and WebKitWebDriver, and the page it renders. The UI
//! is a skeleton that will be rewritten: every selector the benchmark depends on is here.

use std::net::TcpListener;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use fantoccini::{Client, ClientBuilder, Locator};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use serde_json::json;

pub const QUEUE_ROW: &str = "[data-testid='queue-row']";

pub fn queue_row(plan_id: &str) -> String {
    format!("[data-testid='queue-row'][data-plan-id='{plan_id}']")
}

/// An effect of `plan_id` rendered in the plan pane: its first screen.
pub fn plan_effect(plan_id: &str) -> String {
    format!("[data-testid='plan'][data-plan-id='{plan_id}'] [data-testid='effect']")
}

/// Clicks a row and reports, from inside the page, the milliseconds until the selected plan's
/// first effect is in the DOM and a frame with it has been painted.
const TIME_TO_FIRST_SCREEN: &str = r#"
const [rowSelector, effectSelector, done] = arguments;
const rows = document.querySelector("[data-testid='queue-rows']");
// The queue renders only the rows in view: scroll it a screen at a time until the row is there.
const seek = (top) => {
  const row = document.querySelector(rowSelector);
  if (row) { measure(row); return; }
  if (!rows || top > rows.scrollHeight) { done(-1); return; }
  rows.scrollTop = top;
  rows.dispatchEvent(new Event('scroll'));
  requestAnimationFrame(() => seek(top + Math.max(rows.clientHeight, 100)));
};
const measure = (row) => {
  const start = performance.now();
  const painted = () => requestAnimationFrame(() => done(performance.now() - start));
  const observer = new MutationObserver(() => {
    if (document.querySelector(effectSelector)) { observer.disconnect(); painted(); }
  });
  observer.observe(document.body, { childList: true, subtree: true });
  row.click();
};
seek(0);
"#;

/// tauri-driver in its own process group, so that WebKitWebDriver and the app end with it.
pub struct Driver {
    child: Child,
    pub port: u16,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let group = Pid::from_raw(self.child.id() as i32);
        let _ = killpg(group, Signal::SIGTERM);
        std::thread::sleep(Duration::from_millis(300));
        let _ = killpg(group, Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

impl Driver {
    /// Starts tauri-driver with the app's environment and waits until it listens.
    pub async fn start(env: &[(&str, String)]) -> anyhow::Result<Driver> {
        let port = free_port()?;
        let child = Command::new("tauri-driver")
            .args([
                "--port",
                &port.to_string(),
                "--native-port",
                &free_port()?.to_string(),
            ])
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .context("starting tauri-driver (make deps installs it)")?;
        let driver = Driver { child, port };
        let deadline = Instant::now() + Duration::from_secs(30);
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            if Instant::now() > deadline {
                bail!("tauri-driver did not listen within 30 s");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(driver)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A session: WebKitWebDriver starts `binary`.
    pub async fn session(&self, binary: &Path) -> anyhow::Result<Client> {
        // reqwest and fantoccini bring different rustls backends; the driver speaks plain HTTP.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut caps = serde_json::Map::new();
        caps.insert(
            "tauri:options".into(),
            json!({ "application": binary.display().to_string() }),
        );
        caps.insert("browserName".into(), json!("wry"));
        Ok(ClientBuilder::rustls()?
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{}", self.port))
            .await?)
    }
}

pub async fn wait_for(client: &Client, selector: &str, within: Duration) -> anyhow::Result<()> {
    client
        .wait()
        .every(Duration::from_millis(10))
        .at_most(within)
        .for_element(Locator::Css(selector))
        .await
        .with_context(|| format!("waiting for {selector}"))?;
    Ok(())
}

/// Waits until the header counts at least `count` pending plans (the queue renders only the rows
/// in view, so the DOM never holds them all).
pub async fn wait_for_pending(
    client: &Client,
    count: usize,
    within: Duration,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + within;
    loop {
        let found = client
            .execute(
                "const c = document.querySelector(\"[data-testid='pending-count']\");
                 return c ? parseInt(c.textContent, 10) || 0 : 0;",
                vec![],
            )
            .await?
            .as_u64()
            .unwrap_or(0) as usize;
        if found >= count {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{found} of {count} pending plans after {within:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Milliseconds from a click on `plan_id`'s queue row to its first screen, measured in the page.
pub async fn time_to_first_screen(client: &Client, plan_id: &str) -> anyhow::Result<f64> {
    let elapsed = client
        .execute_async(
            TIME_TO_FIRST_SCREEN,
            vec![json!(queue_row(plan_id)), json!(plan_effect(plan_id))],
        )
        .await?
        .as_f64()
        .context("the page reported no time")?;
    if elapsed < 0.0 {
        bail!("no queue row for {plan_id}");
    }
    Ok(elapsed)
}
