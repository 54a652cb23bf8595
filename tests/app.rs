//! The real desktop binary as the console's end-to-end tests drive it: launched under
//! tauri-driver against a gateway, its native confirmation answered with `xdotool`, and
//! screenshots of what it showed.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use countersign_e2e::webdriver::{plan_pane, queue_row, wait_for, Driver};
use fantoccini::elements::Element;
use fantoccini::{Client, Locator};
use serde_json::json;
use tempfile::TempDir;

const WAIT: Duration = Duration::from_secs(60);

/// Thirty frames of a transparent pixel in the window's corner moving to and fro, then gone.
const KEEP_PAINTING: &str = "const pixel = document.createElement('div');
    pixel.style.cssText = 'position:fixed;left:0;top:0;width:1px;height:1px;opacity:0.01;pointer-events:none';
    document.body.append(pixel);
    let frames = 0;
    const step = () => {
      pixel.style.transform = `translateX(${frames % 2}px)`;
      if (++frames < 30) requestAnimationFrame(step); else pixel.remove();
    };
    requestAnimationFrame(step);";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target"))
}

fn desktop_binary() -> PathBuf {
    let path = std::env::var_os("COUNTERSIGN_DESKTOP_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| target_dir().join("debug/countersign"));
    assert!(
        path.exists(),
        "{} is missing: build it first (make test does)",
        path.display()
    );
    path
}

/// One app at a time: the native dialogs are found by title and answered with the keyboard.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

pub async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    assert!(
        std::env::var_os("DISPLAY").is_some(),
        "no X display: run through `make test`, which starts Xvfb"
    );
    // Under nextest each test is a process of its own: the lock above holds within one only, and
    // the desktop test group of .config/nextest.toml keeps the apps one at a time.
    if std::env::var_os("NEXTEST_RUN_ID").is_some() {
        assert_eq!(
            std::env::var("NEXTEST_TEST_GROUP").as_deref(),
            Ok("desktop"),
            "a test that starts the app belongs in the desktop test group (.config/nextest.toml)"
        );
    }
    ONE_AT_A_TIME.lock().await
}

/// How to start one instance of the app.
pub struct Launch<'a> {
    pub gateway_url: &'a str,
    pub enrollment_code: &'a str,
    /// In a D-Bus session and keyring of its own: a second approver on the same machine.
    pub own_keyring: bool,
    pub env: Vec<(&'static str, String)>,
    /// On the app's command line: a `countersign://plan/…` link, say.
    pub args: Vec<String>,
}

impl<'a> Launch<'a> {
    pub fn new(gateway_url: &'a str, enrollment_code: &'a str) -> Launch<'a> {
        Launch {
            gateway_url,
            enrollment_code,
            own_keyring: false,
            env: Vec::new(),
            args: Vec::new(),
        }
    }
}

/// A running app with its own data and config directories.
pub struct App {
    pub client: Client,
    _driver: Driver,
    _dirs: (TempDir, TempDir),
}

impl App {
    pub async fn start(launch: Launch<'_>) -> anyhow::Result<App> {
        let data = tempfile::tempdir()?;
        let config = tempfile::tempdir()?;
        let mut env = vec![
            ("COUNTERSIGN_GATEWAY_URL", launch.gateway_url.to_owned()),
            (
                "COUNTERSIGN_ENROLLMENT_CODE",
                launch.enrollment_code.to_owned(),
            ),
            ("COUNTERSIGN_DATA_DIR", data.path().display().to_string()),
            (
                "COUNTERSIGN_CONFIG_DIR",
                config.path().display().to_string(),
            ),
            ("WEBKIT_DISABLE_DMABUF_RENDERER", "1".to_owned()),
        ];
        env.extend(launch.env);
        let wrapper = repo().join("tests/with-keyring.sh");
        let driver =
            Driver::start_in(&env, launch.own_keyring.then_some(wrapper.as_path())).await?;
        let client = driver.session_with(&desktop_binary(), &launch.args).await?;
        let app = App {
            client,
            _driver: driver,
            _dirs: (data, config),
        };
        app.find("[data-testid='link-state'][data-link='online']")
            .await
            .context("the app never came online")?;
        Ok(app)
    }

