//! Enrollment bound to the gateway (docs/decisions.md, "Accounts and transport"): the invite names
//! the gateway's identity key by fingerprint, the gateway proves that key over the console's nonce
//! before anything is sent, the console proves it holds the code without sending it, and the
//! gateway signs what it registered. A relay can neither pose as the gateway, nor learn a usable
//! code, nor substitute its own key unnoticed.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ed25519_dalek::{Signature, Signer as _, SigningKey, Verifier as _, VerifyingKey};
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::digest::jcs;
use crate::dsse::{decode_public_key, encode_public_key, pae};

pub const IDENTITY_PROOF_TYPE: &str = "countersign.gateway_identity/v1";
pub const ENROLLMENT_RECEIPT_TYPE: &str = "countersign.enrollment_receipt/v1";
pub const ENROLLMENT_CODE_ID: &str = "countersign.enrollment_code_id/v1";

/// Hex characters of a fingerprint: 128 bits of SHA-256 over the raw public key.
const FINGERPRINT_HEX: usize = 32;

/// What `approvers invite` prints: `cse_<secret>.<fingerprint of the gateway's identity key>`.
#[derive(Clone, PartialEq, Eq)]
pub struct Invite {
    pub code: String,
    pub fingerprint: String,
}

impl Invite {
    pub fn new(code: &str, identity: &VerifyingKey) -> Invite {
        Invite {
            code: code.to_owned(),
            fingerprint: fingerprint(identity),
        }
    }

    /// Reads an invite; `None` unless it has both halves in their shapes.
    pub fn parse(text: &str) -> Option<Invite> {
        let (code, fingerprint) = text.trim().split_once('.')?;
        let code_fine = code.starts_with("cse_")
            && code.len() > 4
            && code[4..].chars().all(|c| c.is_ascii_hexdigit());
        let fingerprint_fine = fingerprint.len() == FINGERPRINT_HEX
            && fingerprint
                .chars()
                .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c));
        (code_fine && fingerprint_fine).then(|| Invite {
            code: code.to_owned(),
            fingerprint: fingerprint.to_owned(),
        })
    }
}

impl std::fmt::Display for Invite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.code, self.fingerprint)
    }
}

// The code is a secret: Debug shows only whose gateway it is for.
impl std::fmt::Debug for Invite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Invite")
            .field("fingerprint", &self.fingerprint)
            .finish_non_exhaustive()
    }
}

/// The first 128 bits of SHA-256 over the 32 raw bytes of `key`, in lowercase hex.
pub fn fingerprint(key: &VerifyingKey) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))[..FINGERPRINT_HEX].to_owned()
}

/// What the gateway keeps of a code, and the key of the enrollment proof: hex SHA-256 of the code.
pub fn code_hash(code: &str) -> String {
    hex::encode(Sha256::digest(code.as_bytes()))
}

/// Names a code on the wire without revealing it or its hash.
pub fn code_id(code: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(ENROLLMENT_CODE_ID.as_bytes());
    hasher.update([0]);
    hasher.update(code.as_bytes());
    hex::encode(hasher.finalize())
}

fn proof_mac(code_hash: &str, public_key: &str, nonce: &str) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(code_hash.as_bytes())
        .expect("HMAC takes keys of any length");
    mac.update(&pae(public_key, nonce.as_bytes()));
    mac
}

/// HMAC-SHA256 keyed with the code's hash over the public key and the nonce: proves the code
/// for this key only.
pub fn enrollment_proof(code_hash: &str, public_key: &str, nonce: &str) -> String {
    hex::encode(
        proof_mac(code_hash, public_key, nonce)
            .finalize()
            .into_bytes(),
    )
}

/// Checks an [`enrollment_proof`] in constant time.
pub fn proof_matches(code_hash: &str, public_key: &str, nonce: &str, proof: &str) -> bool {
    let Ok(bytes) = hex::decode(proof) else {
        return false;
    };
    proof_mac(code_hash, public_key, nonce)
        .verify_slice(&bytes)
        .is_ok()
}

/// A fresh nonce: 32 random bytes, base64url.
pub fn new_nonce() -> String {
    let mut bytes = [0u8; 32];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Nonces are 16 to 128 base64url characters.
pub fn nonce_is_valid(nonce: &str) -> bool {
    (16..=128).contains(&nonce.len())
        && nonce
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// `POST /v1/gateway/identity` takes the console's nonce.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct IdentityRequest {
    pub nonce: String,
}

/// The gateway's identity key and its signature over `{gateway_id, nonce}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct IdentityProof {
    pub gateway_id: String,
    pub public_key: String,
    pub signature: String,
}

#[derive(Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
struct IdentityStatement<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    gateway_id: &'a str,
    nonce: &'a str,
}

fn sign_statement<T: Serialize>(key: &SigningKey, kind: &str, statement: &T) -> String {
    let payload = jcs(statement).expect("enrollment statements are plain JSON");
    URL_SAFE_NO_PAD.encode(key.sign(&pae(kind, &payload)).to_bytes())
}

fn verify_statement<T: Serialize>(
    key: &VerifyingKey,
    kind: &str,
    statement: &T,
    signature: &str,
) -> bool {
    let Ok(payload) = jcs(statement) else {
        return false;
    };
    let Some(signature) = URL_SAFE_NO_PAD
        .decode(signature)
        .ok()
        .and_then(|b| <[u8; 64]>::try_from(b).ok())
    else {
        return false;
    };
    key.verify(&pae(kind, &payload), &Signature::from_bytes(&signature))
        .is_ok()
}

