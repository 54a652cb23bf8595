//! The Countersign desktop app: a window over `countersign-console`. Everything it does is a call
//! into that crate; this file only wires it to Tauri.

#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

mod commands;
mod config;
mod sync_loop;

use clap::Parser;
use tauri::Manager;
use tracing_subscriber::EnvFilter;

/// Read before Tauri starts, so `--version` and `--help` answer without a display.
#[derive(Parser)]
#[command(
    name = "countersign",
    version,
    about = "Countersign: review and sign what AI agents want to do",
    after_help = "Environment:
  COUNTERSIGN_GATEWAY_URL      the gateway to follow (none: an in-process demo gateway)
  COUNTERSIGN_ENROLLMENT_CODE  the code from `countersign-gateway approvers invite`, the first time
  COUNTERSIGN_APPROVER_NAME    the name the demo gateway invites (a real invite carries its own)
  COUNTERSIGN_CA_CERT          a PEM file of certificates to trust besides the system's roots
  COUNTERSIGN_DATA_DIR         where the journal and gateway list are kept
  COUNTERSIGN_SIM_INTERVAL_MS  the demo agent's pace (0 stops it)"
)]
struct Args {}

fn main() {
    Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
    tauri::Builder::default()
        .manage(commands::AppModel::default())
        .invoke_handler(tauri::generate_handler![
            commands::status,
            commands::queue,
            commands::plan,
            commands::approve
        ])
        .setup(|app| {
            countersign_console::os_keyring::check()?;
            let config = config::from_env(app.handle())?;
            let handle = app.handle().clone();
            tauri::async_runtime::spawn(async move {
                let model = handle.state::<commands::AppModel>();
                model.start(config).await;
                sync_loop::run(handle.clone()).await;
            });
            Ok(())
        })
        .run(tauri::generate_context!())
        .expect("the Countersign window could not start");
}
