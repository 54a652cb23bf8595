//! What the environment says, read before Tauri starts (the data directory decides which
//! instance this is). The settings file is the core's; `COUNTERSIGN_*` variables override it
//! there.

use std::path::PathBuf;
use std::time::Duration;

use countersign_console::live::clock::Clock;
use countersign_console::session::default_data_dir;
use countersign_console::settings;

pub struct Env {
    pub data_dir: PathBuf,
    /// Where `settings.json` is kept.
    pub config_dir: PathBuf,
    /// Spent on first contact with a configured gateway this machine is not enrolled with.
    pub enrollment_code: Option<String>,
    /// The name the demo gateway invites; a configured gateway's invite carries its own.
    pub display_name: String,
    /// The demo agent's pace; `None` stops it.
    pub simulate_every: Option<Duration>,
    /// What snoozes and reminders are judged by (`COUNTERSIGN_TEST_CLOCK`, for end-to-end tests).
    pub clock: Clock,
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

pub fn from_env() -> Result<Env, Box<dyn std::error::Error>> {
    if let Some(path) = var("COUNTERSIGN_CA_CERT") {
        countersign_console::transport::trust_ca_file(std::path::Path::new(&path))?;
    }
    let data_dir = var("COUNTERSIGN_DATA_DIR")
        .map(PathBuf::from)
        .or_else(default_data_dir)
        .ok_or("no data directory: set COUNTERSIGN_DATA_DIR")?;
    let interval_ms: u64 = var("COUNTERSIGN_SIM_INTERVAL_MS")
        .and_then(|v| v.parse().ok())
        .unwrap_or(4000);
    Ok(Env {
        data_dir,
        config_dir: settings::config_dir()
            .ok_or("no config directory: set COUNTERSIGN_CONFIG_DIR")?,
        enrollment_code: var("COUNTERSIGN_ENROLLMENT_CODE"),
        display_name: var("COUNTERSIGN_APPROVER_NAME")
            .or_else(|| var("USER"))
            .unwrap_or_else(|| "Approver".to_owned()),
        simulate_every: (interval_ms > 0).then(|| Duration::from_millis(interval_ms)),
        clock: match var("COUNTERSIGN_TEST_CLOCK") {
            Some(setting) => {
                let clock = Clock::parse(&setting)?;
                tracing::warn!(setting, "snoozes and reminders run on a test clock");
                clock
            }
            None => Clock::real(),
        },
    })
}
