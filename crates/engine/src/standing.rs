//! Standing approvals (`docs/standing.md`): stored once verified, counted as their signer's
//! approval for a new plan they cover in the transaction that stores it (their uses and credits
//! going down in that same transaction), revoked by their signer or an admin, ended with their
//! key or approver, suspended by a policy that no longer lets them cover what they name.

use chrono::Duration;
use countersign_proto::approvals::PlanStatus;
use countersign_proto::dsse::Envelope;
use countersign_proto::plan::Preview;
use countersign_proto::standing::{
    flag_text, StandingApproval, StandingError, StandingList, StandingState, StandingStatement,
    StandingUse, STANDING_PAYLOAD_TYPE,
};
use countersign_proto::{Credits, ErrorCode};
use sqlx::AnyConnection;

use crate::callers::Approver;
use crate::registry::Registry;
use crate::requirement::{Approving, Tally};
use crate::store::{Store, Tx};
use crate::{accounts, approvals, eligibility, ids, plans, revocation, teams};
use crate::{ApiError, ApiResult, Engine};

/// How far a signer's clock may run ahead.
const CLOCK_SKEW: Duration = Duration::seconds(60);

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
    let text = std::str::from_utf8(body)
        .map_err(|_| ApiError::validation("", "The envelope is not UTF-8 JSON."))?;
    let envelope: Envelope = serde_json::from_str(text)
        .map_err(|e| ApiError::validation("", format!("The body is not a DSSE envelope: {e}")))?;
    let signature = envelope
        .signature()
        .map_err(|e| ApiError::validation("/signatures", e.to_string()))?;
    if envelope.payload_type != STANDING_PAYLOAD_TYPE {
        return Err(ApiError::validation(
            "/payloadType",
            format!("The payload type must be {STANDING_PAYLOAD_TYPE}."),
        ));
    }
    let pool = engine.store.pool();
    let key = accounts::active_key(pool, &approver.id, &signature.keyid)
        .await?
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::BadSignature,
                format!(
                    "Key {} is not an active key of this approver.",
                    signature.keyid
                ),
            )
        })?;
    let statement = match StandingStatement::open(&envelope, &key) {
        Ok(statement) => statement,
        Err(StandingError::Dsse(e)) => {
            return Err(ApiError::new(ErrorCode::BadSignature, e.to_string()))
        }
        Err(e) => return Err(ApiError::validation("/payload", e.to_string())),
    };
    if statement.approver_id != approver.id || statement.key_id != signature.keyid {
        return Err(ApiError::validation(
            "/payload",
            "The statement names another approver or key than the one that signed it.",
        ));
    }
    if statement.audience != engine.gateway_id {
        return Err(ApiError::new(
            ErrorCode::AudienceMismatch,
            format!(
                "The statement is addressed to {}, not this gateway.",
                statement.audience
            ),
        ));
    }
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
    sqlx::query(
        "INSERT INTO standing_approvals (id, approver_id, key_id, agent_id, capability_id, nonce,
         statement, envelope, expires_at, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .bind(&statement.standing_id)
    .bind(&approver.id)
    .bind(&statement.key_id)
    .bind(&statement.agent_id)
    .bind(capability.id())
    .bind(&statement.nonce)
    .bind(serde_json::to_string(&statement)?)
    .bind(text)
    .bind(ids::to_text(statement.expires_at))
    .bind(ids::to_text(now))
    .execute(&mut *w.tx)
    .await?;
    let stored = load(&mut w.tx, &statement.standing_id).await?;
    w.commit().await?;
    stored.ok_or_else(|| ApiError::not_found("standing approval"))
}

/// One stored row, before its state is worked out.
type Row = (
    String,
    String,
    String,
    i64,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    String,
    Option<String>,
    Option<String>,
);

const SELECT: &str = "SELECT s.id, s.statement, s.envelope, s.plans_used, s.credits_used,
        s.revoked_at, s.revoked_by, s.suspended, a.display_name, a.revoked_at, k.revoked_at
    FROM standing_approvals s JOIN approvers a ON a.id = s.approver_id
    LEFT JOIN approver_keys k ON k.id = s.key_id";

/// Standing approval `id`, with the plans it covered.
pub async fn load(conn: &mut AnyConnection, id: &str) -> ApiResult<Option<StandingApproval>> {
    let row: Option<Row> = sqlx::query_as(&format!("{SELECT} WHERE s.id = $1"))
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?;
    match row {
        Some(row) => Ok(Some(with_uses(conn, row).await?)),
        None => Ok(None),
    }
}

