//! The gateway's receipt (`docs/audit-export.md`): its identity key's signature over what it
//! accepted and when. An approver's signature says what they decided; only the gateway can say
//! when it accepted that, so an exported decision, standing approval or standing approval's use
//! carries a receipt, and revocation is judged by the receipt's time, not by the time the
//! signer wrote into their own statement.

use chrono::{DateTime, Utc};
use ed25519_dalek::{SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};

use crate::digest::{jcs, sha256, DigestError};
use crate::dsse::{self, pae, DsseError, Envelope};
use crate::enrollment::fingerprint;

pub const RECEIPT_TYPE: &str = "countersign.receipt/v1";
pub const RECEIPT_PAYLOAD_TYPE: &str = "application/vnd.countersign.receipt+json";

/// What a receipt says the gateway accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Accepted {
    /// A signed decision on one plan.
    Decision,
    /// A standing approval itself.
    Standing,
    /// A plan a standing approval let run: one of its uses.
    StandingUse,
}

/// The statement the gateway signs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Receipt {
    #[serde(rename = "type")]
    pub kind: String,
    pub gateway_id: String,
    pub accepted: Accepted,
    /// [`envelope_digest`] of the envelope accepted (the approver's decision or standing
    /// approval).
    pub envelope_digest: String,
    /// The plan decided, or the plan a standing approval let run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_digest: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standing_id: Option<String>,
    /// For a use: its number, 1 for the first plan the standing approval let run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub use_number: Option<u32>,
    /// When the gateway accepted the envelope (for a use: when the plan ran on it).
    pub accepted_at: DateTime<Utc>,
}

#[derive(Debug, thiserror::Error)]
pub enum ReceiptError {
    #[error(transparent)]
    Dsse(#[from] DsseError),
    #[error(transparent)]
    Digest(#[from] DigestError),
    #[error("the receipt is not signed by the gateway's identity key")]
    Signer,
    #[error("payload type is not {RECEIPT_PAYLOAD_TYPE}")]
    PayloadType,
    #[error("the receipt's payload is not a receipt: {0}")]
    Malformed(String),
    #[error("the receipt's payload is not the canonical JSON of its own statement")]
    NotCanonical,
}

/// `sha256:` over the bytes an envelope's signature covers, `PAE(payloadType, payload)`: one
/// digest names one signed statement of one type.
pub fn envelope_digest(envelope: &Envelope) -> Result<String, DsseError> {
    Ok(sha256(&pae(
        &envelope.payload_type,
        &envelope.payload_bytes()?,
    )))
}

impl Receipt {
    /// A receipt for `envelope`, accepted at `accepted_at` by gateway `gateway_id`; the plan,
    /// standing approval and use number are set by the caller as what was accepted requires.
    pub fn of(
        gateway_id: &str,
        accepted: Accepted,
        envelope: &Envelope,
        accepted_at: DateTime<Utc>,
    ) -> Result<Receipt, DsseError> {
        Ok(Receipt {
            kind: RECEIPT_TYPE.to_owned(),
            gateway_id: gateway_id.to_owned(),
            accepted,
            envelope_digest: envelope_digest(envelope)?,
            plan_id: None,
            plan_digest: None,
            standing_id: None,
            use_number: None,
            accepted_at,
        })
    }

    /// Signed with the gateway's identity key, its fingerprint as the key id.
    pub fn sign(&self, identity: &SigningKey) -> Result<Envelope, DigestError> {
        let keyid = fingerprint(&identity.verifying_key());
        Ok(dsse::sign(
            identity,
            &keyid,
            RECEIPT_PAYLOAD_TYPE,
            &jcs(self)?,
        ))
    }

    /// The receipt `envelope` carries, verified under the gateway's identity key `identity`.
    pub fn open(envelope: &Envelope, identity: &VerifyingKey) -> Result<Receipt, ReceiptError> {
        if envelope.signature()?.keyid != fingerprint(identity) {
            return Err(ReceiptError::Signer);
        }
        let payload = envelope.verify(identity)?;
        if envelope.payload_type != RECEIPT_PAYLOAD_TYPE {
            return Err(ReceiptError::PayloadType);
        }
        let receipt: Receipt =
            serde_json::from_slice(&payload).map_err(|e| ReceiptError::Malformed(e.to_string()))?;
        if jcs(&receipt)? != payload || receipt.kind != RECEIPT_TYPE {
            return Err(ReceiptError::NotCanonical);
        }
        Ok(receipt)
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn accepted() -> (SigningKey, Envelope, Receipt) {
        let approver = SigningKey::from_bytes(&[3; 32]);
        let decision = dsse::sign(&approver, "key_1", "application/x-test", b"{}");
        let at = Utc.with_ymd_and_hms(2026, 12, 5, 10, 0, 0).unwrap();
        let mut receipt = Receipt::of("gw_1", Accepted::Decision, &decision, at).unwrap();
        receipt.plan_id = Some("plan_1".into());
        receipt.plan_digest = Some(sha256(b"plan"));
        (SigningKey::from_bytes(&[7; 32]), decision, receipt)
    }

    #[test]
    fn a_receipt_opens_under_its_gateway_key_only() {
        let (gateway, decision, receipt) = accepted();
        let signed = receipt.sign(&gateway).unwrap();
        let opened = Receipt::open(&signed, &gateway.verifying_key()).unwrap();
        assert_eq!(opened, receipt);
        assert_eq!(opened.envelope_digest, envelope_digest(&decision).unwrap());
        let other = SigningKey::from_bytes(&[8; 32]).verifying_key();
        assert!(matches!(
            Receipt::open(&signed, &other),
            Err(ReceiptError::Signer)
        ));
        // Signed by another key under this gateway's key id: the signature fails.
        let mut forged = receipt.sign(&SigningKey::from_bytes(&[8; 32])).unwrap();
        forged.signatures[0].keyid = fingerprint(&gateway.verifying_key());
        assert!(Receipt::open(&forged, &gateway.verifying_key()).is_err());
    }

    #[test]
    fn the_envelope_digest_names_the_payload_and_its_type() {
        let (_, decision, _) = accepted();
        let mut retyped = decision.clone();
        retyped.payload_type = "application/x-other".into();
        assert_ne!(
            envelope_digest(&decision).unwrap(),
            envelope_digest(&retyped).unwrap()
        );
    }
}
