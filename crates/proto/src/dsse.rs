//! DSSE envelopes signed with Ed25519 (PROTOCOL section 3).

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};

pub const DECISION_PAYLOAD_TYPE: &str = "application/vnd.countersign.decision+json";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    #[serde(rename = "payloadType")]
    pub payload_type: String,
    /// Standard base64 of the payload bytes.
    pub payload: String,
    pub signatures: Vec<EnvelopeSignature>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
    /// A point of small order (every signature "verifies" for some message under it) or an
    /// encoding other than the point's one canonical form.
    #[error("the public key is a weak or non-canonical Ed25519 point")]
    WeakPublicKey,
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
    let key = VerifyingKey::from_bytes(&bytes).map_err(|_| DsseError::PublicKeyEncoding)?;
    // `to_bytes` hands back the bytes as given; the point's own encoding is its compression.
    if key.is_weak() || key.to_edwards().compress().to_bytes() != bytes {
        return Err(DsseError::WeakPublicKey);
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(bytes: [u8; 32]) -> String {
        URL_SAFE_NO_PAD.encode(bytes)
    }

    #[test]
    fn weak_and_non_canonical_public_keys_are_refused() {
        // The identity point (small order 1) and the point of order 2, canonically encoded.
        let mut identity = [0u8; 32];
        identity[0] = 1;
        let mut order_two = [0u8; 32];
        order_two[0] = 0xec;
        order_two[1..31].fill(0xff);
        order_two[31] = 0x7f;
        // The identity again, its y written as p + 1: a second encoding of a weak point.
        let mut weak_twice = [0xffu8; 32];
        weak_twice[0] = 0xee;
        weak_twice[31] = 0x7f;
        // y = p + 3: a point of large order, in an encoding other than its canonical y = 3.
        let mut non_canonical = [0xffu8; 32];
        non_canonical[0] = 0xf0;
        non_canonical[31] = 0x7f;
        assert!(!VerifyingKey::from_bytes(&non_canonical).unwrap().is_weak());
        for bytes in [identity, order_two, weak_twice, non_canonical] {
            assert!(
                matches!(
                    decode_public_key(&encoded(bytes)),
                    Err(DsseError::WeakPublicKey)
                ),
                "{bytes:02x?}"
            );
        }
        let good = SigningKey::from_bytes(&[9; 32]).verifying_key();
        assert_eq!(decode_public_key(&encode_public_key(&good)).unwrap(), good);
        assert!(matches!(
            decode_public_key("short"),
            Err(DsseError::PublicKeyEncoding)
        ));
    }
}
