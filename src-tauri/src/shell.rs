//! The session behind the window: on the configured gateway, or on a demo gateway this process
//! starts. It is replaced whole when the gateway changes; commands take a clone of the current
//! one and never hold a lock across network I/O.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use countersign_console::error::{ConsoleError, ErrorView};
use countersign_console::live::notify::NotifyRules;
use countersign_console::live::sync::Backoff;
use countersign_console::session::{self, Session, SessionConfig};
use countersign_console::settings::{self, Settings, SettingsView};
use countersign_embedded::{CoApprover, Embedded};
use tauri::async_runtime::JoinHandle;
use tauri::{AppHandle, Emitter, Manager};

use crate::config::Env;
use crate::confirm::NativeConfirm;
use crate::{follow, window};

pub struct Shell {
    pub env: Env,
    current: RwLock<Current>,
    /// Bumped by every start, so only the latest of two overlapping starts is kept.
    starts: AtomicU64,
    rules: RwLock<NotifyRules>,
    /// Plans named by deep links before the session could show them.
    waiting_links: Mutex<Vec<String>>,
    /// The last plan a link named, for a window that starts listening after the link came: at
    /// start the link is read before the page has loaded.
    linked: Mutex<Option<String>>,
}

enum Current {
    Starting,
    Failed(ErrorView),
    Running(Arc<Running>),
}

/// A session and what runs for it; dropping the last clone stops its tasks and demo gateway.
pub struct Running {
    pub session: Session,
    tasks: Vec<JoinHandle<()>>,
    _demo: Option<Embedded>,
}

impl Drop for Running {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

fn starting() -> ErrorView {
    ErrorView {
        code: "starting".to_owned(),
        message: "Connecting to the gateway…".to_owned(),
    }
}

impl Shell {
    pub fn new(env: Env) -> Shell {
        Shell {
            env,
            current: RwLock::new(Current::Starting),
            starts: AtomicU64::new(0),
            rules: RwLock::new(NotifyRules::default()),
            waiting_links: Mutex::new(Vec::new()),
            linked: Mutex::new(None),
        }
    }

    /// The current session, or why there is none (`starting`, or the error it failed with).
    pub fn running(&self) -> Result<Arc<Running>, ErrorView> {
        match &*self.current.read().unwrap_or_else(|e| e.into_inner()) {
            Current::Running(r) => Ok(r.clone()),
            Current::Starting => Err(starting()),
            Current::Failed(e) => Err(e.clone()),
        }
    }

