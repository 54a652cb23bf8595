//! The floor under the desktop's memory rows (issue 28): an idle Tauri window of the app's size
//! showing one line of static text, no state, no commands. `make bench` measures it beside the
//! app, so the app's figures can be read against what WebKit and Tauri cost on their own.

use tauri::{http, WebviewUrl, WebviewWindowBuilder};

const PAGE: &str = "<!doctype html><title>Hello</title><p>Hello, world.</p>";

fn main() {
    let mut context = tauri::generate_context!();
    // The configured window loads the console; the floor is a window without it.
    context.config_mut().app.windows.clear();
    tauri::Builder::default()
        // Served as the app's own pages are, from a custom scheme (a `data:` URL needs a Tauri
        // feature the app does not build with).
        .register_uri_scheme_protocol("hello", |_, _| {
            http::Response::builder()
                .header(http::header::CONTENT_TYPE, "text/html")
                .body(PAGE.as_bytes())
                .expect("a static response")
        })
        .setup(|app| {
            let url = WebviewUrl::CustomProtocol("hello://localhost/".parse()?);
            WebviewWindowBuilder::new(app, "main", url)
                .title("Hello")
                .inner_size(1440.0, 900.0)
                .build()?;
            Ok(())
        })
        .run(context)
        .expect("the reference window could not start");
}
