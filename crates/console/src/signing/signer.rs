//! The approver's Ed25519 key and gateway token, kept in the OS keyring and never handed out.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use countersign_proto::dsse::{decode_public_key, encode_public_key, Envelope};
use countersign_proto::enrollment::{self, BoundEnrollRequest, Invite, Receipt};
use countersign_proto::keys::KeyRotation;
use countersign_proto::statement::Signed;
use countersign_proto::ErrorCode;
use ed25519_dalek::{SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};

use crate::client::{id_checked, GatewayClient};
use crate::error::ConsoleError;

pub use crate::signing::os_keyring::KEYRING_SERVICE;

#[derive(Serialize, Deserialize)]
struct StoredCredential {
    approver_id: String,
    key_id: String,
    display_name: String,
    token: String,
    /// Standard base64 of the 32-byte Ed25519 seed.
    signing_key: String,
    /// Keys this approver signed with before a rotation: public halves only, for verifying history.
    #[serde(default)]
    retired: Vec<RetiredKey>,
    /// A rotation sent but not known to have taken effect: the next key and its signed proof.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rotating: Option<PendingRotation>,
    /// The origin (scheme, host, port) enrolled with: the token goes there and nowhere else.
    /// Absent in credentials filed before it was kept (see [`Signer::adopt_origin`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    origin: Option<String>,
    /// The fingerprint of the gateway identity key the invite named; a move to another origin
    /// needs a fresh proof under it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    identity_key: Option<String>,
}

