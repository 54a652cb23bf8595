//! The main window: brought forward to open a plan, and put back where it was last time.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use countersign_desktop::window_state::{self, Area, WindowState};
use tauri::{AppHandle, Emitter, Manager, PhysicalPosition, PhysicalSize, WebviewWindow};

pub const MAIN: &str = "main";
pub const OPEN_PLAN: &str = "open-plan";

/// Shows and focuses the window.
pub fn show(app: &AppHandle) {
    if let Some(window) = app.get_webview_window(MAIN) {
        let _ = window.unminimize();
        let _ = window.show();
        let _ = window.set_focus();
    }
}

/// Brings the window forward on `plan_id` (a deep link or a notification's click).
pub fn open_plan(app: &AppHandle, plan_id: &str) {
    tracing::info!(plan_id, "opening a plan");
    show(app);
    let _ = app.emit(OPEN_PLAN, plan_id);
}

/// The window's last normal (not maximized) geometry, written to the data directory shortly after
/// it settles: the app usually ends by a signal at logout, when no exit handler runs.
pub struct Geometry {
    data_dir: PathBuf,
    state: Mutex<Option<WindowState>>,
    changes: AtomicU64,
}

const SETTLE: Duration = Duration::from_millis(500);

impl Geometry {
    pub fn new(data_dir: PathBuf) -> Geometry {
        Geometry {
            data_dir,
            state: Mutex::new(None),
            changes: AtomicU64::new(0),
        }
    }

    /// Takes note of where `window` is now (called as it moves and resizes) and saves it once
    /// no further change came for a moment.
    pub fn record(&self, window: &tauri::Window) {
        let maximized = window.is_maximized().unwrap_or(false);
        {
            let mut slot = self.state.lock().unwrap_or_else(|e| e.into_inner());
            match (maximized, window.outer_position(), window.inner_size()) {
                (true, _, _) => {
                    if let Some(state) = slot.as_mut() {
                        state.maximized = true;
                    }
                }
                (false, Ok(at), Ok(size)) => {
                    *slot = Some(WindowState {
                        x: at.x,
                        y: at.y,
                        width: size.width,
                        height: size.height,
                        maximized: false,
                    })
                }
                _ => return,
            }
        }
        let change = self.changes.fetch_add(1, Ordering::SeqCst) + 1;
        let app = window.app_handle().clone();
        tauri::async_runtime::spawn(async move {
            tokio::time::sleep(SETTLE).await;
            let geometry = app.state::<Geometry>();
            if geometry.changes.load(Ordering::SeqCst) == change {
                geometry.save();
            }
        });
    }

    pub fn save(&self) {
        if let Some(state) = *self.state.lock().unwrap_or_else(|e| e.into_inner()) {
            if let Err(e) = window_state::save(&self.data_dir, &state) {
                tracing::warn!(error = %e, "the window's place could not be saved");
            }
        }
    }
}

/// Puts `window` where it was, if that is still on a monitor.
pub fn restore(window: &WebviewWindow, data_dir: &Path) {
    let Some(state) = window_state::load(data_dir) else {
        return;
    };
    let monitors: Vec<Area> = window
        .available_monitors()
        .unwrap_or_default()
        .iter()
        .map(|m| Area {
            x: m.position().x,
            y: m.position().y,
            width: m.size().width,
            height: m.size().height,
        })
        .collect();
    if !state.visible_on(&monitors) {
        return;
    }
    let _ = window.set_size(PhysicalSize::new(state.width, state.height));
    let _ = window.set_position(PhysicalPosition::new(state.x, state.y));
    if state.maximized {
        let _ = window.maximize();
    }
}
