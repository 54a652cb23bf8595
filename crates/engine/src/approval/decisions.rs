//! Signed decisions, checked in the order of PROTOCOL section 3; the first failure answers.
//! [`decide`] is that order, one step a check: each step answers its refusal, or what the next
//! steps need.

use chrono::Duration;
use countersign_proto::approvals::{DecisionResponse, MovedRevision, PlanStatus};
use countersign_proto::decision::{Decision, Statement, StatementError};
use countersign_proto::dsse::{Envelope, DECISION_PAYLOAD_TYPE};
use countersign_proto::statement::Signed as _;
use countersign_proto::ErrorCode;
use ed25519_dalek::VerifyingKey;
use serde_json::json;

use crate::accounts::{self, Approver};
use crate::approval::receipts::Signer;
use crate::plan::ahead;
use crate::plan::plans::{self, StoredPlan};
use crate::queue::events::EventKind;
use crate::store::{Flag, WriteTx};
use crate::{approval::approvals, approval::eligibility, ids, queue, ApiError, ApiResult, Engine};

/// How far an approver's clock may run ahead.
const CLOCK_SKEW: Duration = Duration::seconds(60);

fn err(code: ErrorCode, message: impl Into<String>) -> ApiError {
    ApiError::new(code, message)
}

/// `approver`'s signed decision on `plan_id`, as the bytes of its DSSE envelope were received.
pub async fn decide(
    engine: &Engine,
    approver: &Approver,
    plan_id: &str,
    body: &[u8],
) -> ApiResult<DecisionResponse> {
    let (envelope, text) = shape(body)?;
    let key = match key(engine, approver, plan_id, &envelope).await? {
        Key::Active(key) => key,
        Key::Resent(answer) => return Ok(answer),
    };
    let statement = signed(&envelope, &key)?;
    names_its_signer_and_plan(&statement, approver, &envelope, plan_id)?;
    addressed_here(&statement, engine)?;

    // Reads of a server of the capability's own come before the writer (plan/ahead.rs).
    let ahead = ahead::read(engine, plan_id, None, false).await?;
    let mut w = engine.store.write().await?;
    let plan = plans::load(&mut w.tx, plan_id)
        .await?
        .ok_or_else(|| ApiError::not_found("plan"))?;
    let prior = Prior::read(&mut w.tx, plan_id, approver, &statement.nonce).await?;
    if let Some(at) = prior.accepted_at(&envelope)? {
        return answer(&mut w.tx, engine, plan_id, (&envelope, at)).await;
    }
    digest_matches(&statement, &plan)?;
    let withdrawal = not_decided_yet(&prior, &statement)?;
    eligible(&mut w, approver, &plan, &statement).await?;
    nonce_unused(&prior)?;
    in_time(&statement, &plan)?;
    open(&plan, &statement, withdrawal)?;
    let w = current(w, engine, &plan, ahead.map(|ahead| ahead.moved)).await?;
    record(
        w,
        engine,
        (approver, plan),
        (&statement, &envelope, &text),
        withdrawal,
    )
    .await
}

/// Envelope shape: parsed from the bytes received (which the audit keeps verbatim), one
/// signature, standard base64, the decision's payload type.
fn shape(body: &[u8]) -> ApiResult<(Envelope, String)> {
    let text = std::str::from_utf8(body)
        .map_err(|_| ApiError::validation("", "The envelope is not UTF-8 JSON."))?
        .to_owned();
    let envelope: Envelope = serde_json::from_str(&text)
        .map_err(|e| ApiError::validation("", format!("The body is not a DSSE envelope: {e}")))?;
    envelope
        .signature()
        .map_err(|e| ApiError::validation("/signatures", e.to_string()))?;
    envelope
        .signature_bytes()
        .map_err(|e| ApiError::validation("/signatures/0/sig", e.to_string()))?;
    envelope
        .payload_bytes()
        .map_err(|e| ApiError::validation("/payload", e.to_string()))?;
    if envelope.payload_type != DECISION_PAYLOAD_TYPE {
        return Err(ApiError::validation(
            "/payloadType",
            format!("The payload type must be {DECISION_PAYLOAD_TYPE}."),
        ));
    }
    Ok((envelope, text))
}

/// The key the envelope names, or the answer to an envelope sent again.
enum Key {
    Active(VerifyingKey),
    Resent(DecisionResponse),
}

