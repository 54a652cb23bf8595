//! Standing approvals (`docs/standing.md`): stored once verified; counted as their signer's
//! approval for a new plan they cover, in the transaction that stores it ([`cover`]); used up
//! only as the plans they approved run ([`uses`]); listed page by page with their uses
//! ([`list`]); revoked by their signer or an admin, ended with their key or approver, suspended
//! by a policy that no longer lets them cover what they name.

mod cover;
mod list;
mod uses;

pub use cover::{apply, candidates, Candidates};
pub use list::{load, MAX_PAGE};
pub use uses::take;

use chrono::Duration;
use countersign_proto::standing::{flag_text, StandingApproval, StandingStatement};
use countersign_proto::ErrorCode;

use crate::accounts::callers::Approver;
use crate::approval::receipts::Signer;
use crate::approval::{revocation, signed};
use crate::ids;
use crate::registry::Registry;
use crate::store::{Store, Tx};
use crate::{ApiError, ApiResult, Engine};

/// How far a signer's clock may run ahead.
const CLOCK_SKEW: Duration = Duration::seconds(60);

/// The most standing approvals one approver holds active at once: each is a grant that runs
/// plans nobody looks at, and the scan of a new plan's candidates reads them all.
pub const MAX_ACTIVE: i64 = 100;

/// Who revokes a standing approval.
pub enum Revoker<'a> {
    /// Its signer, over the API.
    Signer(&'a Approver),
    /// The gateway's admin, from its command line.
    Admin,
}

/// Verifies and stores `approver`'s standing approval, as the bytes of its envelope came.
pub async fn create(
    engine: &Engine,
    approver: &Approver,
    body: &[u8],
) -> ApiResult<StandingApproval> {
    let (statement, text) = signed::open::<StandingStatement>(engine, approver, body).await?;
    let now = ids::now();
    if statement.expires_at <= now || statement.issued_at > now + CLOCK_SKEW {
        return Err(ApiError::new(
            ErrorCode::StatementExpired,
            "The standing approval is expired or issued in the future.",
        ));
    }
    let capability = engine.capability(&statement.capability_id)?;
    if let Some(flag) = statement
        .risk_flags
        .iter()
        .find(|f| !engine.policy.coverable().contains(f))
    {
        return Err(ApiError::new(
            ErrorCode::PolicyDenied,
            format!(
                "The approval policy lets no standing approval cover {} plans; leave that flag out.",
                flag_text(*flag)
            ),
        ));
    }
    let mut w = engine.store.write().await?;
    let agent: Option<Option<String>> =
        sqlx::query_scalar("SELECT on_behalf_of FROM agents WHERE id = $1 AND revoked_at IS NULL")
            .bind(&statement.agent_id)
            .fetch_optional(&mut *w.tx)
            .await?;
    let on_behalf_of = agent.ok_or_else(|| ApiError::not_found("agent"))?;
    if on_behalf_of.is_some() && on_behalf_of == approver.user_id {
        return Err(ApiError::new(
            ErrorCode::NotEligible,
            format!(
                "{} acts on behalf of this approver; someone else must approve its plans.",
                statement.agent_id
            ),
        ));
    }
    // A nonce is spent once, by a decision or a standing approval: a replayed statement is refused.
    let used: Option<i64> = sqlx::query_scalar(
        "SELECT 1 FROM standing_approvals WHERE nonce = $1 OR id = $2
         UNION ALL SELECT 1 FROM decisions WHERE nonce = $1 LIMIT 1",
    )
    .bind(&statement.nonce)
    .bind(&statement.standing_id)
    .fetch_optional(&mut *w.tx)
    .await?;
    if used.is_some() {
        return Err(ApiError::new(
            ErrorCode::NonceReused,
            "This standing approval (its id or nonce) was already sent.",
        ));
    }
    let expired_before =
        ids::to_text(chrono::SubsecRound::trunc_subsecs(now, 0) - Duration::seconds(1));
    let active: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM standing_approvals
         WHERE approver_id = $1 AND revoked_at IS NULL AND plans_used < max_plans
           AND expires_at > $2",
    )
    .bind(&approver.id)
    .bind(&expired_before)
    .fetch_one(&mut *w.tx)
    .await?;
    if active >= MAX_ACTIVE {
        return Err(ApiError::validation(
            "",
            format!(
                "An approver holds at most {MAX_ACTIVE} active standing approvals, and this \
                 approver holds {active}: revoke one first."
            ),
        ));
    }
    sqlx::query(
        "INSERT INTO standing_approvals (id, approver_id, key_id, agent_id, capability_id, nonce,
         statement, envelope, expires_at, created_at, max_plans)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(&statement.standing_id)
    .bind(&approver.id)
    .bind(&statement.key_id)
    .bind(&statement.agent_id)
    .bind(capability.id())
    .bind(&statement.nonce)
    .bind(serde_json::to_string(&statement)?)
    .bind(&text)
    .bind(ids::to_text(statement.expires_at))
    .bind(ids::to_text(now))
    .bind(i64::from(statement.max_plans))
    .execute(&mut *w.tx)
    .await?;
    let stored = load(&mut w.tx, engine.into(), &statement.standing_id).await?;
    w.commit().await?;
    stored.ok_or_else(|| ApiError::not_found("standing approval"))
}

