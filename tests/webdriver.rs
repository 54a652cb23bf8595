//! tauri-driver and WebKitWebDriver around the real desktop binary, for the desktop end-to-end
//! tests and the benchmark.

use std::net::TcpListener;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use serde_json::json;

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
        Driver::start_in(env, None).await
    }

    /// As [`Driver::start`], with tauri-driver (and so the app) run by `wrapper`: a private
    /// D-Bus session with its own keyring, say.
    pub async fn start_in(
        env: &[(&str, String)],
        wrapper: Option<&Path>,
    ) -> anyhow::Result<Driver> {
        let port = free_port()?;
        let mut command = match wrapper {
            Some(wrapper) => {
                let mut command = Command::new(wrapper);
                // The wrapper starts its own session only when it is not inside one already.
                command
                    .arg("tauri-driver")
                    .env_remove("COUNTERSIGN_KEYRING_SESSION");
                command
            }
            None => Command::new("tauri-driver"),
        };
        let child = command
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

    /// A session: WebKitWebDriver starts `binary`. tauri-driver listens before WebKitWebDriver
    /// behind it does, and answers "did not respond" meanwhile: asked again for up to 30 s.
    pub async fn session(&self, binary: &Path) -> anyhow::Result<Client> {
        self.session_with(binary, &[]).await
    }

    /// As [`Driver::session`], with `args` on the app's command line.
    pub async fn session_with(&self, binary: &Path, args: &[String]) -> anyhow::Result<Client> {
        let mut caps = serde_json::Map::new();
        caps.insert(
            "tauri:options".into(),
            json!({ "application": binary.display().to_string(), "args": args }),
        );
        caps.insert("browserName".into(), json!("wry"));
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match ClientBuilder::new(HttpConnector::new())
                .capabilities(caps.clone())
                .connect(&format!("http://127.0.0.1:{}", self.port))
                .await
            {
                Ok(client) => return Ok(client),
                Err(e) if Instant::now() < deadline => {
                    eprintln!("waiting for tauri-driver: {e}");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// Every queue row the page shows (the queue renders only the rows in view).
pub const QUEUE_ROW: &str = "[data-testid='queue-row']";

/// `plan_id`'s queue row.
pub fn queue_row(plan_id: &str) -> String {
    format!("{QUEUE_ROW}[data-plan-id='{plan_id}']")
}

/// The plan pane showing `plan_id`.
pub fn plan_pane(plan_id: &str) -> String {
    format!("[data-testid='plan'][data-plan-id='{plan_id}']")
}

/// An effect of `plan_id` rendered in the plan pane: its first screen.
pub fn plan_effect(plan_id: &str) -> String {
    format!("{} [data-testid='effect']", plan_pane(plan_id))
}

/// The first element `selector` finds, once there is one, within `within`.
pub async fn wait_for(
    client: &Client,
    selector: &str,
    within: Duration,
) -> anyhow::Result<Element> {
    client
        .wait()
        .every(Duration::from_millis(10))
        .at_most(within)
        .for_element(Locator::Css(selector))
        .await
        .with_context(|| format!("waiting for {selector}"))
}
