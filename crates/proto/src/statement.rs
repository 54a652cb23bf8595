//! What a decision and a standing approval share: a statement an approver signs in a DSSE
//! envelope, whose payload is the RFC 8785 JSON of the statement itself, of one payload type and
//! one statement type, with fields a signature alone does not make valid checked before it is
//! believed. Written once, so that the two are opened the same way.

use ed25519_dalek::{SigningKey, VerifyingKey};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::digest::{jcs, DigestError};
use crate::dsse::{self, DsseError, Envelope};

#[derive(Debug, thiserror::Error)]
pub enum StatementError {
    #[error(transparent)]
    Dsse(#[from] DsseError),
    #[error(transparent)]
    Digest(#[from] DigestError),
    #[error("payload type is not {0}")]
    PayloadType(&'static str),
    #[error("payload is not a {0}: {1}")]
    Malformed(&'static str, String),
    #[error("payload is not the canonical JSON of its own statement")]
    NotCanonical,
    #[error("statement type is not {0}")]
    StatementType(&'static str),
    #[error("{0}")]
    BadField(&'static str),
}

/// The members every statement has, by which it is opened and checked.
pub struct Names<'a> {
    /// Its `type` field.
    pub kind: &'a str,
    /// Who signed it, by its own word.
    pub approver_id: &'a str,
    /// The signer's key id.
    pub key_id: &'a str,
    /// The gateway it is addressed to.
    pub audience: &'a str,
}

/// `names()` of a statement type whose members are called as [`Names`]'s.
#[macro_export]
macro_rules! statement_names {
    () => {
        fn names(&self) -> $crate::statement::Names<'_> {
            $crate::statement::Names {
                kind: &self.kind,
                approver_id: &self.approver_id,
                key_id: &self.key_id,
                audience: &self.audience,
            }
        }
    };
}

/// `len` lowercase hex digits.
pub(crate) fn is_lower_hex(text: &str, len: usize) -> bool {
    text.len() == len && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A nonce of 16 random bytes and a `sha256:` digest, as a decision and a mail remedy carry them.
pub(crate) fn nonce_and_digest(nonce: &str, digest: &str) -> Result<(), &'static str> {
    if !is_lower_hex(nonce, 32) {
        return Err("the nonce must be 32 lowercase hex digits");
    }
    let digest_hex = digest.strip_prefix("sha256:").unwrap_or_default();
    if !is_lower_hex(digest_hex, 64) {
        return Err("the digest must be sha256:<64 lowercase hex>");
    }
    Ok(())
}

/// A statement an approver signs.
pub trait Signed: Serialize + DeserializeOwned {
    /// The envelope's `payloadType`.
    const PAYLOAD_TYPE: &'static str;
    /// The statement's own `type`.
    const STATEMENT_TYPE: &'static str;
    /// What it is, in the error that says a payload is not one.
    const NAME: &'static str;

    /// What every statement names: its type, its signer and key, and its gateway.
    fn names(&self) -> Names<'_>;
    /// The checks of its fields, beyond their types.
    fn well_formed(&self) -> Result<(), &'static str>;

    /// RFC 8785 bytes: exactly what is signed.
    fn canonical_bytes(&self) -> Result<Vec<u8>, DigestError> {
        jcs(self)
    }

    fn sign(&self, key: &SigningKey) -> Result<Envelope, DigestError> {
        Ok(dsse::sign(
            key,
            self.names().key_id,
            Self::PAYLOAD_TYPE,
            &self.canonical_bytes()?,
        ))
    }

    /// Parses a payload and insists it is the JCS of itself with the right `type` and
    /// well-formed fields, so that no two byte strings can stand for one statement.
    fn from_payload(payload: &[u8]) -> Result<Self, StatementError> {
        let statement: Self = serde_json::from_slice(payload)
            .map_err(|e| StatementError::Malformed(Self::NAME, e.to_string()))?;
        if statement.canonical_bytes()? != payload {
            return Err(StatementError::NotCanonical);
        }
        if statement.names().kind != Self::STATEMENT_TYPE {
            return Err(StatementError::StatementType(Self::STATEMENT_TYPE));
        }
        statement.well_formed().map_err(StatementError::BadField)?;
        Ok(statement)
    }

    /// Verifies an envelope under `key` and returns the statement it carries.
    fn open(envelope: &Envelope, key: &VerifyingKey) -> Result<Self, StatementError> {
        let payload = envelope.verify(key)?;
        if envelope.payload_type != Self::PAYLOAD_TYPE {
            return Err(StatementError::PayloadType(Self::PAYLOAD_TYPE));
        }
        Self::from_payload(&payload)
    }
}