/// A page of the gateway's standing approvals, newest first, from `cursor` (a previous page's
/// `next_cursor`), at most `limit` (1 to [`MAX_PAGE`]) of them.
pub async fn list(
    store: &Store,
    signer: Signer<'_>,
    cursor: Option<&str>,
    limit: u32,
) -> ApiResult<countersign_proto::standing::StandingList> {
    let mut conn = store.pool().acquire().await?;
    list::page(&mut conn, signer, cursor, limit).await
}

/// Revokes standing approval `id` at once: approvals it gave to plans not yet run stop counting,
/// in the same transaction.
pub async fn revoke(
    (store, registry): (&Store, &'static Registry),
    receipts: Signer<'_>,
    by: Revoker<'_>,
    id: &str,
) -> ApiResult<StandingApproval> {
    let mut w = store.write().await?;
    let signer: Option<String> =
        sqlx::query_scalar("SELECT approver_id FROM standing_approvals WHERE id = $1")
            .bind(id)
            .fetch_optional(&mut *w.tx)
            .await?;
    let signer = signer.ok_or_else(|| ApiError::not_found("standing approval"))?;
    let revoked_by = match by {
        Revoker::Signer(approver) if approver.id == signer => approver.display_name.clone(),
        Revoker::Signer(_) => {
            return Err(ApiError::new(
                ErrorCode::Forbidden,
                "Only its signer (or the gateway's admin) revokes a standing approval.",
            ))
        }
        Revoker::Admin => "an admin".to_owned(),
    };
    let now = ids::to_text(ids::now());
    sqlx::query(
        "UPDATE standing_approvals SET revoked_at = $1, revoked_by = $2
         WHERE id = $3 AND revoked_at IS NULL",
    )
    .bind(&now)
    .bind(&revoked_by)
    .bind(id)
    .execute(&mut *w.tx)
    .await?;
    let uses = "SELECT id, plan_id FROM decisions WHERE standing_id = $1";
    revocation::withdraw(&mut w.tx, registry, uses, id, &now).await?;
    let stored = load(&mut w.tx, receipts, id).await?;
    w.commit().await?;
    stored.ok_or_else(|| ApiError::not_found("standing approval"))
}

/// Suspends the standing approvals the policy now in force no longer lets cover what they name,
/// and lifts the suspension of those it lets again. Returns how many are suspended.
pub async fn suspend(tx: &mut Tx, policy: &countersign_policy::Policy) -> ApiResult<usize> {
    let rows: Vec<(String, String)> =
        sqlx::query_as("SELECT id, statement FROM standing_approvals WHERE revoked_at IS NULL")
            .fetch_all(&mut **tx)
            .await?;
    let mut suspended = 0;
    for (id, statement) in rows {
        let statement: StandingStatement = serde_json::from_str(&statement)?;
        let why = statement
            .risk_flags
            .iter()
            .find(|f| !policy.coverable().contains(f))
            .map(|f| {
                format!(
                    "the approval policy no longer lets a standing approval cover {} plans",
                    flag_text(*f)
                )
            });
        suspended += usize::from(why.is_some());
        sqlx::query("UPDATE standing_approvals SET suspended = $1 WHERE id = $2")
            .bind(why)
            .bind(&id)
            .execute(&mut **tx)
            .await?;
    }
    Ok(suspended)
}