/// Every standing approval of the gateway, newest first.
pub async fn list(store: &Store) -> ApiResult<StandingList> {
    let mut conn = store.pool().acquire().await?;
    let rows: Vec<Row> = sqlx::query_as(&format!("{SELECT} ORDER BY s.created_at DESC, s.id"))
        .fetch_all(&mut *conn)
        .await?;
    let mut items = Vec::with_capacity(rows.len());
    for row in rows {
        items.push(with_uses(&mut conn, row).await?);
    }
    Ok(StandingList { items })
}

async fn with_uses(conn: &mut AnyConnection, row: Row) -> ApiResult<StandingApproval> {
    let (id, statement, envelope, plans_used, credits_used, revoked_at, revoked_by, suspended) =
        (row.0, row.1, row.2, row.3, row.4, row.5, row.6, row.7);
    let (display_name, approver_revoked, key_revoked) = (row.8, row.9, row.10);
    let statement: StandingStatement = serde_json::from_str(&statement)?;
    let envelope: Envelope = serde_json::from_str(&envelope)?;
    let uses: Vec<(String, String, Option<String>, String)> = sqlx::query_as(
        "SELECT d.plan_id, p.plan_digest, d.standing_credits, d.decided_at
         FROM decisions d JOIN plans p ON p.id = d.plan_id
         WHERE d.standing_id = $1 ORDER BY d.id DESC LIMIT 100",
    )
    .bind(&id)
    .fetch_all(&mut *conn)
    .await?;
    let mut covered = Vec::with_capacity(uses.len());
    for (plan_id, plan_digest, credits, at) in uses {
        covered.push(StandingUse {
            plan_id,
            plan_digest,
            credits: credits_of(credits.as_deref()),
            at: ids::from_text(&at)?,
        });
    }
    let plans_used = plans_used.max(0) as u32;
    let credits_used = credits_of(Some(&credits_used));
    let (state, state_reason) = if let Some(at) = revoked_at {
        let by = revoked_by.unwrap_or_else(|| "an admin".to_owned());
        (
            StandingState::Revoked,
            Some(format!("revoked by {by} at {at}")),
        )
    } else if approver_revoked.is_some() {
        (
            StandingState::Revoked,
            Some("its approver was revoked".to_owned()),
        )
    } else if key_revoked.is_some() {
        (
            StandingState::Revoked,
            Some("the key that signed it was revoked".to_owned()),
        )
    } else if let Some(why) = suspended {
        (StandingState::Suspended, Some(why))
    } else if statement.expires_at <= ids::now() {
        (StandingState::Expired, None)
    } else if plans_used >= statement.max_plans {
        (
            StandingState::UsedUp,
            Some(format!("all {plans_used} plans are used")),
        )
    } else if credits_used >= statement.max_cost_total && statement.max_cost_total > Credits::ZERO {
        (
            StandingState::UsedUp,
            Some(format!("all {credits_used} credits are used")),
        )
    } else {
        (StandingState::Active, None)
    };
    Ok(StandingApproval {
        standing_id: id,
        display_name,
        statement,
        envelope,
        plans_used,
        credits_used,
        state,
        state_reason,
        covered,
    })
}

/// Credits as stored (decimal text), zero when absent or unreadable.
fn credits_of(text: Option<&str>) -> Credits {
    text.and_then(|t| t.parse().ok()).unwrap_or(Credits::ZERO)
}

