//! Agents, approvers, their keys and enrollment codes.

use countersign_proto::approvals::{EnrollRequest, EnrollResponse};
use countersign_proto::dsse::decode_public_key;
use countersign_proto::ErrorCode;
use ed25519_dalek::VerifyingKey;
use sqlx::SqlitePool;

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::ids;
use crate::store::Store;

#[derive(Debug, Clone)]
pub struct Agent {
    pub id: String,
    pub on_behalf_of: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Approver {
    pub id: String,
    pub display_name: String,
    /// The person behind the approver, when known: they may not decide plans made on their behalf.
    pub user_id: Option<String>,
}

/// Registers an agent `agt_<name>` and returns its bearer token.
pub async fn add_agent(
    store: &Store,
    name: &str,
    on_behalf_of: Option<&str>,
) -> anyhow::Result<(String, String)> {
    let valid = !name.is_empty()
        && name.len() <= 40
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    anyhow::ensure!(
        valid,
        "agent names are 1-40 characters of a-z, 0-9, '_' and '-'"
    );
    let id = format!("agt_{name}");
    let token = ids::new_secret("csa_");
    let mut w = store.write().await?;
    let inserted = sqlx::query(
        "INSERT INTO agents (id, name, on_behalf_of, token_hash, created_at)
         VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
    )
    .bind(&id)
    .bind(name)
    .bind(on_behalf_of)
    .bind(ids::secret_hash(&token))
    .bind(ids::to_text(ids::now()))
    .execute(&mut *w.tx)
    .await?;
    anyhow::ensure!(
        inserted.rows_affected() == 1,
        "an agent named {name} already exists"
    );
    w.commit().await?;
    Ok((id, token))
}

/// Makes a single-use enrollment code for an approver called `display_name`, who is the demo
/// world's user `user_id` when given.
pub async fn invite_approver(
    store: &Store,
    display_name: &str,
    user_id: Option<&str>,
) -> anyhow::Result<String> {
    anyhow::ensure!(
        !display_name.trim().is_empty() && display_name.len() <= 80,
        "an approver name is 1-80 characters"
    );
    let code = ids::new_secret("cse_");
    let mut w = store.write().await?;
    sqlx::query(
        "INSERT INTO enrollment_codes (code_hash, display_name, created_at, user_id)
         VALUES (?, ?, ?, ?)",
    )
    .bind(ids::secret_hash(&code))
    .bind(display_name.trim())
    .bind(ids::to_text(ids::now()))
    .bind(user_id)
    .execute(&mut *w.tx)
    .await?;
    w.commit().await?;
    Ok(code)
}

/// Spends an enrollment code: creates the approver, records the key, issues the token.
pub async fn enroll(
    store: &Store,
    gateway_id: &str,
    request: &EnrollRequest,
) -> ApiResult<EnrollResponse> {
    decode_public_key(&request.public_key).map_err(|e| {
        ApiError::validation("/public_key", format!("The public key is invalid: {e}."))
    })?;
    let display_name = request.display_name.trim();
    if display_name.is_empty() || display_name.len() > 80 {
        return Err(ApiError::validation(
            "/display_name",
            "The display name must be 1-80 characters.",
        ));
    }
    let mut w = store.write().await?;
    let now = ids::to_text(ids::now());
    let spent: Option<Option<String>> = sqlx::query_scalar(
        "UPDATE enrollment_codes SET used_at = ? WHERE code_hash = ? AND used_at IS NULL
         RETURNING user_id",
    )
    .bind(&now)
    .bind(ids::secret_hash(&request.enrollment_code))
    .fetch_optional(&mut *w.tx)
    .await?;
    let Some(user_id) = spent else {
        return Err(ApiError::new(
            ErrorCode::Unauthenticated,
            "The enrollment code is unknown or already used.",
        ));
    };
    let approver_id = ids::random_id("apr_", 6);
    let key_id = ids::random_id("key_", 6);
    let token = ids::new_secret("csp_");
    sqlx::query(
        "INSERT INTO approvers (id, display_name, token_hash, created_at, user_id)
         VALUES (?, ?, ?, ?, ?)",
    )
    .bind(&approver_id)
    .bind(display_name)
    .bind(ids::secret_hash(&token))
    .bind(&now)
    .bind(user_id)
    .execute(&mut *w.tx)
    .await?;
    sqlx::query(
        "INSERT INTO approver_keys (id, approver_id, public_key, active, created_at)
         VALUES (?, ?, ?, 1, ?)",
    )
    .bind(&key_id)
    .bind(&approver_id)
    .bind(&request.public_key)
    .bind(&now)
    .execute(&mut *w.tx)
    .await?;
    w.commit().await?;
    Ok(EnrollResponse {
        approver_id,
        key_id,
        token,
        gateway_id: gateway_id.to_owned(),
    })
}

/// Whoever holds `token`, agent or approver, in one lookup: every request pays for it.
pub async fn by_token(pool: &SqlitePool, token: &str) -> Result<Option<Caller>, sqlx::Error> {
    let row: Option<(String, String, Option<String>, Option<String>)> = sqlx::query_as(
        "SELECT 'agent', id, on_behalf_of, NULL FROM agents WHERE token_hash = ?1
         UNION ALL
         SELECT 'approver', id, user_id, display_name FROM approvers WHERE token_hash = ?1
         LIMIT 1",
    )
    .bind(ids::secret_hash(token))
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|(kind, id, person, display_name)| {
        if kind == "agent" {
            Caller::Agent(Agent {
                id,
                on_behalf_of: person,
            })
        } else {
            Caller::Approver(Approver {
                id,
                display_name: display_name.unwrap_or_default(),
                user_id: person,
            })
        }
    }))
}