    pub fn rules(&self) -> NotifyRules {
        self.rules.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn set(&self, current: Current) {
        // The old session is dropped outside the lock: its drop aborts tasks.
        let old = std::mem::replace(
            &mut *self.current.write().unwrap_or_else(|e| e.into_inner()),
            current,
        );
        drop(old);
    }

    pub fn settings(&self) -> Result<SettingsView, ErrorView> {
        settings::load_settings(&self.env.config_dir).map_err(|e| e.view())
    }

    /// What applies without a new session: the notification rules.
    fn apply(&self, settings: &Settings) {
        *self.rules.write().unwrap_or_else(|e| e.into_inner()) = settings.notify.clone();
        if let Ok(running) = self.running() {
            running
                .session
                .console()
                .set_poll_interval(Duration::from_secs(settings.poll_interval_secs));
        }
    }

    /// Opens `plan_id` in the window now, or once a session can show it.
    pub fn open_plan(&self, app: &AppHandle, plan_id: String) {
        *self.linked.lock().unwrap_or_else(|e| e.into_inner()) = Some(plan_id.clone());
        if self.running().is_ok() {
            window::open_plan(app, &plan_id);
        } else {
            self.waiting_links
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(plan_id);
        }
    }

    /// The plan a link named, once, when a session can show it; before that the session's start
    /// sends it to the window.
    pub fn take_linked(&self) -> Option<String> {
        self.running().ok()?;
        self.linked.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// Starts (or restarts) the session the settings name; the window shows `starting` meanwhile. A
/// gateway that does not answer yet is tried again, backing off, until a later start replaces
/// this one.
pub fn restart(app: &AppHandle) {
    let shell = app.state::<Shell>();
    let start = shell.starts.fetch_add(1, Ordering::SeqCst) + 1;
    shell.set(Current::Starting);
    let _ = app.emit(follow::QUEUE_CHANGED, ());
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let shell = app.state::<Shell>();
        let mut backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(60));
        loop {
            let outcome = match shell.settings() {
                Ok(view) => {
                    shell.apply(&view.settings);
                    // The environment's code is for a first enrollment only: after it, a
                    // changed URL with the code still set would otherwise enroll anywhere.
                    let code = shell
                        .env
                        .enrollment_code
                        .clone()
                        .filter(|_| !session::enrolled_anywhere(&shell.env.data_dir));
                    open(&app, view.settings.gateway_url, code).await
                }
                Err(e) => Err(e),
            };
            let e = match outcome {
                Ok(session) => return install(&app, start, session),
                Err(e) => e,
            };
            tracing::error!(code = %e.code, message = %e.message, "the console could not start");
            if shell.starts.load(Ordering::SeqCst) != start {
                return;
            }
            let again = e.code == "unreachable";
            shell.set(Current::Failed(e));
            let _ = app.emit(follow::QUEUE_CHANGED, ());
            if !again {
                return;
            }
            tokio::time::sleep(backoff.failed()).await;
            if shell.starts.load(Ordering::SeqCst) != start {
                return;
            }
        }
    });
}

/// Enrolls with `url` using `code`, then follows that gateway and keeps it in the settings.
/// The session before stays in place until the new one stands.
pub async fn enroll(app: &AppHandle, url: String, code: String) -> Result<Arc<Running>, ErrorView> {
    let url = url.trim().to_owned();
    if url.is_empty() || code.trim().is_empty() {
        return Err(ConsoleError::Invalid(
            "a gateway URL and an enrollment code are needed".into(),
        )
        .view());
    }
    let session = open(app, Some(url.clone()), Some(code.trim().to_owned())).await?;
    keep_url(app, &url)?;
    let shell = app.state::<Shell>();
    let start = shell.starts.fetch_add(1, Ordering::SeqCst) + 1;
    install(app, start, session);
    shell.running()
}

/// Keeps `url` in the settings as the gateway to follow.
fn keep_url(app: &AppHandle, url: &str) -> Result<(), ErrorView> {
    let shell = app.state::<Shell>();
    let mut saved = shell.settings()?.settings;
    saved.gateway_url = Some(url.to_owned());
    settings::save_settings(&shell.env.config_dir, &saved).map_err(|e| e.view())?;
    Ok(())
}

/// Moves the credential of the gateway the settings name to `url` (the gateway moved), after a
/// native confirmation naming both URLs and a fresh identity proof; then follows it there. It
/// needs no running session: a gateway that moved no longer answers where it was.
pub async fn move_credential(app: &AppHandle, url: String) -> Result<Arc<Running>, ErrorView> {
    let shell = app.state::<Shell>();
    let view = shell.settings()?;
    if view.overridden.iter().any(|f| f == "gateway_url") {
        return Err(ConsoleError::Invalid(
            "the gateway URL is set by COUNTERSIGN_GATEWAY_URL: move the credential with \
             `countersign-cli move-credential`, then change the variable"
                .to_owned(),
        )
        .view());
    }
    let Some(from) = view.settings.gateway_url else {
        return Err(ConsoleError::Invalid(
            "the demo gateway's credential follows it by itself".to_owned(),
        )
        .view());
    };
    let gateway_id = session::gateway_at(&shell.env.data_dir, &from)
        .ok_or_else(|| ConsoleError::NotEnrolled.view())?;
    let url = url.trim().to_owned();
    let confirm = NativeConfirm::moving(app);
    session::move_credential(&shell.env.data_dir, &gateway_id, &url, &confirm)
        .await
        .map_err(|e| e.view())?;
    // Moved: the session on the old URL stops sending the token there, whatever comes next.
    shell.set(Current::Starting);
    let _ = app.emit(follow::QUEUE_CHANGED, ());
    keep_url(app, &url)?;
    match open(app, Some(url), None).await {
        Ok(session) => {
            let start = shell.starts.fetch_add(1, Ordering::SeqCst) + 1;
            install(app, start, session);
            shell.running()
        }
        Err(e) => {
            restart(app);
            Err(e)
        }
    }
}

/// Saves the settings; a new gateway means a new session, the rest applies as it is. The URL
/// changes only to a gateway this machine holds a credential for there (or to the demo): a new
/// gateway is enrolled with, a moved one is moved to.
pub fn save(app: &AppHandle, settings: &Settings) -> Result<SettingsView, ErrorView> {
    let shell = app.state::<Shell>();
    let before = shell.settings()?.settings.gateway_url;
    if let Some(url) = settings.gateway_url.as_deref().map(str::trim) {
        let changed = before.as_deref() != Some(url);
        if changed && !url.is_empty() && session::gateway_at(&shell.env.data_dir, url).is_none() {
            return Err(ConsoleError::NotEnrolled.view_with(format!(
                "this machine holds no credential for {url}: enroll with it (a new gateway), or \
                 move your credential there (the same gateway at a new URL)"
            )));
        }
    }
    let view = settings::save_settings(&shell.env.config_dir, settings).map_err(|e| e.view())?;
    shell.apply(&view.settings);
    if view.settings.gateway_url != before {
        restart(app);
    }
    Ok(view)
}

/// A session on `url`, or on a demo gateway started here when there is none.
async fn open(
    app: &AppHandle,
    url: Option<String>,
    code: Option<String>,
) -> Result<(Session, Option<Embedded>), ErrorView> {
    let shell = app.state::<Shell>();
    let env = &shell.env;
    let (gateway_url, enrollment_code, demo) = match url {
        Some(url) => (url, code, None),
        None => {
            let database = format!(
                "sqlite://{}",
                env.data_dir.join("demo-gateway.db").display()
            );
            // The co-approver approves what the app's approver approved, so bulk removals (two
            // approvals) reach their quorum in a demo with one person.
            let co_approver = Some(CoApprover::default());
            let demo = Embedded::start_with(&database, env.simulate_every, co_approver)
                .await
                .map_err(|e| {
                    ConsoleError::Invalid(format!("the demo gateway did not start: {e}")).view()
                })?;
            let code = demo.invite(&env.display_name).await.map_err(|e| {
                ConsoleError::Invalid(format!("the demo gateway made no enrollment code: {e}"))
                    .view()
            })?;
            (demo.url.clone(), Some(code), Some(demo))
        }
    };
    let session = Session::start(SessionConfig {
        gateway_url,
        enrollment_code,
        display_name: env.display_name.clone(),
        data_dir: env.data_dir.clone(),
        demo: demo.as_ref().map(|d| d.gateway_id().to_owned()),
        clock: env.clock,
    })
    .await
    .map_err(|e| e.view())?;
    Ok((session, demo))
}

/// Makes `session` the current one (unless a later start has begun) and starts following it.
fn install(app: &AppHandle, start: u64, (session, demo): (Session, Option<Embedded>)) {
    let shell = app.state::<Shell>();
    if shell.starts.load(Ordering::SeqCst) != start {
        return;
    }
    let rules: follow::Rules = {
        let app = app.clone();
        Arc::new(move || app.state::<Shell>().rules())
    };
    let tasks = vec![tauri::async_runtime::spawn(follow::follow(
        app.clone(),
        session.console().clone(),
        session.changes(),
        rules,
    ))];
    let running = Arc::new(Running {
        session,
        tasks,
        _demo: demo,
    });
    shell.set(Current::Running(running));
    if let Ok(view) = shell.settings() {
        shell.apply(&view.settings);
    }
    let _ = app.emit(follow::QUEUE_CHANGED, ());
    let waiting = std::mem::take(
        &mut *shell
            .waiting_links
            .lock()
            .unwrap_or_else(|e| e.into_inner()),
    );
    for plan_id in waiting {
        window::open_plan(app, &plan_id);
    }
}