impl IdentityProof {
    pub fn sign(key: &SigningKey, gateway_id: &str, nonce: &str) -> IdentityProof {
        let statement = IdentityStatement {
            kind: IDENTITY_PROOF_TYPE,
            gateway_id,
            nonce,
        };
        IdentityProof {
            gateway_id: gateway_id.to_owned(),
            public_key: encode_public_key(&key.verifying_key()),
            signature: sign_statement(key, IDENTITY_PROOF_TYPE, &statement),
        }
    }

    /// The identity key, if it has `fingerprint` and signed this proof over `nonce`.
    pub fn verify(&self, fingerprint: &str, nonce: &str) -> Option<VerifyingKey> {
        let key = decode_public_key(&self.public_key).ok()?;
        let statement = IdentityStatement {
            kind: IDENTITY_PROOF_TYPE,
            gateway_id: &self.gateway_id,
            nonce,
        };
        (self::fingerprint(&key) == fingerprint
            && verify_statement(&key, IDENTITY_PROOF_TYPE, &statement, &self.signature))
        .then_some(key)
    }
}

/// `POST /v1/approvers/enroll/bound`: the code by id, proven for `public_key` and `nonce`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct BoundEnrollRequest {
    pub code_id: String,
    pub nonce: String,
    pub public_key: String,
    /// Hex HMAC, see [`enrollment_proof`].
    pub proof: String,
    /// Absent, or the name the code was issued for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
}

/// The registered approver, and the identity key's signature over it (see [`Receipt`]).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BoundEnrollResponse {
    pub approver_id: String,
    pub key_id: String,
    pub token: String,
    pub gateway_id: String,
    pub display_name: String,
    pub receipt: String,
}

impl std::fmt::Debug for BoundEnrollResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoundEnrollResponse")
            .field("approver_id", &self.approver_id)
            .field("key_id", &self.key_id)
            .field("gateway_id", &self.gateway_id)
            .finish_non_exhaustive()
    }
}

/// What the gateway registered, signed with its identity key: the console checks the public key
/// is its own and the nonce is the one it sent.
#[derive(Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Receipt<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    pub gateway_id: &'a str,
    pub approver_id: &'a str,
    pub key_id: &'a str,
    pub display_name: &'a str,
    pub public_key: &'a str,
    pub nonce: &'a str,
}

impl<'a> Receipt<'a> {
    pub fn new(
        gateway_id: &'a str,
        approver_id: &'a str,
        key_id: &'a str,
        display_name: &'a str,
        public_key: &'a str,
        nonce: &'a str,
    ) -> Receipt<'a> {
        Receipt {
            kind: ENROLLMENT_RECEIPT_TYPE,
            gateway_id,
            approver_id,
            key_id,
            display_name,
            public_key,
            nonce,
        }
    }

    pub fn sign(&self, identity: &SigningKey) -> String {
        sign_statement(identity, ENROLLMENT_RECEIPT_TYPE, self)
    }

    pub fn verify(&self, identity: &VerifyingKey, signature: &str) -> bool {
        verify_statement(identity, ENROLLMENT_RECEIPT_TYPE, self, signature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invites_round_trip_and_reject_other_shapes() {
        let key = SigningKey::from_bytes(&[7; 32]);
        let invite = Invite::new("cse_00ff", &key.verifying_key());
        assert_eq!(Invite::parse(&invite.to_string()), Some(invite.clone()));
        for bad in [
            "cse_00ff",
            "cse_00ff.",
            "abc.0123",
            "cse_zz.00",
            "cse_00ff.XYZ",
        ] {
            assert_eq!(Invite::parse(bad), None, "{bad}");
        }
        assert!(!format!("{invite:?}").contains("00ff"));
    }

    #[test]
    fn identity_proofs_bind_key_gateway_and_nonce() {
        let key = SigningKey::from_bytes(&[1; 32]);
        let print = fingerprint(&key.verifying_key());
        let proof = IdentityProof::sign(&key, "gw_1", "nonce-nonce-nonce");
        assert!(proof.verify(&print, "nonce-nonce-nonce").is_some());
        assert!(proof.verify(&print, "other-other-other").is_none());
        let other = SigningKey::from_bytes(&[2; 32]);
        assert!(proof
            .verify(&fingerprint(&other.verifying_key()), "nonce-nonce-nonce")
            .is_none());
        let renamed = IdentityProof {
            gateway_id: "gw_2".into(),
            ..proof
        };
        assert!(renamed.verify(&print, "nonce-nonce-nonce").is_none());
    }

    #[test]
    fn enrollment_proofs_name_one_key() {
        let hash = code_hash("cse_1234");
        let proof = enrollment_proof(&hash, "pk_a", "nonce-1");
        assert!(proof_matches(&hash, "pk_a", "nonce-1", &proof));
        assert!(!proof_matches(&hash, "pk_b", "nonce-1", &proof));
        assert!(!proof_matches(&hash, "pk_a", "nonce-2", &proof));
        assert!(!proof_matches(
            &code_hash("cse_9"),
            "pk_a",
            "nonce-1",
            &proof
        ));
        assert_ne!(code_id("cse_1234"), hash);
    }
}
