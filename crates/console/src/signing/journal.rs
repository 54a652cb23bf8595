//! The decision outbox and journal (SQLite in the app data directory). A decision is written
//! before it is sent and resent, byte for byte, until the gateway answers definitively: never
//! lost, and counted once, since the gateway answers an identical envelope as it did the first
//! time. Every entry keeps its envelope; it verifies offline against the keys this machine holds
//! in the keyring for the approver, never against a key the journal row itself names.

use std::borrow::Cow;
use std::io::Write;
use std::path::Path;
use std::str::FromStr;

use chrono::Utc;
use countersign_proto::approvals::DecisionResponse;
use countersign_proto::decision::{Decision, Statement};
use countersign_proto::dsse::Envelope;
use countersign_proto::statement::Signed as _;
use countersign_proto::ErrorCode;
use serde::Serialize;
use serde_json::Value;
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::SqlitePool;
use ts_rs::TS;

use crate::client::GatewayClient;
use crate::error::{ConsoleError, ErrorView};
use crate::private_files;
use crate::signing::signer::Signer;

/// The journal's one migration, embedded as `sqlx::migrate!` would (same version, description
/// and checksum, so journals it made carry on) without the proc macro, which compiles the database
/// drivers a second time for the build host.
fn journal_migrator() -> Migrator {
    let sql = include_str!("../../migrations/0001_journal.sql");
    Migrator {
        migrations: Cow::Owned(vec![Migration::new(
            1,
            Cow::Borrowed("journal"),
            MigrationType::Simple,
            Cow::Borrowed(sql),
            false,
        )]),
        ignore_missing: false,
        locking: true,
        no_tx: false,
    }
}

const PENDING: &str = "pending";
const ANSWERED: &str = "answered";
const REFUSED: &str = "refused";

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct JournalEntry {
    #[ts(type = "number")]
    pub id: i64,
    pub gateway_id: String,
    pub plan_id: String,
    pub decision: String,
    /// The DSSE envelope exactly as sent.
    #[ts(type = "unknown")]
    pub envelope: Value,
    pub public_key: String,
    pub recorded_at: String,
    pub attempts: u32,
    /// `pending` (not yet answered), `answered` (accepted) or `refused` (with the gateway's code).
    pub state: String,
    #[ts(type = "unknown")]
    pub answer: Option<Value>,
    pub answered_at: Option<String>,
}

impl JournalEntry {
    /// Re-verifies the signed statement, without the gateway, against the keys this machine's
    /// keyring holds for the entry's gateway (see [`JournalEntry::verify_with`]).
    pub fn verify(&self) -> Result<Statement, ConsoleError> {
        let signer = Signer::load(&self.gateway_id)?.ok_or(ConsoleError::NotEnrolled)?;
        self.verify_with(&signer)
    }

    /// Re-verifies the signed statement with the key of `signer` (current or retired) that the
    /// envelope names: a row whose envelope another key signed does not verify, whatever public
    /// key the row carries.
    pub fn verify_with(&self, signer: &Signer) -> Result<Statement, ConsoleError> {
        let broken = |e: &dyn std::fmt::Display| {
            ConsoleError::Protocol(format!("journal entry {}: {e}", self.id))
        };
        if signer.gateway_id() != self.gateway_id {
            return Err(broken(&"recorded for another gateway"));
        }
        let envelope: Envelope =
            serde_json::from_value(self.envelope.clone()).map_err(|e| broken(&e))?;
        let key_id = &envelope.signature().map_err(|e| broken(&e))?.keyid;
        let key = signer.verifying_key(key_id).ok_or_else(|| {
            broken(&format!(
                "signed with {key_id}, which is not a key this machine holds for {}",
                signer.approver_id()
            ))
        })?;
        let statement = Statement::open(&envelope, &key).map_err(|e| broken(&e))?;
        if statement.approver_id != signer.approver_id() {
            return Err(broken(&"the statement names another approver"));
        }
        Ok(statement)
    }
}

