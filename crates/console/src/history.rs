//! Decisions this console sent, newest first: the statement each envelope carries, what the
//! gateway answered, and whether the signature verifies offline against this console's own keys
//! (current and retired), never against a key the journal row names.

use std::path::Path;

use countersign_proto::decision::Statement;
use countersign_proto::dsse::Envelope;
use serde::Serialize;
use serde_json::Value;
use ts_rs::TS;

use crate::console::Console;
use crate::error::ConsoleError;
use crate::journal::{Journal, JournalEntry};
use crate::{intoto, private_files};

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct HistoryEntry {
    #[ts(type = "number")]
    pub id: i64,
    pub plan_id: String,
    pub decision: String,
    pub reason: Option<String>,
    pub plan_digest: String,
    pub issued_at: String,
    pub recorded_at: String,
    pub attempts: u32,
    /// `pending`, `answered` or `refused`.
    pub state: String,
    #[ts(type = "unknown")]
    pub answer: Option<Value>,
    pub answered_at: Option<String>,
    /// The envelope's signature checked offline against this console's keys.
    pub verified: bool,
    pub verify_error: Option<String>,
    #[ts(type = "unknown")]
    pub envelope: Value,
}

/// The statement inside an envelope, read without trusting it (verification is separate).
fn statement(entry: &JournalEntry) -> Option<Statement> {
    let envelope: Envelope = serde_json::from_value(entry.envelope.clone()).ok()?;
    serde_json::from_slice(&envelope.payload_bytes().ok()?).ok()
}

fn history_entry(entry: JournalEntry, verified: Result<Statement, ConsoleError>) -> HistoryEntry {
    let read = statement(&entry);
    let text = |f: fn(&Statement) -> String| read.as_ref().map(f).unwrap_or_default();
    HistoryEntry {
        id: entry.id,
        reason: read.as_ref().and_then(|s| s.reason.clone()),
        plan_digest: text(|s| s.plan_digest.clone()),
        issued_at: text(|s| {
            s.issued_at
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        }),
        verified: verified.is_ok(),
        verify_error: verified.err().map(|e| e.to_string()),
        plan_id: entry.plan_id,
        decision: entry.decision,
        recorded_at: entry.recorded_at,
        attempts: entry.attempts,
        state: entry.state,
        answer: entry.answer,
        answered_at: entry.answered_at,
        envelope: entry.envelope,
    }
}

fn journal(console: &Console) -> Result<&Journal, ConsoleError> {
    console
        .journal()
        .ok_or_else(|| ConsoleError::Storage("this console keeps no journal".to_owned()))
}

impl Console {
    /// Every decision this console sent to its gateway, newest first, each verified offline.
    pub async fn history(&self) -> Result<Vec<HistoryEntry>, ConsoleError> {
        let entries = journal(self)?
            .entries(Some(self.signer().gateway_id()))
            .await?;
        Ok(entries
            .into_iter()
            .rev()
            .map(|e| {
                let verified = e.verify_with(self.signer());
                history_entry(e, verified)
            })
            .collect())
    }

    /// Writes [`Console::history`] as JSON Lines, oldest first, to `path`: private (0600) and
    /// whole or not at all.
    pub async fn export_history(&self, path: &Path) -> Result<(), ConsoleError> {
        let mut text = String::new();
        for entry in self.history().await?.iter().rev() {
            let line =
                serde_json::to_string(entry).map_err(|e| ConsoleError::Protocol(e.to_string()))?;
            text.push_str(&line);
            text.push('\n');
        }
        private_files::write(path, text.as_bytes())
    }

    /// Writes an audit others can verify to `path` (`docs/audit-export.md`), one in-toto
    /// Statement per line: every decision the gateway accepted from this console, and every
    /// standing approval of this approver with each plan it covered (read from the gateway).
    /// Returns how many entries were written.
    pub async fn export_in_toto(&self, path: &Path) -> Result<usize, ConsoleError> {
        let name = self.signer().display_name();
        let mut lines = Vec::new();
        for entry in self.history().await?.iter().rev() {
            if entry.state != "answered" {
                continue;
            }
            let envelope: Envelope = serde_json::from_value(entry.envelope.clone())
                .map_err(|e| ConsoleError::Protocol(e.to_string()))?;
            lines.push(intoto::decision(&envelope, name).map_err(ConsoleError::Protocol)?);
        }
        let me = self.signer().approver_id();
        let list = self.client().standing().await?;
        for standing in list
            .items
            .iter()
            .rev()
            .filter(|s| s.statement.approver_id == me)
        {
            lines.push(intoto::standing(standing).map_err(ConsoleError::Protocol)?);
            for covered in standing.covered.iter().rev() {
                let plan = self.client().plan(&covered.plan_id).await?;
                let entry = intoto::standing_use(standing, &plan.raw);
                lines.push(entry.map_err(ConsoleError::Protocol)?);
            }
        }
        let mut text = String::new();
        for line in &lines {
            text.push_str(
                &serde_json::to_string(line).map_err(|e| ConsoleError::Protocol(e.to_string()))?,
            );
            text.push('\n');
        }
        private_files::write(path, text.as_bytes())?;
        Ok(lines.len())
    }
}
