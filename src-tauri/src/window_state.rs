//! The window's size and place, kept in the data directory (so two approvers' windows side by
//! side each come back where they were) and applied only when it still fits a monitor.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

const FILE: &str = "window.json";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowState {
    pub x: i32,
    pub y: i32,
    pub width: u32,
    pub height: u32,
    pub maximized: bool,
}

/// A monitor's area in physical pixels.
#[derive(Debug, Clone, Copy)]
pub struct Area {
    pub x: i32,
    pub y: i32,
    pub width: u32,
    pub height: u32,
}

fn path(data_dir: &Path) -> PathBuf {
    data_dir.join(FILE)
}

/// The remembered state; none when there is none or it cannot be read.
pub fn load(data_dir: &Path) -> Option<WindowState> {
    let text = fs::read_to_string(path(data_dir)).ok()?;
    serde_json::from_str(&text)
        .inspect_err(|e| tracing::warn!(error = %e, "the remembered window state is unreadable"))
        .ok()
}

pub fn save(data_dir: &Path, state: &WindowState) -> std::io::Result<()> {
    let text = serde_json::to_vec(state).map_err(std::io::Error::other)?;
    fs::write(path(data_dir), text)
}

impl WindowState {
    /// Whether the window's top-left corner with a grip of its title bar lies on one of
    /// `monitors`: a window remembered on a monitor that is gone is not put out of reach.
    pub fn visible_on(&self, monitors: &[Area]) -> bool {
        const GRIP: i32 = 48;
        self.width > 0
            && self.height > 0
            && monitors.iter().any(|m| {
                self.x + GRIP > m.x
                    && self.y >= m.y
                    && self.x < m.x + m.width as i32 - GRIP
                    && self.y < m.y + m.height as i32 - GRIP
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCREEN: Area = Area {
        x: 0,
        y: 0,
        width: 1600,
        height: 1000,
    };

    fn state(x: i32, y: i32) -> WindowState {
        WindowState {
            x,
            y,
            width: 1200,
            height: 800,
            maximized: false,
        }
    }

    #[test]
    fn a_saved_state_comes_back() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load(dir.path()), None);
        save(dir.path(), &state(10, 20)).unwrap();
        assert_eq!(load(dir.path()), Some(state(10, 20)));
    }

    #[test]
    fn an_unreadable_state_is_none() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(FILE), b"{not json").unwrap();
        assert_eq!(load(dir.path()), None);
    }

    #[test]
    fn a_window_off_every_monitor_is_not_restored_there() {
        assert!(state(100, 50).visible_on(&[SCREEN]));
        assert!(!state(5000, 50).visible_on(&[SCREEN]));
        assert!(!state(100, -400).visible_on(&[SCREEN]));
        assert!(!state(100, 50).visible_on(&[]));
    }
}
