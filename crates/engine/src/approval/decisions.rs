//! Signed decisions, checked in the order of PROTOCOL section 3; the first failure answers.

use chrono::Duration;
use countersign_proto::approvals::{DecisionResponse, PlanStatus};
use countersign_proto::decision::{Decision, Statement, StatementError};
use countersign_proto::dsse::{Envelope, DECISION_PAYLOAD_TYPE};
use countersign_proto::ErrorCode;
use serde_json::json;

use crate::accounts::{self, Approver};
use crate::approval::receipts::Signer;
use crate::queue::events::EventKind;
use crate::store::Flag;
use crate::{
    approval::approvals, approval::eligibility, ids, plan::plans, queue, ApiError, ApiResult,
    Engine,
};

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
    let plan_id = plan_id.to_owned();
    let registry = engine.registry;
    let pool = engine.store.pool();
    // Envelope shape: parsed from the bytes received, which the audit keeps verbatim.
    let envelope_text = std::str::from_utf8(body)
        .map_err(|_| ApiError::validation("", "The envelope is not UTF-8 JSON."))?
        .to_owned();
    let envelope: Envelope = serde_json::from_str(&envelope_text)
        .map_err(|e| ApiError::validation("", format!("The body is not a DSSE envelope: {e}")))?;
    let signature = envelope
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
    // Key of this approver, active; then the signature itself.
    let Some(key) = accounts::active_key(pool, &approver.id, &signature.keyid).await? else {
        // The very envelope this approver's decision was accepted as, sent again (its answer
        // got lost) after the key that signed it was rotated out: the same answer. A resend
        // under a key still active is found in the write below, which reads the decisions
        // anyway: a decision is one round trip fewer for it.
        if let Some(at) = accepted_at(pool, &plan_id, &approver.id, &envelope).await? {
            let mut conn = pool.acquire().await?;
            return answer(&mut conn, engine, &plan_id, (&envelope, at)).await;
        }
        return Err(err(
            ErrorCode::BadSignature,
            format!(
                "Key {} is not an active key of this approver.",
                signature.keyid
            ),
        ));
    };
    let statement = match Statement::open(&envelope, &key) {
        Ok(statement) => statement,
        Err(StatementError::Dsse(e)) => return Err(err(ErrorCode::BadSignature, e.to_string())),
        Err(e) => return Err(ApiError::validation("/payload", e.to_string())),
    };
    if statement.approver_id != approver.id || statement.key_id != signature.keyid {
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
    if statement.decision == Decision::Reject
        && statement
            .reason
            .as_deref()
            .is_none_or(|r| r.trim().is_empty())
    {
        return Err(ApiError::validation(
            "/payload",
            "A rejection needs a reason.",
        ));
    }
    if statement.audience != engine.gateway_id {
        return Err(err(
            ErrorCode::AudienceMismatch,
            format!(
                "The statement is addressed to {}, not this gateway.",
                statement.audience
            ),
        ));
    }

    let mut w = engine.store.write().await?;
    let plan = plans::load(&mut w.tx, &plan_id)
        .await?
        .ok_or_else(|| ApiError::not_found("plan"))?;
    // This approver's decisions on the plan and any decision under the statement's nonce, in
    // one read: each is a round trip to a PostgreSQL server.
    let rows: Vec<(String, String, Flag, Flag, Flag, String)> = sqlx::query_as(
        "SELECT envelope, decision, CASE WHEN withdrawn_at IS NULL THEN 1 ELSE 0 END,
                CASE WHEN plan_id = $1 AND approver_id = $2 THEN 1 ELSE 0 END,
                CASE WHEN nonce = $3 THEN 1 ELSE 0 END, decided_at
         FROM decisions WHERE (plan_id = $1 AND approver_id = $2) OR nonce = $3",
    )
    .bind(&plan_id)
    .bind(&approver.id)
    .bind(&statement.nonce)
    .fetch_all(&mut *w.tx)
    .await?;
    let nonce_used = rows
        .iter()
        .any(|(_, _, _, _, Flag(same_nonce), _)| *same_nonce);
    let decided: Vec<(String, String, Flag, String)> = rows
        .into_iter()
        .filter(|(_, _, _, Flag(mine), _, _)| *mine)
        .map(|(envelope, decision, standing, _, _, at)| (envelope, decision, standing, at))
        .collect();
    // A resend, or accepted meanwhile under the same envelope: answered as a resend.
    let identical = decided.iter().find(|(stored, ..)| {
        serde_json::from_str::<Envelope>(stored).is_ok_and(|stored| stored == envelope)
    });
    if let Some((.., at)) = identical {
        let at = ids::from_text(at)?;
        return answer(&mut w.tx, engine, &plan_id, (&envelope, at)).await;
    }
    if statement.plan_digest != plan.preview.plan_digest {
        return Err(err(
            ErrorCode::DigestMismatch,
            format!("Plan {plan_id} has digest {}.", plan.preview.plan_digest),
        ));
    }
    let standing = decided
        .iter()
        .find(|(_, _, Flag(standing), _)| *standing)
        .map(|(_, decision, _, _)| decision.as_str());
    // An approver who approved may still reject before the plan runs: the approval is withdrawn.
    let withdrawal = standing == Some("approve") && statement.decision == Decision::Reject;
    if standing.is_some() && !withdrawal {
        return Err(err(
            ErrorCode::NotEligible,
            "This approver already decided this plan.",
        ));
    }
    if let Some(why) = eligibility::refusal(&mut w.tx, approver, &plan, statement.decision).await? {
        return Err(err(ErrorCode::NotEligible, why));
    }
    if nonce_used {
        return Err(err(
            ErrorCode::NonceReused,
            "The nonce was already used for another statement.",
        ));
    }
    let now = ids::now();
    // A statement that outlives its plan is bounded by the plan's own expiry, checked next.
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
    if now > plan.preview.expires_at {
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
    let moved = plans::moved(&mut w.tx, registry, &plan.preview.read_revisions).await?;
    if !moved.is_empty() {
        if plan.status != PlanStatus::Stale {
            plans::set_status(&mut w.tx, &plan_id, PlanStatus::Stale).await?;
            queue::publish(&mut w.tx, registry, &plan_id, EventKind::Updated).await?;
            w.commit().await?;
        }
        let first = &moved[0];
        return Err(err(
            ErrorCode::PlanStale,
            format!(
                "Plan {plan_id} read {} at revision {}; it is now {}.",
                first.resource, first.planned, first.current
            ),
        )
        .with_details(json!({ "moved": moved })));
    }
    // Stale with nothing moved: execution found the effects drifted. Only a refresh helps.
    if plan.status == PlanStatus::Stale {
        return Err(err(
            ErrorCode::PlanStale,
            format!("Plan {plan_id} no longer describes the current state: refresh it."),
        )
        .with_details(json!({ "moved": [] })));
    }

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
    .bind(&envelope_text)
    .bind(ids::to_text(now))
    .execute(&mut *w.tx)
    .await?;
    let (approvals, status) = approvals::decisions(&mut w.tx, &plan).await?;
    let receipt =
        Signer::from(engine).decision(&envelope, (&plan_id, &plan.preview.plan_digest), now)?;
    // Stored with the plan's summary; its reads were checked above in this transaction.
    let plan = plans::StoredPlan { status, ..plan };
    let known = plans::Known {
        approvals: Some(approvals.clone()),
        moved: Some(Vec::new()),
    };
    queue::publish_plan(&mut w.tx, registry, plan, known, EventKind::Updated).await?;
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
