//! The floor under the desktop's memory rows (issue 28): an idle Tauri window of the app's size
//! showing one line of static text, no state, no commands. `make bench` measures it beside the
//! app, so the app's figures can be read against what WebKit and Tauri cost on their own.

use tauri::{WebviewUrl, WebviewWindowBuilder};

const PAGE: &str = "data:text/html,<!doctype html><title>Hello</title><p>Hello, world.</p>";

fn main() {
    let mut context = tauri::generate_context!();
    // The configured window loads the console; the floor is a window without it.
    context.config_mut().app.windows.clear();
    tauri::Builder::default()
        .setup(|app| {
            WebviewWindowBuilder::new(app, "main", WebviewUrl::External(PAGE.parse()?))
                .title("Hello")
                .inner_size(1440.0, 900.0)
                .build()?;
            Ok(())
        })
        .run(context)
        .expect("the reference window could not start");
}
