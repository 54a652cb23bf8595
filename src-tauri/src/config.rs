//! Where the app's gateway and data come from: environment first, then the platform's data dir.

use std::path::PathBuf;
use std::time::Duration;

use countersign_console::session::SessionConfig;
use tauri::{AppHandle, Manager};

/// `COUNTERSIGN_GATEWAY_URL` selects a gateway (with `COUNTERSIGN_ENROLLMENT_CODE` on first
/// contact); without it the demo gateway runs in-process. `COUNTERSIGN_DATA_DIR` overrides the
/// data directory, `COUNTERSIGN_SIM_INTERVAL_MS` the demo agent's pace (0 stops it),
/// `COUNTERSIGN_CA_CERT` names a PEM file of certificates to trust besides the system's roots.
pub fn from_env(app: &AppHandle) -> Result<SessionConfig, Box<dyn std::error::Error>> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    if let Some(path) = var("COUNTERSIGN_CA_CERT") {
        countersign_console::transport::trust_ca_file(std::path::Path::new(&path))?;
    }
    let data_dir = match var("COUNTERSIGN_DATA_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => app.path().app_data_dir()?,
    };
    let interval_ms: u64 = var("COUNTERSIGN_SIM_INTERVAL_MS")
        .and_then(|v| v.parse().ok())
        .unwrap_or(4000);
    Ok(SessionConfig {
        gateway_url: var("COUNTERSIGN_GATEWAY_URL"),
        enrollment_code: var("COUNTERSIGN_ENROLLMENT_CODE"),
        display_name: var("COUNTERSIGN_APPROVER_NAME")
            .or_else(|| var("USER"))
            .unwrap_or_else(|| "Approver".to_owned()),
        data_dir,
        simulate_every: (interval_ms > 0).then(|| Duration::from_millis(interval_ms)),
    })
}
