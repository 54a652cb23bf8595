//! The approver's settings: `settings.json` in the config directory, written whole and private;
//! `COUNTERSIGN_GATEWAY_URL`, `COUNTERSIGN_POLL_INTERVAL_SECS` and `COUNTERSIGN_THEME` override
//! the file, and the view says which fields they override.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::error::ConsoleError;
use crate::live::notify::NotifyRules;
use crate::private_files;
use crate::transport;

pub const SETTINGS_FILE: &str = "settings.json";
/// Polling bounds: often enough to matter, seldom enough not to hammer a gateway.
pub const MIN_POLL_SECS: u64 = 1;
pub const MAX_POLL_SECS: u64 = 3600;
const DEFAULT_POLL_SECS: u64 = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Theme {
    Light,
    Dark,
    #[default]
    System,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub gateway_url: Option<String>,
    #[ts(type = "number")]
    pub poll_interval_secs: u64,
    pub theme: Theme,
    pub notify: NotifyRules,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            gateway_url: None,
            poll_interval_secs: DEFAULT_POLL_SECS,
            theme: Theme::System,
            notify: NotifyRules::default(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct SettingsView {
    pub settings: Settings,
    /// Settings fields overridden by `COUNTERSIGN_*` variables, e.g. `["gateway_url"]`.
    pub overridden: Vec<String>,
    pub config_path: String,
}

/// The platform's config directory for Countersign, or `COUNTERSIGN_CONFIG_DIR`.
pub fn config_dir() -> Option<PathBuf> {
    match std::env::var_os("COUNTERSIGN_CONFIG_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)),
        None => {
            directories::BaseDirs::new().map(|d| d.config_dir().join("dev.countersign.console"))
        }
    }
}

fn invalid(what: &str, why: impl std::fmt::Display) -> ConsoleError {
    ConsoleError::Invalid(format!("{what}: {why}"))
}

impl Settings {
    /// Refuses what would break the console: a gateway URL it may not use, a poll interval out
    /// of bounds.
    pub fn validate(&self) -> Result<(), ConsoleError> {
        if let Some(url) = &self.gateway_url {
            transport::check_url(url)?;
        }
        if !(MIN_POLL_SECS..=MAX_POLL_SECS).contains(&self.poll_interval_secs) {
            return Err(invalid(
                "poll_interval_secs",
                format!(
                    "{} is not between {MIN_POLL_SECS} and {MAX_POLL_SECS}",
                    self.poll_interval_secs
                ),
            ));
        }
        Ok(())
    }

    /// `self` with the `COUNTERSIGN_*` overrides applied, and the fields they replaced.
    fn overridden(mut self) -> Result<(Settings, Vec<String>), ConsoleError> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let mut fields = Vec::new();
        if let Some(url) = var("COUNTERSIGN_GATEWAY_URL") {
            transport::check_url(url.trim())?;
            self.gateway_url = Some(url.trim().to_owned());
            fields.push("gateway_url".to_owned());
        }
        if let Some(secs) = var("COUNTERSIGN_POLL_INTERVAL_SECS") {
            self.poll_interval_secs = secs
                .trim()
                .parse()
                .map_err(|e| invalid("COUNTERSIGN_POLL_INTERVAL_SECS", e))?;
            fields.push("poll_interval_secs".to_owned());
        }
        if let Some(theme) = var("COUNTERSIGN_THEME") {
            self.theme =
                serde_json::from_value(serde_json::Value::String(theme.trim().to_lowercase()))
                    .map_err(|_| {
                        invalid(
                            "COUNTERSIGN_THEME",
                            format!("{theme:?} is not light, dark or system"),
                        )
                    })?;
            fields.push("theme".to_owned());
        }
        self.validate()?;
        Ok((self, fields))
    }
}

fn view(config_dir: &Path, settings: Settings) -> Result<SettingsView, ConsoleError> {
    let (settings, overridden) = settings.overridden()?;
    Ok(SettingsView {
        settings,
        overridden,
        config_path: config_dir.join(SETTINGS_FILE).display().to_string(),
    })
}

/// The settings in `config_dir` (defaults when there is no file yet), with the environment's
/// overrides.
pub fn load_settings(config_dir: &Path) -> Result<SettingsView, ConsoleError> {
    let path = config_dir.join(SETTINGS_FILE);
    let settings = match std::fs::read(&path) {
        Ok(bytes) => {
            let settings: Settings = serde_json::from_slice(&bytes)
                .map_err(|e| invalid(&path.display().to_string(), e))?;
            settings.validate()?;
            settings
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Settings::default(),
        Err(e) => return Err(ConsoleError::Storage(format!("{}: {e}", path.display()))),
    };
    view(config_dir, settings)
}

/// Checks `settings` and replaces the file with them in one step; the view as loaded after.
pub fn save_settings(config_dir: &Path, settings: &Settings) -> Result<SettingsView, ConsoleError> {
    let mut settings = settings.clone();
    settings.gateway_url = settings
        .gateway_url
        .map(|u| u.trim().to_owned())
        .filter(|u| !u.is_empty());
    settings.validate()?;
    private_files::create_dir(config_dir)?;
    let text =
        serde_json::to_vec_pretty(&settings).map_err(|e| ConsoleError::Storage(e.to_string()))?;
    private_files::write(&config_dir.join(SETTINGS_FILE), &text)?;
    view(config_dir, settings)
}