/// What became of one send.
#[derive(Debug)]
pub enum Delivery {
    Answered(DecisionResponse),
    /// A definitive refusal: the gateway's code and message.
    Refused(ConsoleError),
    /// No definitive answer yet; the entry stays pending and is sent again later.
    Queued(ConsoleError),
}

/// What one pass over the outbox did.
#[derive(Debug, Default)]
pub struct Flushed {
    pub answered: usize,
    /// Plans whose queued decision the gateway refused, and why: someone must be told.
    pub refused: Vec<(String, ErrorView)>,
    pub waiting: usize,
}

/// The stored outcome of an entry another send (or process) already settled.
fn settled(entry: &JournalEntry) -> Result<Delivery, ConsoleError> {
    let answer = entry.answer.clone().unwrap_or_default();
    if entry.state == ANSWERED {
        return serde_json::from_value(answer)
            .map(Delivery::Answered)
            .map_err(|e| ConsoleError::Protocol(e.to_string()));
    }
    let code = serde_json::from_value(answer["code"].clone()).unwrap_or(ErrorCode::Internal);
    Ok(Delivery::Refused(ConsoleError::Gateway {
        code,
        message: answer["message"].as_str().unwrap_or_default().to_owned(),
        details: answer["details"].clone(),
    }))
}

#[derive(Clone)]
pub struct Journal {
    pool: SqlitePool,
}

type Row = (
    i64,
    String,
    String,
    String,
    String,
    String,
    String,
    i64,
    String,
    Option<String>,
    Option<String>,
);

const COLUMNS: &str = "id, gateway_id, plan_id, decision, envelope, public_key, recorded_at,
                       attempts, state, answer, answered_at";

fn entry(row: Row) -> Result<JournalEntry, ConsoleError> {
    let parse = |text: &str| {
        serde_json::from_str::<Value>(text).map_err(|e| ConsoleError::Protocol(e.to_string()))
    };
    Ok(JournalEntry {
        id: row.0,
        gateway_id: row.1,
        plan_id: row.2,
        decision: row.3,
        envelope: parse(&row.4)?,
        public_key: row.5,
        recorded_at: row.6,
        attempts: row.7.try_into().unwrap_or(u32::MAX),
        state: row.8,
        answer: row.9.as_deref().map(parse).transpose()?,
        answered_at: row.10,
    })
}

fn store_error(e: sqlx::Error) -> ConsoleError {
    ConsoleError::Storage(e.to_string())
}