    pub async fn find(&self, css: &str) -> anyhow::Result<Element> {
        self.find_within(css, WAIT).await
    }

    pub async fn find_within(&self, css: &str, wait: Duration) -> anyhow::Result<Element> {
        wait_for(&self.client, css, wait).await
    }

    pub async fn click(&self, css: &str) -> anyhow::Result<()> {
        self.find(css).await?.click().await?;
        Ok(())
    }

    pub async fn count(&self, css: &str) -> anyhow::Result<usize> {
        Ok(self.client.find_all(Locator::Css(css)).await?.len())
    }

    pub async fn text(&self, css: &str) -> anyhow::Result<String> {
        Ok(self.find(css).await?.text().await?)
    }

    /// Opens `plan_id` from the queue and waits until the plan pane shows it.
    pub async fn open(&self, plan_id: &str) -> anyhow::Result<Element> {
        self.click(&queue_row(plan_id)).await?;
        self.find(&plan_pane(plan_id)).await
    }

    /// Writes what the window shows, in the light and the dark theme, to
    /// `target/screenshots/<name>-light.png` and `-dark.png`; the theme the window had stays.
    pub async fn shoot(&self, name: &str) -> anyhow::Result<()> {
        let dir = target_dir().join("screenshots");
        std::fs::create_dir_all(&dir)?;
        let set = "const root = document.documentElement; const was = root.dataset.theme;
            root.dataset.theme = arguments[0]; return was ?? 'system';";
        let mut was = None;
        let mut found = Vec::new();
        for theme in ["light", "dark"] {
            let before = self.client.execute(set, vec![json!(theme)]).await?;
            was.get_or_insert(before);
            // Two frames, so the page is painted in the new colours.
            let settle = "const done = arguments[0];
                requestAnimationFrame(() => requestAnimationFrame(() => done(null)));";
            self.client.execute_async(settle, vec![]).await?;
            // WebKit's screenshot waits for the page's next presentation update, which a window
            // with nothing moving never makes (its countdowns change once a minute): a pixel that
            // cannot be seen moves for half a second meanwhile.
            self.client.execute(KEEP_PAINTING, vec![]).await?;
            let png = self.client.screenshot().await?;
            std::fs::write(dir.join(format!("{name}-{theme}.png")), png)?;
            let report = self.audit().await?;
            std::fs::write(
                dir.join(format!("{name}-{theme}-axe.json")),
                serde_json::to_vec_pretty(&report)?,
            )?;
            found.extend(violations(&report, theme));
        }
        self.client
            .execute(set, vec![was.unwrap_or(json!("system"))])
            .await?;
        if !found.is_empty() {
            bail!(
                "axe-core finds {} WCAG 2.2 A/AA violation(s) on {name} (report beside its \
                 screenshots):\n{}",
                found.len(),
                found.join("\n")
            );
        }
        Ok(())
    }

    /// axe-core, as npm ships it (pinned in ui/package.json), run on the window as it is now,
    /// for WCAG 2.2 A and AA: its report.
    async fn audit(&self) -> anyhow::Result<serde_json::Value> {
        let loaded = self
            .client
            .execute("return typeof window.axe === 'object';", vec![])
            .await?;
        if loaded != json!(true) {
            let path = repo().join("ui/node_modules/axe-core/axe.min.js");
            let source = std::fs::read_to_string(&path).with_context(|| {
                format!("{}: run npm ci in ui (make test does)", path.display())
            })?;
            self.client.execute(&source, vec![]).await?;
        }
        let run = "const done = arguments[0];
            axe.run(document, {
              runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa']},
              resultTypes: ['violations'],
            }).then((r) => done(JSON.stringify({url: r.url, violations: r.violations.map((v) => ({
                id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.map((n) => ({target: n.target, html: n.html.slice(0, 400),
                                            summary: n.failureSummary})),
              }))})))
              .catch((e) => done(JSON.stringify({error: String(e)})));";
        let answer = self.client.execute_async(run, vec![]).await?;
        let report: serde_json::Value = serde_json::from_str(answer.as_str().unwrap_or("{}"))?;
        if let Some(error) = report.get("error") {
            bail!("axe-core did not run: {error}");
        }
        Ok(report)
    }
}

