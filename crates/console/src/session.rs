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
use crate::live::clock::Clock;
use crate::live::{Link, Live, Snapshot, Timing};
use crate::private_files;
use crate::review::QueueView;
use crate::signing::confirm::Confirm;
use crate::signing::journal::Journal;
use crate::signing::signer::Signer;

pub struct SessionConfig {
    /// The gateway to follow; for the demo, the one the shell started in-process.
    pub gateway_url: String,
    /// Spent on first contact only when this machine holds no credential for the gateway.
    pub enrollment_code: Option<String>,
    /// The name the demo's invite was issued for; a configured gateway's invite carries its own.
    pub display_name: String,
    /// Where the journal and the remembered gateways live.
    pub data_dir: PathBuf,
    /// The id of the demo gateway the shell started at `gateway_url` in this process: its
    /// credential follows it to each new port, on the shell's word. `None` for any other gateway.
    pub demo: Option<String>,
    /// What snoozes and reminders are judged by: the real clock but in end-to-end tests.
    pub clock: Clock,
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
    /// The approver's teams at the gateway (empty when in none, or while unknown): someone in a
    /// team is asked by its rules, and the queue opens on the plans waiting on them.
    pub teams: Vec<String>,
}

/// A gateway this machine follows, by URL, and the id of its credential in the keyring.
#[derive(Clone, Serialize, Deserialize)]
struct RememberedGateway {
    url: String,
    gateway_id: String,
}

/// The remembered file: a list now, a single gateway in files written before.
#[derive(Deserialize)]
#[serde(untagged)]
enum RememberedFile {
    Many(Vec<RememberedGateway>),
    One(RememberedGateway),
}

/// A console following its gateway: live sync runs as a task until the session is dropped.
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
    let console = match (known_signer(data_dir, url)?, code) {
        (Some(signer), _) => Console::with_signer(url, signer)?,
        (None, Some(code)) => {
            let signer = enroll(url, code, display_name).await?;
            let console = Console::with_signer(url, signer)?;
            remember(data_dir, url, console.signer().gateway_id())?;
            console
        }
        (None, None) => return Err(ConsoleError::NotEnrolled),
    };
    let name = still_enrolled(&console, url).await?;
    let journal = Journal::open(&data_dir.join(JOURNAL)).await?;
    Ok((console.with_journal(journal), name))
}

/// Where the snoozes of this machine's approver at `gateway_id` are kept.
fn snooze_file(data_dir: &Path, gateway_id: &str) -> PathBuf {
    // The id is the gateway's word: never a path of its own.
    let name: String = gateway_id
        .chars()
        .map(|c| match c.is_ascii_alphanumeric() || c == '-' {
            true => c,
            false => '_',
        })
        .collect();
    data_dir.join(format!("snoozes-{name}.json"))
}

/// The gateway's name, once it says it is still the one `console`'s credential was enrolled with.
async fn still_enrolled(console: &Console, url: &str) -> Result<String, ConsoleError> {
    let info = console.client().gateway().await?;
    let enrolled = console.signer().gateway_id();
    if info.gateway_id != enrolled {
        return Err(ConsoleError::Protocol(format!(
            "{url} is now gateway {}, not {enrolled} this console enrolled with",
            info.gateway_id
        )));
    }
    Ok(info.name)
}

/// Enrolls at `url` with the invite `code`. A gateway proving the identity of one this machine
/// already holds a credential for is refused as that credential's business: its token is never
/// sent to a new URL this way (a relay can present the real gateway's proof), only moved there
/// with [`move_credential`].
async fn enroll(url: &str, code: &str, display_name: Option<&str>) -> Result<Signer, ConsoleError> {
    let client = GatewayClient::new(url, None)?;
    match Signer::enroll(&client, code, display_name).await {
        Err(ConsoleError::AlreadyEnrolled { gateway_id }) => {
            let held = Signer::load(&gateway_id)?.ok_or(ConsoleError::NotEnrolled)?;
            let asked = crate::signing::signer::origin_of(url)?;
            if held.origin() == Some(asked.as_str()) {
                // Its own origin, no longer remembered: the code stays unspent.
                return Ok(held);
            }
            Err(held.elsewhere(&asked))
        }
        other => other,
    }
}

/// This machine's credential for the gateway remembered at `url`; one filed before origins were
/// kept is bound to `url` here, the URL it has been used with.
fn known_signer(data_dir: &Path, url: &str) -> Result<Option<Signer>, ConsoleError> {
    let Some(gateway_id) = remembered(data_dir, url) else {
        return Ok(None);
    };
    let Some(mut signer) = Signer::load(&gateway_id)? else {
        return Ok(None);
    };
    signer.adopt_origin(url)?;
    Ok(Some(signer))
}