#[derive(Clone, Serialize, Deserialize)]
struct PendingRotation {
    signing_key: String,
    proof: Envelope,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetiredKey {
    pub key_id: String,
    pub public_key: String,
}

/// An enrolled approver of one gateway.
pub struct Signer {
    gateway_id: String,
    approver_id: String,
    key_id: String,
    display_name: String,
    token: String,
    key: SigningKey,
    retired: Vec<RetiredKey>,
    rotating: Option<PendingRotation>,
    origin: Option<String>,
    identity_key: Option<String>,
}

/// The origin of a gateway URL, as the credential keeps it: `https://host` or `http://host:port`.
pub fn origin_of(url: &str) -> Result<String, ConsoleError> {
    crate::transport::check_url(url)?;
    let parsed = reqwest::Url::parse(url.trim())
        .map_err(|e| ConsoleError::Invalid(format!("{url:?} is not a gateway URL: {e}")))?;
    Ok(parsed.origin().ascii_serialization())
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer")
            .field("gateway_id", &self.gateway_id)
            .field("approver_id", &self.approver_id)
            .field("key_id", &self.key_id)
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

fn entry(gateway_id: &str) -> Result<keyring::Entry, ConsoleError> {
    crate::signing::os_keyring::require(keyring::Entry::new(KEYRING_SERVICE, gateway_id)?)
}

fn ensure_not_enrolled(gateway_id: &str) -> Result<(), ConsoleError> {
    let entry = entry(gateway_id)?;
    match crate::signing::os_keyring::call(|| entry.get_password()) {
        Err(keyring::Error::NoEntry) => Ok(()),
        Ok(_) => Err(ConsoleError::AlreadyEnrolled {
            gateway_id: gateway_id.to_owned(),
        }),
        Err(e) => Err(e.into()),
    }
}

/// Refusals of a rotation on its merits: resending the same proof cannot succeed. Anything else
/// (no answer, 5xx, an unknown code, an answer out of the protocol) may be a relay's doing.
const DEFINITIVE_REFUSALS: [ErrorCode; 4] = [
    ErrorCode::BadSignature,
    ErrorCode::ValidationError,
    ErrorCode::AudienceMismatch,
    ErrorCode::StatementExpired,
];

impl Signer {
    /// The credential for `gateway_id`, if this machine enrolled with it.
    pub fn load(gateway_id: &str) -> Result<Option<Signer>, ConsoleError> {
        let entry = entry(gateway_id)?;
        let text = match crate::signing::os_keyring::call(|| entry.get_password()) {
            Ok(text) => text,
            Err(keyring::Error::NoEntry) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        // The parse error could quote the secret: say only that it is damaged.
        let stored: StoredCredential = serde_json::from_str(&text)
            .map_err(|_| ConsoleError::Keyring("the stored credential is damaged".to_owned()))?;
        let seed: [u8; 32] = STANDARD
            .decode(&stored.signing_key)
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| ConsoleError::Keyring("the stored key is damaged".to_owned()))?;
        Ok(Some(Signer {
            gateway_id: gateway_id.to_owned(),
            approver_id: stored.approver_id,
            key_id: stored.key_id,
            display_name: stored.display_name,
            token: stored.token,
            key: SigningKey::from_bytes(&seed),
            retired: stored.retired,
            rotating: stored.rotating,
            origin: stored.origin,
            identity_key: stored.identity_key,
        }))
    }

    /// The origin this credential was enrolled with (or moved to), when it is known.
    pub fn origin(&self) -> Option<&str> {
        self.origin.as_deref()
    }

    /// A client for `url` carrying this approver's token, only when `url` is at the credential's
    /// origin: a token is sent to the gateway it was enrolled with and nowhere else.
    pub(crate) fn client(&self, url: &str) -> Result<GatewayClient, ConsoleError> {
        let asked = origin_of(url)?;
        if self.origin.as_deref() != Some(asked.as_str()) {
            return Err(self.elsewhere(&asked));
        }
        Ok(GatewayClient::new(url, None)?.with_token(&self.token))
    }

    pub(crate) fn elsewhere(&self, asked: &str) -> ConsoleError {
        ConsoleError::CredentialElsewhere {
            gateway_id: self.gateway_id.clone(),
            enrolled: self
                .origin
                .clone()
                .unwrap_or_else(|| "an unknown URL".to_owned()),
            asked: asked.to_owned(),
        }
    }

    /// Binds a credential filed before origins were kept to `url`, the one this machine has been
    /// following with it (the remembered gateway); a bound credential is left as it is.
    pub(crate) fn adopt_origin(&mut self, url: &str) -> Result<(), ConsoleError> {
        if self.origin.is_none() {
            self.origin = Some(origin_of(url)?);
            self.save()?;
        }
        Ok(())
    }

    /// Rebinds the credential to `url` on the word of whoever started the gateway there: the
    /// desktop's demo gateway, which runs in this process on a new port each time.
    pub(crate) fn bind_vouched(&mut self, url: &str) -> Result<(), ConsoleError> {
        let origin = origin_of(url)?;
        if self.origin.as_deref() != Some(origin.as_str()) {
            self.origin = Some(origin);
            self.save()?;
        }
        Ok(())
    }

    /// Moves the credential to `url` once the gateway there proves, fresh, the identity key this
    /// credential was enrolled under and this gateway id, and `confirmed` (asked after the
    /// proof) says yes. No token travels for the proof.
    pub(crate) async fn move_to(
        &mut self,
        url: &str,
        confirmed: impl FnOnce() -> bool,
    ) -> Result<(), ConsoleError> {
        let origin = origin_of(url)?;
        let Some(identity_key) = self.identity_key.clone() else {
            return Err(ConsoleError::GatewayIdentity(
                "this credential predates identity binding, so no gateway can prove it is its \
                 own: enroll again at the new URL"
                    .to_owned(),
            ));
        };
        let nonce = enrollment::new_nonce();
        let proof = GatewayClient::new(url, None)?.identity(&nonce).await?;
        if proof.verify(&identity_key, &nonce).is_none() || proof.gateway_id != self.gateway_id {
            return Err(ConsoleError::GatewayIdentity(format!(
                "{url} did not prove the identity key {identity_key} of gateway {}",
                self.gateway_id
            )));
        }
        if !confirmed() {
            return Err(ConsoleError::Cancelled);
        }
        self.origin = Some(origin);
        self.save()
    }

    /// Enrolls with the single-use `invite` (`cse_<code>.<fingerprint>`, as `approvers invite`
    /// prints it) and files the key and the issued token in the keyring under the gateway's id.
    /// The gateway first proves the identity key the invite names; the code itself never
    /// travels, only a proof of it for this key; the gateway's answer must be signed over this
    /// key. Credentials this machine already holds for the gateway are never replaced.
    /// `display_name` is absent or the name the invite was issued for.
    pub async fn enroll(
        client: &GatewayClient,
        invite: &str,
        display_name: Option<&str>,
    ) -> Result<Signer, ConsoleError> {
        let origin = origin_of(client.base())?;
        let invite = Invite::parse(invite).ok_or_else(|| {
            ConsoleError::Invalid(
                "the enrollment code is not an invite (cse_….<fingerprint>): give the whole \
                 line `countersign-gateway approvers invite` printed"
                    .to_owned(),
            )
        })?;
        let nonce = enrollment::new_nonce();
        let proof = client.identity(&nonce).await?;
        let identity = proof.verify(&invite.fingerprint, &nonce).ok_or_else(|| {
            ConsoleError::GatewayIdentity(format!(
                "{} did not prove the identity key {} the invite names",
                client.base(),
                invite.fingerprint
            ))
        })?;
        let gateway_id = proof.gateway_id;
        id_checked(&gateway_id, "gateway")?;
        // Before the code is spent: a second enrollment would orphan the first key's approver.
        ensure_not_enrolled(&gateway_id)?;
        let key = SigningKey::generate(&mut rand::rngs::OsRng);
        let public_key = encode_public_key(&key.verifying_key());
        let request = BoundEnrollRequest {
            code_id: enrollment::code_id(&invite.code),
            proof: enrollment::enrollment_proof(
                &enrollment::code_hash(&invite.code),
                &public_key,
                &nonce,
            ),
            nonce: nonce.clone(),
            public_key: public_key.clone(),
            display_name: display_name.map(|n| n.trim().to_owned()),
        };
        let response = client.enroll_bound(&request).await?;
        let receipt = Receipt::new(
            &gateway_id,
            &response.approver_id,
            &response.key_id,
            &response.display_name,
            &public_key,
            &nonce,
        );
        if response.gateway_id != gateway_id || !receipt.verify(&identity, &response.receipt) {
            return Err(ConsoleError::GatewayIdentity(
                "the enrollment answer is not the gateway's signed receipt for this key".to_owned(),
            ));
        }
        id_checked(&response.key_id, "key")?;
        ensure_not_enrolled(&gateway_id)?;
        let signer = Signer {
            gateway_id,
            approver_id: response.approver_id,
            key_id: response.key_id,
            display_name: response.display_name,
            token: response.token,
            key,
            retired: Vec::new(),
            rotating: None,
            origin: Some(origin),
            identity_key: Some(invite.fingerprint),
        };
        signer.save()?;
        Ok(signer)
    }

    fn save(&self) -> Result<(), ConsoleError> {
        let stored = StoredCredential {
            approver_id: self.approver_id.clone(),
            key_id: self.key_id.clone(),
            display_name: self.display_name.clone(),
            token: self.token.clone(),
            signing_key: STANDARD.encode(self.key.to_bytes()),
            retired: self.retired.clone(),
            rotating: self.rotating.clone(),
            origin: self.origin.clone(),
            identity_key: self.identity_key.clone(),
        };
        let text =
            serde_json::to_string(&stored).map_err(|e| ConsoleError::Keyring(e.to_string()))?;
        let entry = entry(&self.gateway_id)?;
        crate::signing::os_keyring::call(|| entry.set_password(&text))?;
        Ok(())
    }

    /// Removes this machine's credential for `gateway_id`.
    pub fn forget(gateway_id: &str) -> Result<(), ConsoleError> {
        let entry = entry(gateway_id)?;
        match crate::signing::os_keyring::call(|| entry.delete_credential()) {
            Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    pub fn gateway_id(&self) -> &str {
        &self.gateway_id
    }

    /// The fingerprint of the gateway identity key the invite named, for a credential enrolled
    /// since invites carried one.
    pub fn identity_fingerprint(&self) -> Option<&str> {
        self.identity_key.as_deref()
    }

    pub fn approver_id(&self) -> &str {
        &self.approver_id
    }

    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// Who signs this credential's decisions, and the gateway they are addressed to.
    pub fn signs_as(&self) -> countersign_proto::decision::Signer<'_> {
        countersign_proto::decision::Signer {
            approver_id: &self.approver_id,
            key_id: &self.key_id,
            audience: &self.gateway_id,
        }
    }

    pub fn display_name(&self) -> &str {
        &self.display_name
    }

    /// The public half of the current key, as the protocol writes it.
    pub fn public_key(&self) -> String {
        encode_public_key(&self.key.verifying_key())
    }

    pub fn retired(&self) -> &[RetiredKey] {
        &self.retired
    }

    /// The public half of key `key_id` if this machine signed with it for this approver: the
    /// current key or a retired one. History verifies against these, not against what a journal
    /// row claims.
    pub fn verifying_key(&self, key_id: &str) -> Option<VerifyingKey> {
        if key_id == self.key_id {
            return Some(self.key.verifying_key());
        }
        self.retired
            .iter()
            .find(|r| r.key_id == key_id)
            .and_then(|r| decode_public_key(&r.public_key).ok())
    }

    /// Whether a rotation was sent without a definitive answer: [`Signer::rotate`] finishes it.
    pub fn rotation_pending(&self) -> bool {
        self.rotating.is_some()
    }

    /// Makes a new key, files it in the keyring as pending, has the gateway accept it on the
    /// current key's word, then signs with it; the old key's public half is kept for verifying
    /// what it signed. A rotation left pending (no answer) is resent as it was, not started anew.
    pub async fn rotate(&mut self, client: &GatewayClient) -> Result<(), ConsoleError> {
        let pending = match self.rotating.clone() {
            Some(pending) => pending,
            None => {
                let next = SigningKey::generate(&mut rand::rngs::OsRng);
                let issued_at = chrono::SubsecRound::trunc_subsecs(chrono::Utc::now(), 0);
                let proof = KeyRotation::new(
                    &self.approver_id,
                    &next.verifying_key(),
                    &self.gateway_id,
                    issued_at,
                )
                .sign(&self.key, &self.key_id)
                .map_err(|e| ConsoleError::Invalid(e.to_string()))?;
                let pending = PendingRotation {
                    signing_key: STANDARD.encode(next.to_bytes()),
                    proof,
                };
                self.rotating = Some(pending.clone());
                self.save()?;
                pending
            }
        };
        let rotated = match client.rotate_key(&pending.proof).await {
            Ok(rotated) => rotated,
            Err(e @ ConsoleError::Gateway { code, .. }) if DEFINITIVE_REFUSALS.contains(&code) => {
                // Refused: the current key stays the key.
                self.rotating = None;
                self.save()?;
                return Err(e);
            }
            // Kept for a resend: the gateway may have taken it.
            Err(e) => return Err(e),
        };
        let seed: [u8; 32] = STANDARD
            .decode(&pending.signing_key)
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| ConsoleError::Keyring("the pending key is damaged".to_owned()))?;
        self.retired.push(RetiredKey {
            key_id: std::mem::replace(&mut self.key_id, rotated.key_id),
            public_key: self.public_key(),
        });
        self.key = SigningKey::from_bytes(&seed);
        self.rotating = None;
        self.save()
    }

    /// Any statement this approver signs: a decision, a standing approval, a mail remedy.
    pub fn sign<S: Signed>(&self, statement: &S) -> Result<Envelope, ConsoleError> {
        statement
            .sign(&self.key)
            .map_err(|e| ConsoleError::Invalid(e.to_string()))
    }
}