fn now() -> String {
    Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

impl Journal {
    /// Opens (creating) the journal at `path`.
    pub async fn open(path: &Path) -> Result<Journal, ConsoleError> {
        if let Some(dir) = path.parent() {
            private_files::create_dir(dir)?;
        }
        let options = SqliteConnectOptions::from_str(&format!("sqlite://{}", path.display()))
            .map_err(store_error)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // A commit survives the app's crash without a flush; only a decision left waiting
            // needs to survive the machine's, and `attempted` flushes it (docs/decisions.md, "The
            // outbox's flushes").
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(std::time::Duration::from_secs(10));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await
            .map_err(store_error)?;
        journal_migrator()
            .run(&pool)
            .await
            .map_err(|e| ConsoleError::Storage(e.to_string()))?;
        let sidecar = |suffix: &str| {
            let mut name = path.as_os_str().to_owned();
            name.push(suffix);
            std::path::PathBuf::from(name)
        };
        private_files::restrict(&[path, &sidecar("-wal"), &sidecar("-shm")])?;
        Ok(Journal { pool })
    }

    /// Writes a signed decision before it is sent; its id.
    pub async fn record(
        &self,
        gateway_id: &str,
        plan_id: &str,
        decision: Decision,
        envelope: &Envelope,
        public_key: &str,
    ) -> Result<i64, ConsoleError> {
        let text =
            serde_json::to_string(envelope).map_err(|e| ConsoleError::Protocol(e.to_string()))?;
        sqlx::query_scalar(
            "INSERT INTO decisions (gateway_id, plan_id, decision, envelope, public_key, recorded_at, state)
             VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
        )
        .bind(gateway_id)
        .bind(plan_id)
        .bind(match decision {
            Decision::Approve => "approve",
            Decision::Reject => "reject",
        })
        .bind(text)
        .bind(public_key)
        .bind(now())
        .bind(PENDING)
        .fetch_one(&self.pool)
        .await
        .map_err(store_error)
    }

    pub async fn get(&self, id: i64) -> Result<JournalEntry, ConsoleError> {
        let row: Row = sqlx::query_as(&format!("SELECT {COLUMNS} FROM decisions WHERE id = ?"))
            .bind(id)
            .fetch_one(&self.pool)
            .await
            .map_err(store_error)?;
        entry(row)
    }

    /// Every entry, oldest first (`gateway_id` narrows it to one gateway).
    pub async fn entries(
        &self,
        gateway_id: Option<&str>,
    ) -> Result<Vec<JournalEntry>, ConsoleError> {
        let rows: Vec<Row> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM decisions WHERE ?1 IS NULL OR gateway_id = ?1 ORDER BY id"
        ))
        .bind(gateway_id)
        .fetch_all(&self.pool)
        .await
        .map_err(store_error)?;
        rows.into_iter().map(entry).collect()
    }

    /// The entries still waiting for an answer: read on every sync and decision, so from the
    /// index, not by reading the whole history.
    pub async fn pending(&self, gateway_id: &str) -> Result<Vec<JournalEntry>, ConsoleError> {
        let rows: Vec<Row> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM decisions WHERE gateway_id = ? AND state = ? ORDER BY id"
        ))
        .bind(gateway_id)
        .bind(PENDING)
        .fetch_all(&self.pool)
        .await
        .map_err(store_error)?;
        rows.into_iter().map(entry).collect()
    }

    /// Writes the journal as JSON Lines, one entry per line.
    pub async fn export(&self, out: &mut impl Write) -> Result<usize, ConsoleError> {
        let entries = self.entries(None).await?;
        for e in &entries {
            let line =
                serde_json::to_string(e).map_err(|e| ConsoleError::Protocol(e.to_string()))?;
            writeln!(out, "{line}").map_err(|e| ConsoleError::Storage(e.to_string()))?;
        }
        Ok(entries.len())
    }

    /// Settles a pending entry; an entry another process settled first keeps its answer.
    async fn settle(&self, id: i64, state: &str, answer: &Value) -> Result<(), ConsoleError> {
        sqlx::query(
            "UPDATE decisions SET state = ?, answer = ?, answered_at = ?, attempts = attempts + 1
             WHERE id = ? AND state = 'pending'",
        )
        .bind(state)
        .bind(answer.to_string())
        .bind(now())
        .bind(id)
        .execute(&self.pool)
        .await
        .map_err(store_error)?;
        Ok(())
    }

    /// Counts a failed attempt at entry `id`, which now waits in the outbox: committed with the
    /// log flushed, and with it every commit before, its own record among them.
    async fn attempted(&self, id: i64) -> Result<(), ConsoleError> {
        let mut conn = self.pool.acquire().await.map_err(store_error)?;
        sqlx::query("PRAGMA synchronous = FULL")
            .execute(&mut *conn)
            .await
            .map_err(store_error)?;
        let counted = sqlx::query("UPDATE decisions SET attempts = attempts + 1 WHERE id = ?")
            .bind(id)
            .execute(&mut *conn)
            .await;
        let restored = sqlx::query("PRAGMA synchronous = NORMAL")
            .execute(&mut *conn)
            .await;
        if restored.is_err() {
            // A connection left flushing every commit is slow, not wrong; it is not kept.
            conn.detach();
        }
        counted.map_err(store_error)?;
        Ok(())
    }

    /// Sends entry `id` once (its stored envelope, unchanged) and records what came back.
    pub async fn deliver(&self, client: &GatewayClient, id: i64) -> Result<Delivery, ConsoleError> {
        let entry = self.get(id).await?;
        if entry.state != PENDING {
            return settled(&entry);
        }
        let envelope: Envelope = serde_json::from_value(entry.envelope.clone())
            .map_err(|e| ConsoleError::Protocol(e.to_string()))?;
        match client.decide(&entry.plan_id, &envelope).await {
            Ok(answer) => {
                let value = serde_json::to_value(&answer)
                    .map_err(|e| ConsoleError::Protocol(e.to_string()))?;
                self.settle(id, ANSWERED, &value).await?;
                Ok(Delivery::Answered(answer))
            }
            Err(ConsoleError::Gateway {
                code,
                message,
                details,
            }) if !code.retryable() => {
                let value =
                    serde_json::json!({"code": code, "message": message, "details": details});
                self.settle(id, REFUSED, &value).await?;
                Ok(Delivery::Refused(ConsoleError::Gateway {
                    code,
                    message,
                    details,
                }))
            }
            // A code newer than this console: a 4xx is the gateway's answer all the same.
            Err(ConsoleError::UnknownGateway {
                code,
                status,
                message,
                details,
            }) if status < 500 => {
                let value =
                    serde_json::json!({"code": code, "message": message, "details": details});
                self.settle(id, REFUSED, &value).await?;
                Ok(Delivery::Refused(ConsoleError::UnknownGateway {
                    code,
                    status,
                    message,
                    details,
                }))
            }
            Err(e) => {
                self.attempted(id).await?;
                Ok(Delivery::Queued(e))
            }
        }
    }

    /// Sends every pending entry for `gateway_id` once.
    pub async fn flush(
        &self,
        client: &GatewayClient,
        gateway_id: &str,
    ) -> Result<Flushed, ConsoleError> {
        let mut flushed = Flushed::default();
        for e in self.pending(gateway_id).await? {
            match self.deliver(client, e.id).await? {
                Delivery::Answered(_) => flushed.answered += 1,
                Delivery::Refused(error) => flushed.refused.push((e.plan_id, error.view())),
                Delivery::Queued(_) => flushed.waiting += 1,
            }
        }
        Ok(flushed)
    }

    /// Marks `plan_id` as seen; true if it was not seen before.
    pub async fn first_sight(&self, gateway_id: &str, plan_id: &str) -> Result<bool, ConsoleError> {
        let inserted =
            sqlx::query("INSERT OR IGNORE INTO seen_plans (gateway_id, plan_id) VALUES (?, ?)")
                .bind(gateway_id)
                .bind(plan_id)
                .execute(&self.pool)
                .await
                .map_err(store_error)?;
        Ok(inserted.rows_affected() == 1)
    }
}

