//! Where the console's gateway comes from: a configured URL, or the demo gateway in-process.

use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::SecondsFormat;
use countersign_gateway::embedded::Embedded;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::client::GatewayClient;
use crate::console::Console;
use crate::error::{ConsoleError, ErrorView};
use crate::journal::Journal;
use crate::private_files;
use crate::signer::Signer;

pub struct SessionConfig {
    /// A gateway to use; `None` starts the demo gateway in-process.
    pub gateway_url: Option<String>,
    /// Spent on first contact with a configured gateway this machine is not enrolled with.
    pub enrollment_code: Option<String>,
    /// The name the demo gateway invites; a configured gateway's invite carries its own.
    pub display_name: String,
    /// Where the demo gateway's database and the remembered gateway id live.
    pub data_dir: PathBuf,
    /// How often the demo gateway's simulated agent previews a change.
    pub simulate_every: Option<Duration>,
}

/// What the header shows about the connection.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct StatusView {
    pub gateway_name: String,
    pub gateway_url: String,
    pub demo: bool,
    pub approver: String,
    pub key_id: String,
    pub online: bool,
    pub last_sync: Option<String>,
    pub last_error: Option<ErrorView>,
}

#[derive(Serialize, Deserialize)]
struct RememberedGateway {
    url: String,
    gateway_id: String,
}

pub struct Session {
    pub console: Console,
    gateway_name: String,
    online: bool,
    last_error: Option<ErrorView>,
    demo: Option<Embedded>,
}

const REMEMBERED: &str = "gateway.json";

/// The decision outbox and journal, in the data directory.
pub const JOURNAL: &str = "journal.db";

/// The platform's data directory for Countersign, the one the desktop app uses too.
pub fn default_data_dir() -> Option<PathBuf> {
    directories::BaseDirs::new().map(|d| d.data_dir().join("dev.countersign.console"))
}

/// A console on the gateway at `url` with its journal: this machine's credential for it, or a new
/// enrollment with the invite `code` (and `display_name`, when given, must be the invited name).
/// Checks that the gateway still is the one enrolled with; its name.
pub async fn connect(
    data_dir: &Path,
    url: &str,
    code: Option<&str>,
    display_name: Option<&str>,
) -> Result<(Console, String), ConsoleError> {
    // Before anything is spent: an enrollment code works once.
    private_files::create_dir(data_dir)?;
    let known = remembered(data_dir, url)
        .map(|id| Signer::load(&id))
        .transpose()?
        .flatten();
    let console = match (known, code) {
        (Some(signer), _) => Console::with_signer(url, signer)?,
        (None, Some(code)) => {
            let client = GatewayClient::new(url, None)?;
            let signer = Signer::enroll(&client, code, display_name).await?;
            let console = Console::with_signer(url, signer)?;
            remember(data_dir, url, console.signer().gateway_id())?;
            console
        }
        (None, None) => return Err(ConsoleError::NotEnrolled),
    };
    let info = console.client().gateway().await?;
    if info.gateway_id != console.signer().gateway_id() {
        return Err(ConsoleError::Protocol(format!(
            "{url} is now gateway {}, not {} this console enrolled with",
            info.gateway_id,
            console.signer().gateway_id()
        )));
    }
    let journal = Journal::open(&data_dir.join(JOURNAL)).await?;
    Ok((console.with_journal(journal), info.name))
}

fn remembered(data_dir: &Path, url: &str) -> Option<String> {
    let text = std::fs::read_to_string(data_dir.join(REMEMBERED)).ok()?;
    let r: RememberedGateway = serde_json::from_str(&text).ok()?;
    (r.url == url).then_some(r.gateway_id)
}

fn remember(data_dir: &Path, url: &str, gateway_id: &str) -> Result<(), ConsoleError> {
    let text = serde_json::to_string(&RememberedGateway {
        url: url.to_owned(),
        gateway_id: gateway_id.to_owned(),
    })
    .map_err(|e| ConsoleError::Invalid(e.to_string()))?;
    private_files::write(&data_dir.join(REMEMBERED), text.as_bytes())
}

impl Session {
    pub async fn start(config: SessionConfig) -> Result<Session, ConsoleError> {
        private_files::create_dir(&config.data_dir)?;
        match &config.gateway_url {
            Some(url) => Session::remote(&config, url).await,
            None => Session::demo(&config).await,
        }
    }

    async fn remote(config: &SessionConfig, url: &str) -> Result<Session, ConsoleError> {
        // A configured gateway's invite carries the approver's name.
        let (console, gateway_name) = connect(
            &config.data_dir,
            url,
            config.enrollment_code.as_deref(),
            None,
        )
        .await?;
        Ok(Session {
            console,
            gateway_name,
            online: false,
            last_error: None,
            demo: None,
        })
    }

    async fn demo(config: &SessionConfig) -> Result<Session, ConsoleError> {
        let database = format!(
            "sqlite://{}",
            config.data_dir.join("demo-gateway.db").display()
        );
        let demo = Embedded::start(&database, config.simulate_every)
            .await
            .map_err(|e| ConsoleError::Invalid(format!("the demo gateway did not start: {e}")))?;
        let journal = Journal::open(&config.data_dir.join(JOURNAL)).await?;
        let console = match Signer::load(demo.gateway_id())? {
            Some(signer) => Console::with_signer(&demo.url, signer)?,
            None => {
                let code = demo.invite(&config.display_name).await.map_err(|e| {
                    ConsoleError::Invalid(format!("the demo gateway made no enrollment code: {e}"))
                })?;
                let client = GatewayClient::new(&demo.url, None)?;
                Console::with_signer(
                    &demo.url,
                    Signer::enroll(&client, &code, Some(&config.display_name)).await?,
                )?
            }
        }
        .with_journal(journal);
        Ok(Session {
            console,
            gateway_name: demo.state.name.clone(),
            online: false,
            last_error: None,
            demo: Some(demo),
        })
    }

    /// Polls once and records whether the gateway answered.
    /// Sends what the outbox still holds, then polls once; records whether the gateway answered.
    pub async fn sync(&mut self) -> Result<bool, ConsoleError> {
        let refused = match self.console.flush().await {
            Ok(flushed) => flushed.refused.into_iter().next(),
            Err(e) => {
                tracing::debug!(error = %e, "the outbox could not be sent");
                None
            }
        };
        let outcome = self.console.sync().await;
        self.online = outcome.is_ok();
        self.last_error = match (&outcome, refused) {
            (Err(e), _) => Some(e.view()),
            (Ok(_), Some((plan_id, why))) => Some(ErrorView {
                code: why.code,
                message: format!(
                    "The queued decision on {plan_id} was refused: {}",
                    why.message
                ),
            }),
            (Ok(_), None) => None,
        };
        outcome
    }

    pub fn status(&self) -> StatusView {
        let signer = self.console.signer();
        StatusView {
            gateway_name: self.gateway_name.clone(),
            gateway_url: self.console.client().base().to_owned(),
            demo: self.demo.is_some(),
            approver: signer.display_name().to_owned(),
            key_id: signer.key_id().to_owned(),
            online: self.online,
            last_sync: self
                .console
                .poller()
                .last_sync()
                .map(|t| t.to_rfc3339_opts(SecondsFormat::Secs, true)),
            last_error: self.last_error.clone(),
        }
    }
}
