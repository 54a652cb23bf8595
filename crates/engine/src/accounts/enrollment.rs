//! Agents, approvers, their keys and enrollment codes.

use countersign_proto::approvals::{EnrollRequest, EnrollResponse};
use countersign_proto::dsse::decode_public_key;
use countersign_proto::enrollment::{
    self, BoundEnrollRequest, BoundEnrollResponse, Invite, Receipt,
};
use countersign_proto::ErrorCode;
use ed25519_dalek::{SigningKey, VerifyingKey};
use sqlx::{AnyConnection, AnyPool};

use super::scopes::Scope;
use super::{identity, names, scopes};
pub use crate::accounts::callers::{Agent, Approver, Caller};
use crate::store::{Flag, Store};
use crate::{ids, secrets, ApiError, ApiResult};

/// Who holds `token`: an agent, an approver, or nobody (`unauthenticated`).
pub async fn caller(store: &Store, token: &str) -> ApiResult<Caller> {
    by_token(store.pool(), token)
        .await?
        .ok_or_else(unknown_token)
}

pub fn unknown_token() -> ApiError {
    ApiError::new(ErrorCode::Unauthenticated, "The bearer token is unknown.")
}

/// Registers an agent `agt_<name>` with full access and returns its bearer token.
pub async fn add_agent(
    store: &Store,
    name: &str,
    on_behalf_of: Option<&str>,
) -> anyhow::Result<(String, String)> {
    add_scoped_agent(store, name, on_behalf_of, &[]).await
}

/// Registers an agent `agt_<name>` limited to `scopes` (none: full access), in one transaction,
/// and returns its bearer token.
pub async fn add_scoped_agent(
    store: &Store,
    name: &str,
    on_behalf_of: Option<&str>,
    scopes: &[Scope],
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
    let token = secrets::new_secret("csa_");
    let mut w = store.write().await?;
    let inserted = sqlx::query(
        "INSERT INTO agents (id, name, on_behalf_of, token_hash, created_at)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING",
    )
    .bind(&id)
    .bind(name)
    .bind(on_behalf_of)
    .bind(secrets::secret_hash(&token))
    .bind(ids::to_text(ids::now()))
    .execute(&mut *w.tx)
    .await?;
    anyhow::ensure!(
        inserted.rows_affected() == 1,
        "an agent named {name} already exists"
    );
    scopes::grant(&mut w.tx, &id, scopes).await?;
    w.commit().await?;
    Ok((id, token))
}

/// How long an enrollment code is valid unless the invite says otherwise.
pub const DEFAULT_CODE_HOURS: i64 = 72;

/// Makes a single-use enrollment code for an approver called `display_name`, who is the demo
/// world's user `user_id` when given, valid for [`DEFAULT_CODE_HOURS`]. Returns the invite (the
/// code and the fingerprint of this gateway's identity key).
pub async fn invite_approver(
    store: &Store,
    display_name: &str,
    user_id: Option<&str>,
) -> anyhow::Result<String> {
    let valid_for = chrono::Duration::hours(DEFAULT_CODE_HOURS);
    invite_approver_for(store, display_name, user_id, valid_for).await
}

