//! The decision statement an approver signs (PROTOCOL section 3).

use chrono::{DateTime, Utc};
use ed25519_dalek::{SigningKey, VerifyingKey};
use rand::RngCore as _;
use serde::{Deserialize, Serialize};

use crate::digest::{jcs, DigestError};
use crate::dsse::{self, DsseError, Envelope, DECISION_PAYLOAD_TYPE};

pub const STATEMENT_TYPE: &str = "countersign.decision/v1";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Approve,
    Reject,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Statement {
    #[serde(rename = "type")]
    pub kind: String,
    pub plan_id: String,
    pub plan_digest: String,
    pub decision: Decision,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub approver_id: String,
    pub key_id: String,
    pub audience: String,
    pub nonce: String,
    pub issued_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

/// 16 random bytes as 32 lowercase hex digits.
pub fn new_nonce() -> String {
    let mut bytes = [0u8; 16];
    rand::thread_rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

#[derive(Debug, thiserror::Error)]
pub enum StatementError {
    #[error(transparent)]
    Dsse(#[from] DsseError),
    #[error(transparent)]
    Digest(#[from] DigestError),
    #[error("payload type is not {DECISION_PAYLOAD_TYPE}")]
    PayloadType,
    #[error("payload is not a decision statement: {0}")]
    Malformed(String),
    #[error("payload is not the canonical JSON of its own statement")]
    NotCanonical,
    #[error("statement type is not {STATEMENT_TYPE}")]
    StatementType,
    #[error("{0}")]
    BadField(&'static str),
}

pub(crate) fn is_lower_hex(text: &str, len: usize) -> bool {
    text.len() == len && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

impl Statement {
    /// RFC 8785 bytes: exactly what is signed.
    pub fn canonical_bytes(&self) -> Result<Vec<u8>, DigestError> {
        jcs(self)
    }

    pub fn sign(&self, key: &SigningKey) -> Result<Envelope, DigestError> {
        Ok(dsse::sign(
            key,
            &self.key_id,
            DECISION_PAYLOAD_TYPE,
            &self.canonical_bytes()?,
        ))
    }

    /// Parses a payload and insists it is the JCS of itself with the right `type`, so that no
    /// two byte strings can stand for one statement.
    pub fn from_payload(payload: &[u8]) -> Result<Statement, StatementError> {
        let statement: Statement = serde_json::from_slice(payload)
            .map_err(|e| StatementError::Malformed(e.to_string()))?;
        if statement.canonical_bytes()? != payload {
            return Err(StatementError::NotCanonical);
        }
        if statement.kind != STATEMENT_TYPE {
            return Err(StatementError::StatementType);
        }
        if !is_lower_hex(&statement.nonce, 32) {
            return Err(StatementError::BadField(
                "the nonce must be 32 lowercase hex digits",
            ));
        }
        let digest_hex = statement
            .plan_digest
            .strip_prefix("sha256:")
            .unwrap_or_default();
        if !is_lower_hex(digest_hex, 64) {
            return Err(StatementError::BadField(
                "plan_digest must be sha256:<64 lowercase hex>",
            ));
        }
        Ok(statement)
    }

    /// Verifies an envelope under `key` and returns the statement it carries.
    pub fn open(envelope: &Envelope, key: &VerifyingKey) -> Result<Statement, StatementError> {
        let payload = envelope.verify(key)?;
        if envelope.payload_type != DECISION_PAYLOAD_TYPE {
            return Err(StatementError::PayloadType);
        }
        Statement::from_payload(&payload)
    }
}
