//! Key rotation: an approver's current key vouches for the next one. The gateway keeps retired
//! keys (inactive) so that every decision they signed stays verifiable.

use chrono::{DateTime, Utc};
use ed25519_dalek::{SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};

use crate::digest::{jcs, DigestError};
use crate::dsse::{self, encode_public_key, Envelope};

pub const KEY_PAYLOAD_TYPE: &str = "application/vnd.countersign.key+json";
pub const KEY_ROTATION_TYPE: &str = "countersign.key_rotation/v1";

/// "Approver A at gateway G now signs with this key", signed with A's current key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct KeyRotation {
    #[serde(rename = "type")]
    pub kind: String,
    pub approver_id: String,
    pub public_key: String,
    pub audience: String,
    pub issued_at: DateTime<Utc>,
}

impl KeyRotation {
    pub fn new(
        approver_id: &str,
        next: &VerifyingKey,
        audience: &str,
        issued_at: DateTime<Utc>,
    ) -> Self {
        KeyRotation {
            kind: KEY_ROTATION_TYPE.to_owned(),
            approver_id: approver_id.to_owned(),
            public_key: encode_public_key(next),
            audience: audience.to_owned(),
            issued_at,
        }
    }

    /// The envelope `POST /v1/approvers/keys` takes, signed with the current key `key_id`.
    pub fn sign(&self, current: &SigningKey, key_id: &str) -> Result<Envelope, DigestError> {
        Ok(dsse::sign(current, key_id, KEY_PAYLOAD_TYPE, &jcs(self)?))
    }
}

/// `POST /v1/approvers/keys` answers with the new key's id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RotatedKey {
    pub key_id: String,
}