/// The approver's active key `key_id`, if it is theirs.
pub async fn active_key(
    pool: &SqlitePool,
    approver_id: &str,
    key_id: &str,
) -> Result<Option<VerifyingKey>, sqlx::Error> {
    let text: Option<String> = sqlx::query_scalar(
        "SELECT public_key FROM approver_keys WHERE id = ? AND approver_id = ? AND active = 1",
    )
    .bind(key_id)
    .bind(approver_id)
    .fetch_optional(pool)
    .await?;
    Ok(text.and_then(|t| decode_public_key(&t).ok()))
}

/// Issues a fresh token for agent `agt_<name>`, creating the agent if needed. The embedded demo
/// uses this on every start, since only token hashes are kept.
pub async fn rotate_agent_token(
    store: &Store,
    name: &str,
    on_behalf_of: Option<&str>,
) -> anyhow::Result<(String, String)> {
    let id = format!("agt_{name}");
    let token = ids::new_secret("csa_");
    let mut w = store.write().await?;
    let updated = sqlx::query("UPDATE agents SET token_hash = ? WHERE id = ?")
        .bind(ids::secret_hash(&token))
        .bind(&id)
        .execute(&mut *w.tx)
        .await?;
    // Committing releases the writer, which add_agent takes again.
    w.commit().await?;
    if updated.rows_affected() == 1 {
        return Ok((id, token));
    }
    add_agent(store, name, on_behalf_of).await
}

/// Replaces the approver's active key with the one `proof` names, if `proof` is signed by the
/// current active key. Retired keys stay on file, inactive, so old decisions still verify.
pub async fn rotate_key(
    store: &Store,
    gateway_id: &str,
    approver: &Approver,
    proof: &countersign_proto::dsse::Envelope,
) -> ApiResult<countersign_proto::keys::RotatedKey> {
    use countersign_proto::keys::{KeyRotation, KEY_PAYLOAD_TYPE, KEY_ROTATION_TYPE};
    let signature = proof
        .signature()
        .map_err(|e| ApiError::validation("/signatures", e.to_string()))?;
    if proof.payload_type != KEY_PAYLOAD_TYPE {
        return Err(ApiError::validation(
            "/payloadType",
            format!("The payload type must be {KEY_PAYLOAD_TYPE}."),
        ));
    }
    // Any key of this approver, retired ones too: a rotation resent after it took effect was
    // signed by the key it retired.
    let signer: Option<(String, bool)> = sqlx::query_as(
        "SELECT public_key, active FROM approver_keys WHERE id = ? AND approver_id = ?",
    )
    .bind(&signature.keyid)
    .bind(&approver.id)
    .fetch_optional(store.pool())
    .await?;
    let (signer, signer_active) = signer
        .and_then(|(key, active)| Some((decode_public_key(&key).ok()?, active)))
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::BadSignature,
                "The proof is not signed with a key of this approver.",
            )
        })?;
    let payload = proof
        .verify(&signer)
        .map_err(|e| ApiError::new(ErrorCode::BadSignature, e.to_string()))?;
    let rotation: KeyRotation = serde_json::from_slice(&payload)
        .map_err(|e| ApiError::validation("/payload", format!("Not a key rotation: {e}")))?;
    let canonical = countersign_proto::digest::jcs(&rotation).map_err(anyhow::Error::from)?;
    if canonical != payload || rotation.kind != KEY_ROTATION_TYPE {
        return Err(ApiError::validation(
            "/payload",
            format!("The payload must be the canonical JSON of a {KEY_ROTATION_TYPE}."),
        ));
    }
    if rotation.approver_id != approver.id {
        return Err(ApiError::validation(
            "/payload",
            "The rotation names another approver.",
        ));
    }
    if rotation.audience != gateway_id {
        return Err(ApiError::new(
            ErrorCode::AudienceMismatch,
            format!("The rotation is addressed to {}.", rotation.audience),
        ));
    }
    decode_public_key(&rotation.public_key)
        .map_err(|e| ApiError::validation("/payload", format!("The new key is invalid: {e}.")))?;
    let mut w = store.write().await?;
    let done: Option<String> = sqlx::query_scalar(
        "SELECT id FROM approver_keys WHERE approver_id = ? AND public_key = ? AND active = 1",
    )
    .bind(&approver.id)
    .bind(&rotation.public_key)
    .fetch_optional(&mut *w.tx)
    .await?;
    if let Some(key_id) = done {
        return Ok(countersign_proto::keys::RotatedKey { key_id });
    }
    if !signer_active {
        return Err(ApiError::new(
            ErrorCode::BadSignature,
            "The proof is signed with a retired key.",
        ));
    }
    let age = ids::now() - rotation.issued_at;
    if age > chrono::Duration::minutes(5) || age < chrono::Duration::seconds(-60) {
        return Err(ApiError::new(
            ErrorCode::StatementExpired,
            "The rotation was issued more than five minutes ago, or in the future.",
        ));
    }
    let key_id = ids::random_id("key_", 6);
    sqlx::query("UPDATE approver_keys SET active = 0 WHERE approver_id = ?")
        .bind(&approver.id)
        .execute(&mut *w.tx)
        .await?;
    sqlx::query(
        "INSERT INTO approver_keys (id, approver_id, public_key, active, created_at)
         VALUES (?, ?, ?, 1, ?)",
    )
    .bind(&key_id)
    .bind(&approver.id)
    .bind(&rotation.public_key)
    .bind(ids::to_text(ids::now()))
    .execute(&mut *w.tx)
    .await?;
    w.commit().await?;
    Ok(countersign_proto::keys::RotatedKey { key_id })
}
