//! `serve`'s settings, from four layers (docs/operations.md): the defaults, a TOML file
//! (`--config`), `COUNTERSIGN_*` environment variables, and the command's flags, each over the
//! one before. figment does the layering and says where each value came from; the file is
//! also read once by `toml` alone, whose errors name the line of an unknown or mistyped key.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use countersign_engine::accounts::limits::{self, RateSetting};
use countersign_engine::secrets::redacted_url;
use countersign_proto::Credits;
use figment::providers::{Env, Format, Serialized, Toml};
use figment::Figment;
use serde::{Deserialize, Serialize};

use crate::telemetry::LogFormat;

mod flags;

pub use flags::Flags;

/// Every setting of `serve`, as the file names them; each is also the flag of the same name
/// (`max_pending_plans`: `--max-pending-plans`) and the variable `COUNTERSIGN_` + its name in
/// capitals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Where to listen: HTTPS with `tls_cert` and `tls_key`, plain HTTP on loopback only.
    pub addr: SocketAddr,
    /// `sqlite:///var/lib/countersign/gateway.db` or `postgres://user@host/db`; required.
    pub database: String,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// Serve `/metrics` on this address alone (plain HTTP: it carries no secret) instead of
    /// beside the API.
    pub metrics_addr: Option<SocketAddr>,
    /// Seed the demo world if the store is empty.
    pub demo: bool,
    pub name: String,
    /// The SMTP relay executed plans' emails leave through; without it they stay queued.
    pub smtp_relay: Option<String>,
    pub mail_from: String,
    /// An OpenAI-compatible API; its key from COUNTERSIGN_OPENAI_API_KEY or the keyring.
    pub openai_url: Option<String>,
    /// A Replicate-style predictions API; its token from COUNTERSIGN_REPLICATE_API_TOKEN or
    /// the keyring.
    pub replicate_url: Option<String>,
    #[serde(with = "text")]
    pub approve_provider_calls_above: Credits,
    /// A directory of `.rego` files; without it, each capability's own rule.
    pub policy: Option<PathBuf>,
    pub policy_heap_limit_mb: u64,
    pub max_pending_plans: u32,
    pub max_subject_rows: u64,
    #[serde(with = "text")]
    pub rate_limit: RateSetting,
    #[serde(with = "text")]
    pub approver_rate_limit: RateSetting,
    pub max_previews_in_flight: usize,
    pub max_streams: usize,
    pub max_waits: usize,
    /// On SIGTERM, how long requests and provider calls under way may take to finish.
    pub drain_seconds: u64,
    /// Log lines as `text` or `json` (one object per line).
    pub log_format: LogFormat,
    /// Where spans go, over OTLP/HTTP (`http://collector:4318/v1/traces`); none: nowhere.
    pub otlp_endpoint: Option<String>,
    /// MCP servers to stand in front of, `NAME=COMMAND` or `NAME=URL` (docs/mcp-proxy.md).
    pub mcp_upstream: Vec<String>,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            addr: SocketAddr::from(([127, 0, 0, 1], 7780)),
            database: String::new(),
            tls_cert: None,
            tls_key: None,
            metrics_addr: None,
            demo: false,
            name: "Countersign gateway".into(),
            smtp_relay: None,
            mail_from: "Countersign <countersign@localhost>".into(),
            openai_url: None,
            replicate_url: None,
            approve_provider_calls_above: "1.00".parse().expect("a credit amount"),
            policy: None,
            policy_heap_limit_mb: countersign_policy::DEFAULT_HEAP_LIMIT >> 20,
            max_pending_plans: limits::DEFAULT_MAX_PENDING_PLANS,
            max_subject_rows: limits::DEFAULT_MAX_SUBJECT_ROWS,
            rate_limit: RateSetting(Some(limits::DEFAULT_RATE)),
            approver_rate_limit: RateSetting(Some(limits::DEFAULT_APPROVER_RATE)),
            max_previews_in_flight: limits::DEFAULT_MAX_PREVIEWS_IN_FLIGHT,
            max_streams: limits::DEFAULT_MAX_STREAMS,
            max_waits: limits::DEFAULT_MAX_WAITS,
            drain_seconds: 30,
            log_format: LogFormat::Text,
            otlp_endpoint: None,
            mcp_upstream: Vec::new(),
        }
    }
}