/// [`invite_approver`] with a code that expires after `valid_for` (at most a year).
pub async fn invite_approver_for(
    store: &Store,
    display_name: &str,
    user_id: Option<&str>,
    valid_for: chrono::Duration,
) -> anyhow::Result<String> {
    let display_name = names::approver_name(display_name).map_err(anyhow::Error::msg)?;
    anyhow::ensure!(
        valid_for > chrono::Duration::zero() && valid_for <= chrono::Duration::days(365),
        "an enrollment code is valid for more than nothing and at most a year"
    );
    if let Some(person) = user_id {
        let mut conn = store.pool().acquire().await?;
        if let Some(active) = active_approver_of(&mut conn, person).await? {
            anyhow::bail!("{}", one_account(person, &active).message);
        }
    }
    let identity = identity::load_or_create(store).await?;
    let code = secrets::new_secret("cse_");
    let now = ids::now();
    let mut w = store.write().await?;
    sqlx::query(
        "INSERT INTO enrollment_codes
             (code_hash, display_name, created_at, user_id, expires_at, code_id)
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(secrets::secret_hash(&code))
    .bind(display_name)
    .bind(ids::to_text(now))
    .bind(user_id)
    .bind(ids::to_text(now + valid_for))
    .bind(enrollment::code_id(&code))
    .execute(&mut *w.tx)
    .await?;
    w.commit().await?;
    Ok(Invite::new(&code, &identity.verifying_key()).to_string())
}

/// How an enrollment names its code: the code itself (the plain endpoint), or its id and a proof
/// of knowing it for one key and nonce (the bound endpoint).
enum CodeRef<'a> {
    Plain(&'a str),
    Proven {
        code_id: &'a str,
        nonce: &'a str,
        proof: &'a str,
    },
}

/// An approver just registered.
struct Registered {
    approver_id: String,
    key_id: String,
    token: String,
    display_name: String,
}

/// Spends an enrollment code (`POST /v1/approvers/enroll`): creates the approver, records the
/// key, issues the token. The code may be sent as the invite or as its `cse_` half.
pub async fn enroll(
    store: &Store,
    gateway_id: &str,
    request: &EnrollRequest,
) -> ApiResult<EnrollResponse> {
    let code = Invite::parse(&request.enrollment_code)
        .map(|invite| invite.code)
        .unwrap_or_else(|| request.enrollment_code.trim().to_owned());
    let registered = register(
        store,
        CodeRef::Plain(&code),
        &request.public_key,
        request.display_name.as_deref(),
    )
    .await?;
    Ok(EnrollResponse {
        approver_id: registered.approver_id,
        key_id: registered.key_id,
        token: registered.token,
        gateway_id: gateway_id.to_owned(),
    })
}

/// `POST /v1/approvers/enroll/bound`: the code proven, not sent; the answer signed with the
/// identity key over the key registered and the console's nonce.
pub async fn enroll_bound(
    store: &Store,
    gateway_id: &str,
    identity: &SigningKey,
    request: &BoundEnrollRequest,
) -> ApiResult<BoundEnrollResponse> {
    if !enrollment::nonce_is_valid(&request.nonce) {
        return Err(ApiError::validation(
            "/nonce",
            "The nonce is 16 to 128 base64url characters.",
        ));
    }
    let code = CodeRef::Proven {
        code_id: &request.code_id,
        nonce: &request.nonce,
        proof: &request.proof,
    };
    let registered = register(
        store,
        code,
        &request.public_key,
        request.display_name.as_deref(),
    )
    .await?;
    let receipt = Receipt::new(
        gateway_id,
        &registered.approver_id,
        &registered.key_id,
        &registered.display_name,
        &request.public_key,
        &request.nonce,
    )
    .sign(identity);
    Ok(BoundEnrollResponse {
        approver_id: registered.approver_id,
        key_id: registered.key_id,
        token: registered.token,
        gateway_id: gateway_id.to_owned(),
        display_name: registered.display_name,
        receipt,
    })
}

type CodeRow = (
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
);

async fn register(
    store: &Store,
    code: CodeRef<'_>,
    public_key: &str,
    display_name: Option<&str>,
) -> ApiResult<Registered> {
    let unknown = || {
        ApiError::new(
            ErrorCode::Unauthenticated,
            "The enrollment code is unknown or already used.",
        )
    };
    // Looked up on a read connection: a flood of made-up codes never waits for the writer, nor
    // makes anyone else wait.
    let select = "SELECT code_hash, display_name, user_id, used_at, expires_at
                  FROM enrollment_codes WHERE ";
    let row: Option<CodeRow> = match &code {
        CodeRef::Plain(code) => {
            sqlx::query_as(&format!("{select} code_hash = $1"))
                .bind(secrets::secret_hash(code))
                .fetch_optional(store.pool())
                .await?
        }
        CodeRef::Proven { code_id, .. } => {
            sqlx::query_as(&format!("{select} code_id = $1"))
                .bind(code_id)
                .fetch_optional(store.pool())
                .await?
        }
    };
    let (code_hash, invited, user_id, used_at, expires_at) = row.ok_or_else(unknown)?;
    if let CodeRef::Proven { nonce, proof, .. } = code {
        if !enrollment::proof_matches(&code_hash, public_key, nonce, proof) {
            return Err(ApiError::new(
                ErrorCode::Unauthenticated,
                "The enrollment proof does not match the code and this public key.",
            ));
        }
    }
    if used_at.is_some() {
        return Err(unknown());
    }
    // Checked after the code: to someone without a code, every key is answered alike.
    decode_public_key(public_key).map_err(|e| {
        ApiError::validation("/public_key", format!("The public key is invalid: {e}."))
    })?;
    let now = ids::now();
    let expired_at = expires_at
        .as_deref()
        .map(ids::from_text)
        .transpose()?
        .filter(|at| *at <= now);
    if let Some(at) = expired_at {
        let at = ids::to_text(at);
        return Err(ApiError::new(
            ErrorCode::Unauthenticated,
            format!("The enrollment code expired at {at}: ask for a new invite."),
        )
        .with_details(serde_json::json!({"reason": "code_expired", "expired_at": at})));
    }
    if let Some(asked) = display_name {
        if asked.trim() != invited {
            return Err(ApiError::validation(
                "/display_name",
                format!(
                    "This code was issued for {invited}: leave the display name out or give that name."
                ),
            ));
        }
    }
    let now = ids::to_text(now);
    let mut w = store.write().await?;
    if let Some(person) = &user_id {
        if let Some(active) = active_approver_of(&mut w.tx, person).await? {
            return Err(one_account(person, &active));
        }
    }
    // Spent now, unless another enrollment spent it since it was looked up.
    let spent = sqlx::query(
        "UPDATE enrollment_codes SET used_at = $1 WHERE code_hash = $2 AND used_at IS NULL",
    )
    .bind(&now)
    .bind(&code_hash)
    .execute(&mut *w.tx)
    .await?;
    if spent.rows_affected() != 1 {
        return Err(unknown());
    }
    let approver_id = ids::random_id("apr_", 6);
    let key_id = ids::random_id("key_", 6);
    let token = secrets::new_secret("csp_");
    sqlx::query(
        "INSERT INTO approvers (id, display_name, token_hash, created_at, user_id)
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(&approver_id)
    .bind(&invited)
    .bind(secrets::secret_hash(&token))
    .bind(&now)
    .bind(user_id)
    .execute(&mut *w.tx)
    .await?;
    sqlx::query(
        "INSERT INTO approver_keys (id, approver_id, public_key, active, created_at)
         VALUES ($1, $2, $3, 1, $4)",
    )
    .bind(&key_id)
    .bind(&approver_id)
    .bind(public_key)
    .bind(&now)
    .execute(&mut *w.tx)
    .await?;
    w.commit().await?;
    Ok(Registered {
        approver_id,
        key_id,
        token,
        display_name: invited,
    })
}

/// The approver account person `person` holds now, if any: one person is one approver account
/// (and so one approval), so a second is refused at the invite and at the enrollment.
async fn active_approver_of(
    conn: &mut AnyConnection,
    person: &str,
) -> Result<Option<String>, sqlx::Error> {
    sqlx::query_scalar("SELECT id FROM approvers WHERE user_id = $1 AND revoked_at IS NULL LIMIT 1")
        .bind(person)
        .fetch_optional(conn)
        .await
}

fn one_account(person: &str, active: &str) -> ApiError {
    ApiError::new(
        ErrorCode::NotEligible,
        format!(
            "{person} already approves as {active}: one person holds one approver account. \
             Revoke {active} first (revoke-approver) to give {person} a new one."
        ),
    )
}

/// Whoever holds `token`, agent or approver, unless revoked, in one lookup: every request pays
/// for it.
pub async fn by_token(pool: &AnyPool, token: &str) -> Result<Option<Caller>, sqlx::Error> {
    let row: Option<(String, String, Option<String>, Option<String>)> = sqlx::query_as(
        "SELECT 'agent', id, on_behalf_of, NULL FROM agents
          WHERE token_hash = $1 AND revoked_at IS NULL
         UNION ALL
         SELECT 'approver', id, user_id, display_name FROM approvers
          WHERE token_hash = $1 AND revoked_at IS NULL
         LIMIT 1",
    )
    .bind(secrets::secret_hash(token))
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

/// The approver's active key `key_id`, if it is theirs and not revoked.
pub async fn active_key(
    pool: &AnyPool,
    approver_id: &str,
    key_id: &str,
) -> Result<Option<VerifyingKey>, sqlx::Error> {
    let text: Option<String> = sqlx::query_scalar(
        "SELECT public_key FROM approver_keys
         WHERE id = $1 AND approver_id = $2 AND active = 1 AND revoked_at IS NULL",
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
    let token = secrets::new_secret("csa_");
    let mut w = store.write().await?;
    let updated = sqlx::query("UPDATE agents SET token_hash = $1 WHERE id = $2")
        .bind(secrets::secret_hash(&token))
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
    // signed by the key it retired. Revoked keys vouch for nothing.
    let signer: Option<(String, Flag)> = sqlx::query_as(
        "SELECT public_key, active FROM approver_keys
         WHERE id = $1 AND approver_id = $2 AND revoked_at IS NULL",
    )
    .bind(&signature.keyid)
    .bind(&approver.id)
    .fetch_optional(store.pool())
    .await?;
    let (signer, signer_active) = signer
        .and_then(|(key, Flag(active))| Some((decode_public_key(&key).ok()?, active)))
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
        "SELECT id FROM approver_keys WHERE approver_id = $1 AND public_key = $2 AND active = 1",
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
    sqlx::query("UPDATE approver_keys SET active = 0 WHERE approver_id = $1")
        .bind(&approver.id)
        .execute(&mut *w.tx)
        .await?;
    sqlx::query(
        "INSERT INTO approver_keys (id, approver_id, public_key, active, created_at)
         VALUES ($1, $2, $3, 1, $4)",
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

/// Every approver key the gateway ever accepted, revoked ones with when, and the gateway's own
/// identity key, which signs its receipts: what an exported history is checked against offline.
pub async fn public_keys(
    engine: &crate::Engine,
) -> crate::ApiResult<countersign_proto::approvals::ApproverKeys> {
    let rows: Vec<(String, String, String, String, String, Option<String>)> = sqlx::query_as(
        "SELECT k.approver_id, a.display_name, k.id, k.public_key, k.created_at, k.revoked_at
         FROM approver_keys k JOIN approvers a ON a.id = k.approver_id
         ORDER BY k.approver_id, k.created_at, k.id",
    )
    .fetch_all(engine.store.pool())
    .await?;
    let mut keys = Vec::with_capacity(rows.len());
    for (approver_id, display_name, key_id, public_key, created_at, revoked_at) in rows {
        keys.push(countersign_proto::approvals::ApproverKey {
            approver_id,
            display_name,
            key_id,
            public_key,
            created_at: crate::ids::from_text(&created_at)?,
            revoked_at: revoked_at
                .as_deref()
                .map(crate::ids::from_text)
                .transpose()?,
        });
    }
    let identity = engine.identity.verifying_key();
    Ok(countersign_proto::approvals::ApproverKeys {
        gateway_id: engine.gateway_id.clone(),
        gateway_key: Some(countersign_proto::approvals::GatewayKey {
            fingerprint: countersign_proto::enrollment::fingerprint(&identity),
            public_key: countersign_proto::dsse::encode_public_key(&identity),
        }),
        keys,
    })
}