/// The key belongs to the token's approver and is active (`bad_signature`). The very envelope
/// this approver's decision was accepted as, sent again after the key that signed it was rotated
/// out (its answer got lost), is answered as it was: a resend under a key still active is found
/// with the plan's decisions, which are read anyway.
async fn key(
    engine: &Engine,
    approver: &Approver,
    plan_id: &str,
    envelope: &Envelope,
) -> ApiResult<Key> {
    let pool = engine.store.pool();
    let keyid = &envelope.signature().map_err(anyhow::Error::from)?.keyid;
    if let Some(key) = accounts::active_key(pool, &approver.id, keyid).await? {
        return Ok(Key::Active(key));
    }
    if let Some(at) = accepted_at(pool, plan_id, &approver.id, envelope).await? {
        let mut conn = pool.acquire().await?;
        let answered = answer(&mut conn, engine, plan_id, (envelope, at)).await?;
        return Ok(Key::Resent(answered));
    }
    Err(err(
        ErrorCode::BadSignature,
        format!("Key {keyid} is not an active key of this approver."),
    ))
}

/// `verify_strict` (`bad_signature`), then the payload is exactly the JCS of the statement it
/// holds, of the decision type (`validation_error`).
fn signed(envelope: &Envelope, key: &VerifyingKey) -> ApiResult<Statement> {
    match Statement::open(envelope, key) {
        Ok(statement) => Ok(statement),
        Err(StatementError::Dsse(e)) => Err(err(ErrorCode::BadSignature, e.to_string())),
        Err(e) => Err(ApiError::validation("/payload", e.to_string())),
    }
}

/// The statement names the approver and key that signed it and the plan in the path, and a
/// rejection says why (`validation_error`).
fn names_its_signer_and_plan(
    statement: &Statement,
    approver: &Approver,
    envelope: &Envelope,
    plan_id: &str,
) -> ApiResult<()> {
    let keyid = &envelope.signature().map_err(anyhow::Error::from)?.keyid;
    if statement.approver_id != approver.id || &statement.key_id != keyid {
        return Err(ApiError::validation(
            "/payload",
            "The statement names another approver or key than the one that signed it.",
        ));
    }
    if statement.plan_id != plan_id {
        return Err(ApiError::validation(
            "/payload",
            "The statement is for another plan than the one in the path.",
        ));
    }
    let no_reason = statement
        .reason
        .as_deref()
        .is_none_or(|r| r.trim().is_empty());
    if statement.decision == Decision::Reject && no_reason {
        return Err(ApiError::validation(
            "/payload",
            "A rejection needs a reason.",
        ));
    }
    Ok(())
}

/// The statement is addressed to this gateway (`audience_mismatch`).
fn addressed_here(statement: &Statement, engine: &Engine) -> ApiResult<()> {
    if statement.audience != engine.gateway_id {
        return Err(err(
            ErrorCode::AudienceMismatch,
            format!(
                "The statement is addressed to {}, not this gateway.",
                statement.audience
            ),
        ));
    }
    Ok(())
}

/// This approver's decisions on the plan and whether the statement's nonce is spent, read at
/// once: each read is a round trip to a PostgreSQL server.
struct Prior {
    /// This approver's decisions on the plan: envelope, decision, standing (not withdrawn),
    /// when.
    mine: Vec<(String, String, bool, String)>,
    nonce_used: bool,
}

impl Prior {
    async fn read(
        conn: &mut sqlx::AnyConnection,
        plan_id: &str,
        approver: &Approver,
        nonce: &str,
    ) -> ApiResult<Prior> {
        let rows: Vec<(String, String, Flag, Flag, Flag, String)> = sqlx::query_as(
            "SELECT envelope, decision, CASE WHEN withdrawn_at IS NULL THEN 1 ELSE 0 END,
                    CASE WHEN plan_id = $1 AND approver_id = $2 THEN 1 ELSE 0 END,
                    CASE WHEN nonce = $3 THEN 1 ELSE 0 END, decided_at
             FROM decisions WHERE (plan_id = $1 AND approver_id = $2) OR nonce = $3",
        )
        .bind(plan_id)
        .bind(&approver.id)
        .bind(nonce)
        .fetch_all(&mut *conn)
        .await?;
        Ok(Prior {
            nonce_used: rows.iter().any(|(_, _, _, _, Flag(nonce), _)| *nonce),
            mine: rows
                .into_iter()
                .filter(|(_, _, _, Flag(mine), _, _)| *mine)
                .map(|(envelope, decision, Flag(standing), _, _, at)| {
                    (envelope, decision, standing, at)
                })
                .collect(),
        })
    }

    /// When `envelope` was accepted, if it is this approver's decision sent again (or accepted
    /// meanwhile under the same envelope): answered as a resend.
    fn accepted_at(&self, envelope: &Envelope) -> ApiResult<Option<chrono::DateTime<chrono::Utc>>> {
        self.mine
            .iter()
            .find(|(stored, ..)| {
                serde_json::from_str::<Envelope>(stored).is_ok_and(|stored| stored == *envelope)
            })
            .map(|(.., at)| ids::from_text(at))
            .transpose()
            .map_err(ApiError::from)
    }

