//! The desktop shell's own logic, apart from Tauri so it is tested without a window: deep links,
//! one instance per data directory, which plans were already seen, the remembered window.

pub mod deep_link;
pub mod instance;
pub mod seen;
pub mod tray_text;
pub mod window_state;