/// The keys of [`Settings`], in the order the file and `config check` list them.
const KEYS: [&str; 25] = [
    "addr",
    "database",
    "tls_cert",
    "tls_key",
    "metrics_addr",
    "demo",
    "name",
    "smtp_relay",
    "mail_from",
    "openai_url",
    "replicate_url",
    "approve_provider_calls_above",
    "policy",
    "policy_heap_limit_mb",
    "max_pending_plans",
    "max_subject_rows",
    "rate_limit",
    "approver_rate_limit",
    "max_previews_in_flight",
    "max_streams",
    "max_waits",
    "drain_seconds",
    "log_format",
    "otlp_endpoint",
    "mcp_upstream",
];

/// Keys whose values may carry a password (a URL's), shown redacted.
const URL_KEYS: [&str; 3] = ["database", "smtp_relay", "otlp_endpoint"];

/// The settings the command line gave: only these override the file and the environment.
pub type Given = serde_json::Map<String, serde_json::Value>;

/// The settings of `serve`: the defaults, then `file`, then the environment, then `given`.
pub fn load(file: Option<&Path>, given: &Given) -> anyhow::Result<Settings> {
    let settings: Settings = layers(file)?
        .merge(Serialized::globals(given))
        .extract()
        .map_err(|e| anyhow::anyhow!("the settings: {e}"))?;
    anyhow::ensure!(
        !settings.database.is_empty(),
        "no database: give --database, COUNTERSIGN_DATABASE or `database` in the config file"
    );
    anyhow::ensure!(
        settings.tls_cert.is_some() == settings.tls_key.is_some(),
        "tls_cert and tls_key go together: give both (--tls-cert, --tls-key) or neither"
    );
    Ok(settings)
}

/// `config check`: the effective settings of `file` under this environment, one line each,
/// secrets redacted, each with where it came from.
pub fn check(file: &Path) -> anyhow::Result<String> {
    let figment = layers(Some(file))?;
    let settings: Settings = figment
        .extract()
        .map_err(|e| anyhow::anyhow!("the settings: {e}"))?;
    let values = serde_json::to_value(&settings)?;
    let mut report = String::new();
    for key in KEYS {
        let value = match (&values[key], URL_KEYS.contains(&key)) {
            (serde_json::Value::String(url), true) => {
                toml_value(&serde_json::Value::String(redacted_url(url)))
            }
            (value, _) => toml_value(value),
        };
        let from = match figment.find_metadata(key) {
            Some(meta) if meta.name.contains("environment") => {
                format!("COUNTERSIGN_{}", key.to_uppercase())
            }
            Some(meta) if meta.name.contains("TOML") => "the file".to_owned(),
            _ => "default".to_owned(),
        };
        report += &format!("{key} = {value}  # {from}\n");
    }
    if settings.database.is_empty() {
        report += "# no database yet: `serve` needs --database or COUNTERSIGN_DATABASE\n";
    }
    Ok(report)
}

/// The defaults, the file (refused with the line at fault if it names a key `serve` does not
/// have, or a value of the wrong kind), then the environment.
fn layers(file: Option<&Path>) -> anyhow::Result<Figment> {
    let mut figment = Figment::from(Serialized::defaults(Settings::default()));
    if let Some(path) = file {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        toml::from_str::<Settings>(&text)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        figment = figment.merge(Toml::file_exact(path));
    }
    Ok(figment.merge(Env::prefixed("COUNTERSIGN_").only(&KEYS)))
}

/// A value as TOML writes it; unset options are commented out by the caller's `# default`.
fn toml_value(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Null => "(unset)".into(),
        serde_json::Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

/// A setting read and written as its text (`20/40`, `off`, `1.00`). The environment's values
/// come as numbers where they look like one (`COUNTERSIGN_APPROVE_PROVIDER_CALLS_ABOVE=2.50`):
/// those are read as the text they were.
mod text {
    use std::fmt::{self, Display};
    use std::marker::PhantomData;
    use std::str::FromStr;

    use serde::de::{self, Visitor};
    use serde::{Deserializer, Serializer};

    pub fn serialize<T: Display, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(value)
    }

    pub fn deserialize<'de, T, D>(d: D) -> Result<T, D::Error>
    where
        T: FromStr,
        T::Err: Display,
        D: Deserializer<'de>,
    {
        d.deserialize_any(Text(PhantomData))
    }

    struct Text<T>(PhantomData<T>);

    impl<T: FromStr<Err: Display>> Visitor<'_> for Text<T> {
        type Value = T;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a string")
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
            v.parse().map_err(E::custom)
        }

        fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
            self.visit_str(&v.to_string())
        }

        fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
            self.visit_str(&v.to_string())
        }

        fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
            self.visit_str(&v.to_string())
        }
    }
}

#[cfg(test)]
mod tests;