    /// This approver's decision that stands on the plan, if any.
    fn standing(&self) -> Option<&str> {
        self.mine
            .iter()
            .find(|(_, _, standing, _)| *standing)
            .map(|(_, decision, _, _)| decision.as_str())
    }
}

/// The statement signs the plan's digest (`digest_mismatch`).
fn digest_matches(statement: &Statement, plan: &StoredPlan) -> ApiResult<()> {
    if statement.plan_digest != plan.preview.plan_digest {
        return Err(err(
            ErrorCode::DigestMismatch,
            format!(
                "Plan {} has digest {}.",
                plan.preview.plan_id, plan.preview.plan_digest
            ),
        ));
    }
    Ok(())
}

/// This approver has not decided the plan (`not_eligible`), unless an approval of theirs is
/// withdrawn by rejecting: an approver who approved may still reject before the plan runs.
/// Whether it is that withdrawal.
fn not_decided_yet(prior: &Prior, statement: &Statement) -> ApiResult<bool> {
    let standing = prior.standing();
    let withdrawal = standing == Some("approve") && statement.decision == Decision::Reject;
    if standing.is_some() && !withdrawal {
        return Err(err(
            ErrorCode::NotEligible,
            "This approver already decided this plan.",
        ));
    }
    Ok(withdrawal)
}

/// The person may decide the plan, and a rule of it asks for them (`not_eligible`).
async fn eligible(
    w: &mut WriteTx<'_>,
    approver: &Approver,
    plan: &StoredPlan,
    statement: &Statement,
) -> ApiResult<()> {
    match eligibility::refusal(&mut w.tx, approver, plan, statement.decision).await? {
        Some(why) => Err(err(ErrorCode::NotEligible, why)),
        None => Ok(()),
    }
}

/// The nonce was not used for another statement (`nonce_reused`).
fn nonce_unused(prior: &Prior) -> ApiResult<()> {
    match prior.nonce_used {
        true => Err(err(
            ErrorCode::NonceReused,
            "The nonce was already used for another statement.",
        )),
        false => Ok(()),
    }
}

/// The statement's times (`statement_expired`): not expired, not issued in the future, not
/// issued after the plan expired (a statement that outlives its plan is bounded by the plan's own
/// expiry, checked next).
fn in_time(statement: &Statement, plan: &StoredPlan) -> ApiResult<()> {
    let now = ids::now();
    if statement.expires_at < now
        || statement.issued_at > now + CLOCK_SKEW
        || statement.issued_at > plan.preview.expires_at
        || statement.issued_at > statement.expires_at
    {
        return Err(err(
            ErrorCode::StatementExpired,
            "The statement is expired, from the future, or was issued after the plan expired.",
        ));
    }
    Ok(())
}

/// The plan takes decisions (`plan_expired`, `plan_not_pending`): not expired, pending (or stale,
/// or approved for a withdrawal), and, for an approval, not blocked.
fn open(plan: &StoredPlan, statement: &Statement, withdrawal: bool) -> ApiResult<()> {
    let plan_id = &plan.preview.plan_id;
    if ids::now() > plan.preview.expires_at {
        return Err(err(
            ErrorCode::PlanExpired,
            format!("Plan {plan_id} expired."),
        ));
    }
    let open = match plan.status {
        PlanStatus::PendingApproval | PlanStatus::Stale => true,
        PlanStatus::Approved => withdrawal,
        _ => false,
    };
    if !open {
        return Err(err(
            ErrorCode::PlanNotPending,
            format!("Plan {plan_id} is {}.", plans::status_text(plan.status)),
        ));
    }
    // A blocked plan can be rejected, to clear it, but never approved.
    if !plan.preview.executable && statement.decision == Decision::Approve {
        return Err(err(
            ErrorCode::PlanNotPending,
            format!("Plan {plan_id} is blocked by validation errors and can never be approved."),
        ));
    }
    Ok(())
}

