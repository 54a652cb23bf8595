//! The tray icon: the pending count, Show and Quit. Without a tray host (a bare X server) there is
//! none, and the app runs on without it.

use countersign_desktop::tray_text;
use tauri::menu::{Menu, MenuItem, PredefinedMenuItem};
use tauri::tray::{TrayIcon, TrayIconBuilder};
use tauri::{AppHandle, Manager, Wry};

use crate::window;

pub struct Tray {
    icon: TrayIcon,
    count: MenuItem<Wry>,
}

pub fn install(app: &AppHandle) {
    match build(app) {
        Ok(tray) => {
            app.manage(tray);
        }
        Err(e) => tracing::warn!(error = %e, "no tray icon"),
    }
}

fn build(app: &AppHandle) -> tauri::Result<Tray> {
    let count = MenuItem::with_id(app, "count", tray_text::pending(0), false, None::<&str>)?;
    let show = MenuItem::with_id(app, "show", "Show Countersign", true, None::<&str>)?;
    let quit = MenuItem::with_id(app, "quit", "Quit", true, None::<&str>)?;
    let menu = Menu::with_items(
        app,
        &[&count, &PredefinedMenuItem::separator(app)?, &show, &quit],
    )?;
    let mut builder = TrayIconBuilder::with_id("countersign")
        .tooltip(tray_text::tooltip(0))
        .menu(&menu)
        .on_menu_event(|app, event| match event.id().as_ref() {
            "show" => window::show(app),
            "quit" => app.exit(0),
            _ => {}
        });
    if let Some(icon) = app.default_window_icon() {
        builder = builder.icon(icon.clone());
    }
    let icon = builder.build(app)?;
    Ok(Tray { icon, count })
}

pub fn set_pending(app: &AppHandle, pending: usize) {
    if let Some(tray) = app.try_state::<Tray>() {
        let _ = tray.icon.set_tooltip(Some(tray_text::tooltip(pending)));
        let _ = tray.count.set_text(tray_text::pending(pending));
    }
}
