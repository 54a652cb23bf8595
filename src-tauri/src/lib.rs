//! The desktop shell's own logic, apart from Tauri so it is tested without a window: deep links,
//! one instance per data directory, which plans were already seen, the remembered window, when
//! to give freed memory back.

pub mod deep_link;
pub mod instance;
pub mod memory;
pub mod seen;
pub mod tray_text;
pub mod window_state;
