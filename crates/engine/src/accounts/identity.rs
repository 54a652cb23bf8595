//! The gateway's Ed25519 identity key: made on first use and kept in `meta`. Every invite carries
//! its fingerprint, so a console can tell this gateway from a relay before it sends anything.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use countersign_proto::enrollment::{self, IdentityProof, IdentityRequest};
use ed25519_dalek::SigningKey;

use crate::store::Store;
use crate::{ApiError, ApiResult, Engine};

const META_KEY: &str = "identity_key";

/// The identity key, made and stored if this gateway has none yet.
pub async fn load_or_create(store: &Store) -> anyhow::Result<SigningKey> {
    let mut w = store.write().await?;
    let existing: Option<String> = sqlx::query_scalar("SELECT value FROM meta WHERE key = $1")
        .bind(META_KEY)
        .fetch_optional(&mut *w.tx)
        .await?;
    if let Some(text) = existing {
        let seed: [u8; 32] = STANDARD
            .decode(text)
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| anyhow::anyhow!("the stored identity key is damaged"))?;
        return Ok(SigningKey::from_bytes(&seed));
    }
    let key = SigningKey::generate(&mut rand::rngs::OsRng);
    sqlx::query("INSERT INTO meta (key, value) VALUES ($1, $2)")
        .bind(META_KEY)
        .bind(STANDARD.encode(key.to_bytes()))
        .execute(&mut *w.tx)
        .await?;
    w.commit().await?;
    Ok(key)
}

/// Proves this gateway's identity key over the caller's nonce (no token: consoles ask before they
/// enroll, and before they move a credential).
pub fn prove(engine: &Engine, request: &IdentityRequest) -> ApiResult<IdentityProof> {
    if !enrollment::nonce_is_valid(&request.nonce) {
        return Err(ApiError::validation(
            "/nonce",
            "The nonce is 16 to 128 base64url characters.",
        ));
    }
    Ok(IdentityProof::sign(
        &engine.identity,
        &engine.gateway_id,
        &request.nonce,
    ))
}