#[cfg(test)]
mod tests {
    /// A migration added to the folder and not embedded would never run.
    #[test]
    fn the_journal_embeds_every_migration_of_its_folder() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
        let files: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(files, ["0001_journal.sql"]);
        assert_eq!(super::journal_migrator().iter().count(), 1);
    }

    /// A commit is not flushed by itself (a decision the gateway answered needs no flush: it is
    /// the gateway's); the attempt that leaves one waiting flushes at FULL and puts its connection
    /// back as it found it.
    #[tokio::test]
    async fn only_a_decision_left_waiting_is_flushed() {
        use super::*;
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::open(&dir.path().join("journal.db")).await.unwrap();
        let key = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
        let envelope = countersign_proto::dsse::sign(&key, "key_1", "application/x", b"{}");
        let id = journal
            .record("gw_1", "plan_1", Decision::Approve, &envelope, "pk")
            .await
            .unwrap();
        // Nothing listens on port 1: the attempt fails and the entry waits.
        let client = GatewayClient::new("http://127.0.0.1:1", Some("t".into())).unwrap();
        let delivery = journal.deliver(&client, id).await.unwrap();
        assert!(matches!(delivery, Delivery::Queued(_)));
        assert_eq!(journal.get(id).await.unwrap().attempts, 1);
        let mut held = Vec::new();
        for _ in 0..4 {
            let mut conn = journal.pool.acquire().await.unwrap();
            let level: i64 = sqlx::query_scalar("PRAGMA synchronous")
                .fetch_one(&mut *conn)
                .await
                .unwrap();
            assert_eq!(level, 1, "NORMAL, not FULL (2)");
            held.push(conn);
        }
    }
}