/// Revokes standing approval `id` at once: approvals it gave to plans not yet run stop counting,
/// in the same transaction.
pub async fn revoke(
    store: &Store,
    registry: &'static Registry,
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
    let stored = load(&mut w.tx, id).await?;
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

/// A candidate's row: the standing approval, its use, and its signer.
type CandidateRow = (
    String,
    String,
    String,
    i64,
    String,
    String,
    String,
    Option<String>,
);

/// A candidate for a new plan: its row, and its signer as a caller.
struct Candidate {
    id: String,
    statement: StandingStatement,
    envelope: String,
    plans_used: i64,
    credits_used: Credits,
    signer: Approver,
}

/// Counts the standing approvals that cover the new plan `preview` (stored in `tx`, waiting) as their signers' approvals, each where a rule lets one count, until its rules
/// are met. Returns the plan's status after them.
pub async fn apply(tx: &mut Tx, engine: &Engine, preview: &Preview) -> ApiResult<PlanStatus> {
    let waiting = PlanStatus::PendingApproval;
    if !preview.executable {
        return Ok(waiting);
    }
    let rows: Vec<CandidateRow> = sqlx::query_as(
        "SELECT s.id, s.statement, s.envelope, s.plans_used, s.credits_used,
                    a.id, a.display_name, a.user_id
             FROM standing_approvals s JOIN approvers a ON a.id = s.approver_id
             JOIN approver_keys k ON k.id = s.key_id
             WHERE s.agent_id = $1 AND s.capability_id = $2 AND s.revoked_at IS NULL
               AND s.suspended IS NULL AND a.revoked_at IS NULL AND k.revoked_at IS NULL
             ORDER BY s.created_at, s.id",
    )
    .bind(&preview.caller.agent_id)
    .bind(&preview.capability_id)
    .fetch_all(&mut **tx)
    .await?;
    if rows.is_empty() {
        return Ok(waiting);
    }
    let now = ids::now();
    let cost = preview.estimated_cost.amount_max;
    let candidates = rows.into_iter().filter_map(|row| {
        let statement: StandingStatement = serde_json::from_str(&row.1).ok()?;
        let credits_used = credits_of(Some(&row.4));
        let fits = statement.expires_at > now
            && statement
                .refuses(preview, engine.policy.coverable())
                .is_none()
            && row.3 < i64::from(statement.max_plans)
            && credits_used.value() + cost.value() <= statement.max_cost_total.value();
        fits.then_some(Candidate {
            id: row.0,
            statement,
            envelope: row.2,
            plans_used: row.3,
            credits_used,
            signer: Approver {
                id: row.5,
                display_name: row.6,
                user_id: row.7,
            },
        })
    });
    let Some(plan) = plans::load(tx, &preview.plan_id).await? else {
        return Ok(waiting);
    };
    let tally = Tally::new(&plan.requirement, preview.created_at, now);
    let mut approving: Vec<Approving> = Vec::new();
    let mut used = false;
    for candidate in candidates {
        if eligibility::personal(tx, &candidate.signer, &plan)
            .await?
            .is_some()
        {
            continue;
        }
        let profile = teams::profile(tx, &candidate.signer).await?;
        let seated = Approving {
            approver_id: candidate.signer.id.clone(),
            person: profile.person,
            teams: profile.teams,
            standing: true,
        };
        if approving.iter().any(|a| a.person == seated.person)
            || !tally.would_count(&approving, seated.clone())
        {
            continue;
        }
        if !take(tx, &candidate, cost).await? {
            continue;
        }
        record_use(tx, &candidate, preview, cost, now).await?;
        approving.push(seated);
        used = true;
        if tally.count(&approving).1 {
            break;
        }
    }
    if !used {
        return Ok(waiting);
    }
    let status = approvals::standing(tx, &plan).await?;
    if status != waiting {
        plans::set_status(tx, &preview.plan_id, status).await?;
    }
    Ok(status)
}

/// Takes one plan and `cost` credits from `candidate`, unless another transaction took from it
/// since it was read: the update holds only while its count is still the one read.
async fn take(tx: &mut Tx, candidate: &Candidate, cost: Credits) -> ApiResult<bool> {
    let credits = Credits::new(candidate.credits_used.value() + cost.value());
    let taken = sqlx::query(
        "UPDATE standing_approvals SET plans_used = plans_used + 1, credits_used = $1
         WHERE id = $2 AND plans_used = $3 AND credits_used = $4",
    )
    .bind(credits.to_string())
    .bind(&candidate.id)
    .bind(candidate.plans_used)
    .bind(candidate.credits_used.to_string())
    .execute(&mut **tx)
    .await?;
    Ok(taken.rows_affected() == 1)
}

/// The use's approval: a decision row of the signer, under the standing approval's envelope,
/// with the credits it took.
async fn record_use(
    tx: &mut Tx,
    candidate: &Candidate,
    preview: &Preview,
    cost: Credits,
    now: chrono::DateTime<chrono::Utc>,
) -> ApiResult<()> {
    sqlx::query(
        "INSERT INTO decisions (plan_id, approver_id, key_id, decision, reason, nonce, envelope,
         decided_at, standing_id, standing_credits)
         VALUES ($1, $2, $3, 'approve', $4, $5, $6, $7, $8, $9)",
    )
    .bind(&preview.plan_id)
    .bind(&candidate.signer.id)
    .bind(&candidate.statement.key_id)
    .bind(format!(
        "Standing approval {}: {}",
        candidate.id, candidate.statement.reason
    ))
    .bind(format!("{}:{}", candidate.id, preview.plan_id))
    .bind(&candidate.envelope)
    .bind(ids::to_text(now))
    .bind(&candidate.id)
    .bind(cost.to_string())
    .execute(&mut **tx)
    .await?;
    Ok(())
}
