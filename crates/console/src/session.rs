//! A console session on one gateway: credentials (kept, or enrolled once), the journal, live
//! sync, and the header's status. The demo gateway itself is the shell's to start.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::SecondsFormat;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use ts_rs::TS;

use crate::client::GatewayClient;
use crate::console::Console;
use crate::error::{ConsoleError, ErrorView};
use crate::journal::Journal;
use crate::live::{Link, Live, Snapshot, Timing};
use crate::private_files;
use crate::review::QueueView;
use crate::signer::Signer;

pub struct SessionConfig {
    /// The gateway to follow; for the demo, the one the shell started in-process.
    pub gateway_url: String,
    /// Spent on first contact only when this machine holds no credential for the gateway.
    pub enrollment_code: Option<String>,
    /// The name the demo's invite was issued for; a configured gateway's invite carries its own.
    pub display_name: String,
    /// Where the journal and the remembered gateway live.
    pub data_dir: PathBuf,
    /// Labels the gateway "Demo gateway" in the header.
    pub demo: bool,
}

/// What the header shows about the connection.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct StatusView {
    pub gateway_name: String,
    pub gateway_url: String,
    pub demo: bool,
    /// The approver's display name, e.g. "Dana".
    pub approver: String,
    pub key_id: String,
    pub link: Link,
    pub last_sync: Option<String>,
    pub last_error: Option<ErrorView>,
    /// Decisions written but not yet answered.
    #[ts(type = "number")]
    pub outbox: u64,
}

#[derive(Serialize, Deserialize)]
struct RememberedGateway {
    url: String,
    gateway_id: String,
}

/// A console following its gateway: live sync and gists run as tasks until the session is
/// dropped.
pub struct Session {
    console: Arc<Console>,
    gateway_name: String,
    demo: bool,
    /// Keeps the snapshot open for the live task, which ends when nobody watches.
    changes: watch::Receiver<Snapshot>,
    tasks: Vec<JoinHandle<()>>,
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
    /// Connects to the gateway, with this machine's credential for it when there is one (the
    /// enrollment code is then left unspent), else by enrolling with the code; opens the journal
    /// and starts live sync.
    pub async fn start(config: SessionConfig) -> Result<Session, ConsoleError> {
        private_files::create_dir(&config.data_dir)?;
        let url = config.gateway_url.trim();
        let client = GatewayClient::new(url, None)?;
        // The demo gateway runs in this process on a new port each time: its own word for its
        // id (the identity answer needs no credential) is good. Anywhere else only the id
        // remembered for this URL is, before the gateway proved its identity to an invite.
        let trusted = if config.demo {
            let nonce = countersign_proto::enrollment::new_nonce();
            Some(client.identity(&nonce).await?.gateway_id)
        } else {
            remembered(&config.data_dir, url)
        };
        let known = trusted.map(|id| Signer::load(&id)).transpose()?.flatten();
        let signer = match (known, config.enrollment_code.as_deref()) {
            (Some(signer), _) => signer,
            (None, Some(code)) => {
                let name = config.demo.then_some(config.display_name.as_str());
                match Signer::enroll(&client, code, name).await {
                    Ok(signer) => signer,
                    // The gateway proved it is one this machine is enrolled with, at a new URL.
                    Err(ConsoleError::AlreadyEnrolled { gateway_id }) => {
                        Signer::load(&gateway_id)?.ok_or(ConsoleError::NotEnrolled)?
                    }
                    Err(e) => return Err(e),
                }
            }
            (None, None) => return Err(ConsoleError::NotEnrolled),
        };
        let info = client.with_token(signer.token()).gateway().await?;
        if info.gateway_id != signer.gateway_id() {
            return Err(ConsoleError::Protocol(format!(
                "{url} is gateway {}, not {} this console enrolled with",
                info.gateway_id,
                signer.gateway_id()
            )));
        }
        remember(&config.data_dir, url, signer.gateway_id())?;
        let journal = Journal::open(&config.data_dir.join(JOURNAL)).await?;
        let console = Arc::new(Console::with_signer(url, signer)?.with_journal(journal));
        console.note_outbox().await;
        let changes = console.changes();
        let tasks = vec![
            tokio::spawn(Live::for_console(console.clone(), Timing::default()).run()),
            tokio::spawn(console.clone().fill_gists()),
        ];
        Ok(Session {
            console,
            gateway_name: info.name,
            demo: config.demo,
            changes,
            tasks,
        })
    }

    pub fn console(&self) -> &Arc<Console> {
        &self.console
    }

    /// The last synced state; changes whenever the queue, the link or the outbox does.
    pub fn changes(&self) -> watch::Receiver<Snapshot> {
        self.changes.clone()
    }

    /// The queue as last synced, without I/O.
    pub fn queue(&self) -> QueueView {
        self.console.queue()
    }

    /// The header, from the live snapshot, without I/O.
    pub fn status(&self) -> StatusView {
        let signer = self.console.signer();
        let snapshot = self.console.snapshot();
        StatusView {
            gateway_name: self.gateway_name.clone(),
            gateway_url: self.console.client().base().to_owned(),
            demo: self.demo,
            approver: signer.display_name().to_owned(),
            key_id: signer.key_id().to_owned(),
            link: snapshot.link,
            last_sync: snapshot
                .last_sync
                .map(|t| t.to_rfc3339_opts(SecondsFormat::Secs, true)),
            last_error: snapshot.last_error,
            outbox: snapshot.outbox,
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}