/// Each violation in an axe-core report, one line per element: rule, impact, element, why.
fn violations(report: &serde_json::Value, theme: &str) -> Vec<String> {
    let mut lines = Vec::new();
    for v in report["violations"].as_array().into_iter().flatten() {
        for node in v["nodes"].as_array().into_iter().flatten() {
            lines.push(format!(
                "  [{theme}] {} ({}): {} — {} — {}",
                v["id"].as_str().unwrap_or("?"),
                v["impact"].as_str().unwrap_or("?"),
                node["target"],
                node["html"].as_str().unwrap_or(""),
                node["summary"].as_str().unwrap_or("").replace('\n', " "),
            ));
        }
    }
    lines
}

/// Polls `check` until it holds.
pub async fn eventually<F, Fut>(what: &str, mut check: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<bool>>,
{
    let deadline = Instant::now() + WAIT;
    loop {
        if check().await? {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!(
                "waited {WAIT:?} for {what}; the windows showing: {:?}",
                showing()
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The titles of the windows on the display, for a wait that failed: a native dialog nobody
/// answered, or none where one was expected, says why.
fn showing() -> Vec<String> {
    let names = Command::new("timeout")
        .args(["5", "xdotool", "search", "--onlyvisible", "--name", "."])
        .output();
    let Ok(names) = names else {
        return Vec::new();
    };
    String::from_utf8_lossy(&names.stdout)
        .lines()
        .filter_map(|window| {
            let title = Command::new("xdotool")
                .args(["getwindowname", window])
                .output()
                .ok()?;
            Some(String::from_utf8_lossy(&title.stdout).trim().to_owned())
        })
        .filter(|title| !title.is_empty())
        .collect()
}

/// The native confirmation titled `Approve …` (before a signature) or `Change this request?`
/// (before an amendment), once it shows, within `wait`.
fn confirmation(wait: Duration) -> anyhow::Result<Option<String>> {
    let found = Command::new("timeout")
        .arg(wait.as_secs().to_string())
        .args([
            "xdotool",
            "search",
            "--sync",
            "--onlyvisible",
            "--name",
            // The titles of the confirmations before a signature, an amendment, and a remedy
            // for an email (sent elsewhere, again, or never).
            "^(Approve |Change this request|Send |Cancel )",
        ])
        .output()
        .context("running xdotool (make deps installs it)")?;
    let window = String::from_utf8_lossy(&found.stdout)
        .lines()
        .last()
        .map(str::to_owned);
    Ok(window)
}

/// Answers the native confirmation with the keyboard, as an approver would: Return signs,
/// Escape cancels. Returns the dialog's title.
pub fn answer_confirmation(sign: bool) -> anyhow::Result<String> {
    let window = confirmation(WAIT)?.context("no confirmation dialog showed")?;
    answer_window(&window, sign)?.context("the confirmation closed before it was answered")
}

/// Answers with Return a confirmation that shows within a second, if one does: its title.
pub fn answer_if_showing() -> anyhow::Result<Option<String>> {
    match confirmation(Duration::from_secs(1))? {
        Some(window) => answer_window(&window, true),
        None => Ok(None),
    }
}

/// Answers the dialog `window` found: its title, or `None` if it closed meanwhile (one answered
/// a moment ago may still be listed while it closes).
fn answer_window(window: &str, sign: bool) -> anyhow::Result<Option<String>> {
    let title = Command::new("xdotool")
        .args(["getwindowname", window])
        .output()?;
    if !title.status.success() {
        return Ok(None);
    }
    let title = String::from_utf8_lossy(&title.stdout).trim().to_owned();
    let key = if sign { "Return" } else { "Escape" };
    let status = Command::new("timeout")
        .args([
            "10",
            "xdotool",
            "windowfocus",
            "--sync",
            window,
            "key",
            "--clearmodifiers",
            key,
        ])
        .status()?;
    Ok(status.success().then_some(title))
}

/// After a click that signs: answers the confirmation with Return if one shows (a risky plan
/// asks, a calm one does not), until `done` shows in the window.
pub async fn answer_if_asked(app: &App, done: &str) -> anyhow::Result<()> {
    eventually(done, || async {
        if confirmation(Duration::from_secs(1))?.is_some() {
            answer_confirmation(true)?;
        }
        Ok(app.count(done).await? > 0)
    })
    .await
}