/// Every read revision is still current (`plan_stale`): a plan whose reads moved becomes stale
/// (committed here, with an event), one stale with nothing moved drifted at execution and only a
/// refresh helps. The write, to go on with.
async fn current<'a>(
    mut w: WriteTx<'a>,
    engine: &Engine,
    plan: &StoredPlan,
    ahead: Option<ApiResult<Vec<MovedRevision>>>,
) -> ApiResult<WriteTx<'a>> {
    let plan_id = &plan.preview.plan_id;
    let moved = match ahead {
        Some(moved) => moved?,
        None => {
            plans::moved(
                &mut w.tx,
                engine.registry,
                &plan.preview.read_revisions,
                None,
            )
            .await?
        }
    };
    if let Some(first) = moved.first() {
        if plan.status != PlanStatus::Stale {
            plans::set_status(&mut w.tx, plan_id, PlanStatus::Stale).await?;
            queue::publish(&mut w.tx, engine.registry, plan_id, EventKind::Updated).await?;
            w.commit().await?;
        }
        return Err(err(
            ErrorCode::PlanStale,
            format!(
                "Plan {plan_id} read {} at revision {}; it is now {}.",
                first.resource, first.planned, first.current
            ),
        )
        .with_details(json!({ "moved": moved })));
    }
    if plan.status == PlanStatus::Stale {
        return Err(err(
            ErrorCode::PlanStale,
            format!("Plan {plan_id} no longer describes the current state: refresh it."),
        )
        .with_details(json!({ "moved": [] })));
    }
    Ok(w)
}

/// The decision recorded verbatim (a withdrawal first withdraws the approval it takes back),
/// counted against the plan's rules, its new summary published, and the gateway's receipt.
async fn record(
    mut w: WriteTx<'_>,
    engine: &Engine,
    (approver, plan): (&Approver, StoredPlan),
    (statement, envelope, text): (&Statement, &Envelope, &str),
    withdrawal: bool,
) -> ApiResult<DecisionResponse> {
    let plan_id = plan.preview.plan_id.clone();
    let now = ids::now();
    if withdrawal {
        sqlx::query(
            "UPDATE decisions SET withdrawn_at = $1
             WHERE plan_id = $2 AND approver_id = $3 AND withdrawn_at IS NULL",
        )
        .bind(ids::to_text(now))
        .bind(&plan_id)
        .bind(&approver.id)
        .execute(&mut *w.tx)
        .await?;
    }
    sqlx::query(
        "INSERT INTO decisions (plan_id, approver_id, key_id, decision, reason, nonce, envelope, decided_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(&plan_id)
    .bind(&approver.id)
    .bind(&statement.key_id)
    .bind(match statement.decision {
        Decision::Approve => "approve",
        Decision::Reject => "reject",
    })
    .bind(&statement.reason)
    .bind(&statement.nonce)
    .bind(text)
    .bind(ids::to_text(now))
    .execute(&mut *w.tx)
    .await?;
    let (approvals, status) = approvals::decisions(&mut w.tx, &plan).await?;
    let receipt =
        Signer::from(engine).decision(envelope, (&plan_id, &plan.preview.plan_digest), now)?;
    // Stored with the plan's summary; its reads were checked above in this transaction.
    let plan = StoredPlan { status, ..plan };
    let known = plans::Known {
        approvals: Some(approvals.clone()),
        moved: Some(Vec::new()),
    };
    queue::publish_plan(&mut w.tx, engine.registry, plan, known, EventKind::Updated).await?;
    w.commit().await?;
    Ok(DecisionResponse {
        plan_id,
        status,
        approvals,
        receipt: Some(receipt),
    })
}

/// When `envelope` was accepted as `approver_id`'s decision on `plan_id`, if it was.
async fn accepted_at(
    pool: &sqlx::AnyPool,
    plan_id: &str,
    approver_id: &str,
    envelope: &Envelope,
) -> ApiResult<Option<chrono::DateTime<chrono::Utc>>> {
    let stored: Vec<(String, String)> = sqlx::query_as(
        "SELECT envelope, decided_at FROM decisions WHERE plan_id = $1 AND approver_id = $2",
    )
    .bind(plan_id)
    .bind(approver_id)
    .fetch_all(pool)
    .await?;
    let at = stored
        .into_iter()
        .find(|(s, _)| serde_json::from_str::<Envelope>(s).is_ok_and(|s| s == *envelope))
        .map(|(_, at)| ids::from_text(&at))
        .transpose()?;
    Ok(at)
}

/// The answer to a decision sent again: the plan as it stands, and the receipt of the decision
/// as it was accepted (`envelope`, at its time).
async fn answer(
    conn: &mut sqlx::AnyConnection,
    engine: &Engine,
    plan_id: &str,
    (envelope, at): (&Envelope, chrono::DateTime<chrono::Utc>),
) -> ApiResult<DecisionResponse> {
    let plan = plans::load(conn, plan_id)
        .await?
        .ok_or_else(|| ApiError::not_found("plan"))?;
    let receipt =
        Signer::from(engine).decision(envelope, (plan_id, &plan.preview.plan_digest), at)?;
    Ok(DecisionResponse {
        plan_id: plan_id.to_owned(),
        status: plan.status,
        approvals: approvals::of(conn, &plan).await?,
        receipt: Some(receipt),
    })
}
