//! DSSE envelopes signed with Ed25519 (PROTOCOL section 3).

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};

pub const DECISION_PAYLOAD_TYPE: &str = "application/vnd.countersign.decision+json";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    #[serde(rename = "payloadType")]
    pub payload_type: String,
    /// Standard base64 of the payload bytes.
    pub payload: String,
    pub signatures: Vec<EnvelopeSignature>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvelopeSignature {
    pub keyid: String,
    /// Standard base64 of the 64-byte Ed25519 signature.
    pub sig: String,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DsseError {
    #[error("the envelope must carry exactly one signature")]
    SignatureCount,
    #[error("the payload is not standard base64")]
    PayloadEncoding,
    #[error("the signature is not 64 bytes of standard base64")]
    SignatureEncoding,
    #[error("the public key is not 32 bytes of base64url")]
    PublicKeyEncoding,
    #[error("the signature does not verify")]
    BadSignature,
}

/// `"DSSEv1" SP len(type) SP type SP len(body) SP body`, lengths in ASCII decimal bytes.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + payload_type.len() + 32);
    out.extend_from_slice(b"DSSEv1 ");
    out.extend_from_slice(payload_type.len().to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload_type.as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload.len().to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload);
    out
}

/// Signs `payload` under `payload_type` into a one-signature envelope.
pub fn sign(key: &SigningKey, key_id: &str, payload_type: &str, payload: &[u8]) -> Envelope {
    let signature = key.sign(&pae(payload_type, payload));
    Envelope {
        payload_type: payload_type.to_owned(),
        payload: STANDARD.encode(payload),
        signatures: vec![EnvelopeSignature {
            keyid: key_id.to_owned(),
            sig: STANDARD.encode(signature.to_bytes()),
        }],
    }
}

impl Envelope {
    /// The single signature this protocol allows.
    pub fn signature(&self) -> Result<&EnvelopeSignature, DsseError> {
        match self.signatures.as_slice() {
            [one] => Ok(one),
            _ => Err(DsseError::SignatureCount),
        }
    }

    pub fn payload_bytes(&self) -> Result<Vec<u8>, DsseError> {
        STANDARD
            .decode(&self.payload)
            .map_err(|_| DsseError::PayloadEncoding)
    }

    /// The single signature's 64 bytes.
    pub fn signature_bytes(&self) -> Result<[u8; 64], DsseError> {
        STANDARD
            .decode(&self.signature()?.sig)
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or(DsseError::SignatureEncoding)
    }

    /// Verifies with `verify_strict` and returns the payload bytes it covers.
    pub fn verify(&self, key: &VerifyingKey) -> Result<Vec<u8>, DsseError> {
        let sig_bytes = self.signature_bytes()?;
        let payload = self.payload_bytes()?;
        key.verify_strict(
            &pae(&self.payload_type, &payload),
            &Signature::from_bytes(&sig_bytes),
        )
        .map_err(|_| DsseError::BadSignature)?;
        Ok(payload)
    }
}

/// Base64url (no padding) form of a public key, as enrollment sends it.
pub fn encode_public_key(key: &VerifyingKey) -> String {
    URL_SAFE_NO_PAD.encode(key.as_bytes())
}

pub fn decode_public_key(text: &str) -> Result<VerifyingKey, DsseError> {
    let bytes: [u8; 32] = URL_SAFE_NO_PAD
        .decode(text.trim_end_matches('='))
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or(DsseError::PublicKeyEncoding)?;
    VerifyingKey::from_bytes(&bytes).map_err(|_| DsseError::PublicKeyEncoding)
}
