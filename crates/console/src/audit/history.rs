//! Decisions this console sent, newest first: the statement each envelope carries, what the
//! gateway answered, and whether the signature verifies offline against this console's own keys
//! (current and retired), never against a key the journal row names.

use std::path::Path;

use countersign_proto::approvals::ApproverKeys;
use countersign_proto::decision::Statement;
use countersign_proto::dsse::decode_public_key;
use countersign_proto::dsse::Envelope;
use countersign_proto::enrollment;
use serde::Serialize;
use serde_json::Value;
use ts_rs::TS;

use crate::console::Console;
use crate::error::ConsoleError;
use crate::signing::journal::{Journal, JournalEntry};
use crate::{audit::intoto, private_files};

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

/// Whether `public_key` (base64url) is the key `fingerprint` names.
fn names(public_key: &str, fingerprint: &str) -> bool {
    decode_public_key(public_key).is_ok_and(|key| enrollment::fingerprint(&key) == fingerprint)
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
    /// Statement per line, each with the gateway's receipt: every decision the gateway accepted
    /// from this console, and every standing approval of this approver with each plan it let
    /// run (read from the gateway).
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
            let receipt = self.receipt(entry, &envelope).await?;
            let line = intoto::decision(&envelope, name, &receipt);
            lines.push(line.map_err(ConsoleError::Protocol)?);
        }
        let me = self.signer().approver_id();
        let list = self.client().all_standing().await?;
        for standing in list.iter().rev().filter(|s| s.statement.approver_id == me) {
            lines.push(intoto::standing(standing).map_err(ConsoleError::Protocol)?);
            for used in standing.uses.iter().rev() {
                let plan = self.client().plan(&used.plan_id).await?;
                let entry = intoto::standing_use(standing, used, &plan.raw);
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

    /// The gateway's approver keys and its own identity key, which signs its receipts: the key
    /// the invite this console enrolled with named, or the answer is refused.
    pub async fn approver_keys(&self) -> Result<ApproverKeys, ConsoleError> {
        let keys = self.client().approver_keys().await?;
        let Some(enrolled) = self.signer().identity_fingerprint() else {
            return Ok(keys);
        };
        match &keys.gateway_key {
            Some(key) if key.fingerprint == enrolled && names(&key.public_key, enrolled) => {
                Ok(keys)
            }
            _ => Err(ConsoleError::Protocol(format!(
                "the gateway's key is not the identity key {enrolled} this console enrolled with"
            ))),
        }
    }

    /// The gateway's receipt for a decision this console sent: in the answer the journal kept,
    /// or, for an answer from before receipts, asked for by sending the identical envelope
    /// again, which the gateway answers as it did and counts once (PROTOCOL section 3).
    async fn receipt(
        &self,
        entry: &HistoryEntry,
        envelope: &Envelope,
    ) -> Result<Envelope, ConsoleError> {
        let kept = entry
            .answer
            .as_ref()
            .and_then(|answer| answer.get("receipt"))
            .and_then(|receipt| serde_json::from_value(receipt.clone()).ok());
        if let Some(receipt) = kept {
            return Ok(receipt);
        }
        let answer = self.client().decide(&entry.plan_id, envelope).await?;
        answer.receipt.ok_or_else(|| {
            ConsoleError::Protocol(format!(
                "the gateway gave no receipt for the decision on {}",
                entry.plan_id
            ))
        })
    }
}
