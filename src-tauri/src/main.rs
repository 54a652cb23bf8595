//! The Countersign desktop app: a window over `countersign-console`. Everything it does is a call
//! into that crate; this file only wires it to Tauri.

#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

mod commands;
mod config;
mod confirm;
mod follow;
mod notification;
mod shell;
mod tray;
mod window;

use clap::Parser;
use countersign_desktop::deep_link;
use countersign_desktop::instance::{self, Claim};
use countersign_desktop::memory::{self, Release};
use tauri::{Manager, RunEvent, WindowEvent};
use tracing_subscriber::EnvFilter;

/// Read before Tauri starts, so `--version` and `--help` answer without a display.
#[derive(Parser)]
#[command(
    name = "countersign",
    version,
    about = "Countersign: review and sign what AI agents want to do",
    after_help = "Environment (GATEWAY_URL, POLL_INTERVAL_SECS and THEME override settings.json):
  COUNTERSIGN_GATEWAY_URL         the gateway to follow (none: an in-process demo gateway)
  COUNTERSIGN_ENROLLMENT_CODE     the code from `countersign-gateway approvers invite`, the first time
  COUNTERSIGN_APPROVER_NAME       the name the demo gateway invites (a real invite carries its own)
  COUNTERSIGN_POLL_INTERVAL_SECS  how often to list the queue while the event stream is down
  COUNTERSIGN_THEME               light, dark or system
  COUNTERSIGN_CA_CERT             a PEM file of certificates to trust besides the system's roots
  COUNTERSIGN_DATA_DIR            where the journal, gateway list and window place are kept;
                                  one running app per data directory
  COUNTERSIGN_CONFIG_DIR          where settings.json is kept
  COUNTERSIGN_SIM_INTERVAL_MS     the demo agent's pace (0 stops it)
  COUNTERSIGN_TEST_CLOCK          for tests: snoozes and reminders judged by a clock <seconds>
                                  ahead and <rate> times as fast, as in 605,5"
)]
struct Args {
    /// `countersign://plan/<plan_id>` links to open; handed to the running app if there is one.
    links: Vec<String>,
}

fn main() {
    // SAFETY: the first line of main: no other thread exists yet.
    unsafe { memory::purge_freed_pages_at_once() };
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
    let env = match config::from_env() {
        Ok(env) => env,
        Err(e) => {
            eprintln!("countersign: {e}");
            std::process::exit(2);
        }
    };
    let mut instance = match instance::claim(&env.data_dir, &args.links) {
        Ok(Claim::First(instance)) => instance,
        Ok(Claim::Forwarded) => {
            tracing::info!(data_dir = %env.data_dir.display(), "handed over to the running app");
            return;
        }
        Err(e) => {
            eprintln!("countersign: {}: {e}", env.data_dir.display());
            std::process::exit(2);
        }
    };
    let links = deep_link::plans_in(&args.links);
    let app = tauri::Builder::default()
        .plugin(tauri_plugin_dialog::init())
        .manage(window::Geometry::new(env.data_dir.clone()))
        .invoke_handler(tauri::generate_handler![
            commands::status,
            commands::queue_window,
            commands::queue_between,
            commands::gists,
            commands::plan,
            commands::approve,
            commands::reject,
            commands::refresh,
            commands::subjects,
            commands::batch,
            commands::decide_batch,
            commands::history,
            commands::export_history,
            commands::insights,
            commands::standing,
            commands::standing_draft,
            commands::create_standing,
            commands::revoke_standing,
            commands::remedy_mail,
            commands::amend_draft,
            commands::amend,
            commands::snooze,
            commands::unsnooze,
            commands::settings,
            commands::save_settings,
            commands::enroll,
            commands::move_credential,
            commands::linked_plan,
        ])
        .on_window_event(|window, event| match event {
            WindowEvent::Moved(_) | WindowEvent::Resized(_) => {
                window.state::<window::Geometry>().record(window)
            }
            WindowEvent::CloseRequested { .. } => window.state::<window::Geometry>().save(),
            _ => {}
        })
        .setup(move |app| {
            countersign_console::signing::os_keyring::check()?;
            let (release, releasing) = Release::new(memory::trim_heap);
            tauri::async_runtime::spawn(releasing);
            app.manage(release);
            if let Some(window) = app.get_webview_window(window::MAIN) {
                window::restore(&window, &env.data_dir);
            }
            app.manage(shell::Shell::new(env));
            let handle = app.handle().clone();
            instance.serve(move |args| {
                window::show(&handle);
                for plan_id in deep_link::plans_in(&args) {
                    handle.state::<shell::Shell>().open_plan(&handle, plan_id);
                }
            });
            // Held, not dropped: the data directory stays this process's until it ends.
            app.manage(std::sync::Mutex::new(instance));
            tray::install(app.handle());
            let shell = app.state::<shell::Shell>();
            for plan_id in links {
                shell.open_plan(app.handle(), plan_id);
            }
            shell::restart(app.handle());
            Ok(())
        })
        .build(tauri::generate_context!())
        .expect("the Countersign window could not start");
    app.run(|app, event| {
        if let RunEvent::Exit = event {
            app.state::<window::Geometry>().save();
        }
    });
}

#[cfg(test)]
mod tests {
    /// A command the window may call is declared (build.rs) and granted to the window
    /// (capabilities/default.json): one registered alone is refused at run time, "not allowed".
    #[test]
    fn every_registered_command_is_declared_and_granted() {
        let main = include_str!("main.rs");
        let declared = include_str!("../build.rs");
        let granted = include_str!("../capabilities/default.json");
        let handler = main
            .split("generate_handler![")
            .nth(1)
            .and_then(|rest| rest.split(']').next())
            .expect("the invoke handler's list");
        let registered: Vec<&str> = handler
            .split(',')
            .filter_map(|item| item.trim().strip_prefix("commands::"))
            .collect();
        assert!(registered.len() > 20, "{registered:?}");
        for command in registered {
            assert!(
                declared.contains(&format!("\"{command}\"")),
                "{command} is not in build.rs's COMMANDS"
            );
            let permission = format!("\"allow-{}\"", command.replace('_', "-"));
            assert!(
                granted.contains(&permission),
                "{command} is not granted in capabilities/default.json"
            );
        }
    }
}