fn remembered_all(data_dir: &Path) -> Vec<RememberedGateway> {
    let Ok(text) = std::fs::read_to_string(data_dir.join(REMEMBERED)) else {
        return Vec::new();
    };
    match serde_json::from_str(&text) {
        Ok(RememberedFile::Many(all)) => all,
        Ok(RememberedFile::One(one)) => vec![one],
        Err(_) => Vec::new(),
    }
}

fn remembered(data_dir: &Path, url: &str) -> Option<String> {
    remembered_all(data_dir)
        .into_iter()
        .find(|r| r.url == url)
        .map(|r| r.gateway_id)
}

/// Whether this machine has followed any configured gateway: an enrollment code from the
/// environment is for the first enrollment only.
pub fn enrolled_anywhere(data_dir: &Path) -> bool {
    !remembered_all(data_dir).is_empty()
}

/// The gateway whose credential this machine sends to `url`, if any.
pub fn gateway_at(data_dir: &Path, url: &str) -> Option<String> {
    remembered(data_dir, url.trim())
}

/// Files `url` as the gateway `gateway_id` is followed at, dropping any other URL the same
/// credential was remembered at: it is bound to one origin.
fn remember(data_dir: &Path, url: &str, gateway_id: &str) -> Result<(), ConsoleError> {
    let mut all = remembered_all(data_dir);
    all.retain(|r| r.url != url && r.gateway_id != gateway_id);
    all.push(RememberedGateway {
        url: url.to_owned(),
        gateway_id: gateway_id.to_owned(),
    });
    let text = serde_json::to_string(&all).map_err(|e| ConsoleError::Invalid(e.to_string()))?;
    private_files::write(&data_dir.join(REMEMBERED), text.as_bytes())
}

/// Moves this machine's credential for `gateway_id` to `to`: the gateway there must prove, fresh,
/// the identity key the credential was enrolled under, and the approver must confirm a question
/// that names both URLs (a native dialog on the desktop, outside the page's reach). Nothing is
/// sent with the token before both.
pub async fn move_credential(
    data_dir: &Path,
    gateway_id: &str,
    to: &str,
    confirm: &dyn Confirm,
) -> Result<(), ConsoleError> {
    let to = to.trim();
    let mut signer = Signer::load(gateway_id)?.ok_or(ConsoleError::NotEnrolled)?;
    let from = signer.origin().unwrap_or("an unknown URL").to_owned();
    // The origin, as it will be kept: what the token will be sent to, whatever the URL's path.
    let target = crate::signing::signer::origin_of(to)?;
    let question = format!(
        "Your approver credential for gateway {gateway_id} is sent only to\n  {from}\n\nThe \
         server at\n  {target}\nanswers for that gateway's identity key, as the gateway would \
         at a new address, and as a proxy in front of it would. Move the credential only if \
         the gateway itself moved there: send it to {target} from now on, and no longer to \
         {from}?"
    );
    let asked = || {
        crate::signing::confirm::ask(
            confirm,
            "Move your credential to another URL?",
            &question,
            &[],
        )
    };
    signer.move_to(to, asked).await?;
    remember(data_dir, to, gateway_id)
}

impl Session {
    /// Connects to the gateway, with this machine's credential for it when there is one (the
    /// enrollment code is then left unspent), else by enrolling with the code; opens the journal
    /// and starts live sync.
    pub async fn start(config: SessionConfig) -> Result<Session, ConsoleError> {
        private_files::create_dir(&config.data_dir)?;
        let url = config.gateway_url.trim();
        let known = match &config.demo {
            Some(gateway_id) => match Signer::load(gateway_id)? {
                Some(mut signer) => {
                    signer.bind_vouched(url)?;
                    Some(signer)
                }
                None => None,
            },
            None => known_signer(&config.data_dir, url)?,
        };
        let signer = match (known, config.enrollment_code.as_deref()) {
            (Some(signer), _) => signer,
            (None, Some(code)) => {
                let name = config
                    .demo
                    .is_some()
                    .then_some(config.display_name.as_str());
                enroll(url, code, name).await?
            }
            (None, None) => return Err(ConsoleError::NotEnrolled),
        };
        let console = Console::with_signer(url, signer)?;
        let gateway_name = still_enrolled(&console, url).await?;
        if config.demo.is_none() {
            remember(&config.data_dir, url, console.signer().gateway_id())?;
        }
        let journal = Journal::open(&config.data_dir.join(JOURNAL)).await?;
        let snoozes = snooze_file(&config.data_dir, console.signer().gateway_id());
        let console = Arc::new(
            console
                .with_journal(journal)
                .with_clock(config.clock)
                .with_snoozes_kept_in(snoozes),
        );
        console.note_outbox().await;
        let changes = console.changes();
        let tasks = vec![tokio::spawn(
            Live::for_console(console.clone(), Timing::default()).run(),
        )];
        Ok(Session {
            console,
            gateway_name,
            demo: config.demo.is_some(),
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
            teams: snapshot.me.map(|me| me.teams).unwrap_or_default(),
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
