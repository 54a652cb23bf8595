//! Reading plans: a plan's record, the pages of an effect's subjects, a plan's audit trails, an
//! agent's wallet. Approvers read every plan; an agent only its own.

use countersign_proto::approvals::{PlanRecord, PlanStatus};
use countersign_proto::guard::{SubjectItem, SubjectPage};
use countersign_proto::ErrorCode;
use serde_json::{json, Value};

use crate::accounts::Caller;
use crate::plan::plans::{self, StoredPlan};
use crate::store::Flag;
use crate::{
    approval::eligibility, execution::quotas, execution::wallet, plan::summaries, ApiError,
    ApiResult, Engine,
};

pub const DEFAULT_PAGE: u32 = 1000;
pub const MAX_PAGE: u32 = 5000;

/// Approvers read every plan; an agent reads only its own, and another agent's plan answers
/// exactly as a plan that does not exist: an agent learns nothing of others' plans, not even
/// that they are there.
pub fn ensure_may_read(caller: &Caller, plan: &StoredPlan) -> ApiResult<()> {
    match caller {
        Caller::Agent(agent) if agent.id != plan.agent_id => Err(no_such_plan()),
        _ => Ok(()),
    }
}

/// The one answer about a plan an agent may not see, or that is not there.
pub fn no_such_plan() -> ApiError {
    ApiError::not_found("plan")
}

/// A plan with its status, approvals and what moved: for any approver, and for its own agent.
pub async fn plan(engine: &Engine, caller: &Caller, plan_id: &str) -> ApiResult<PlanRecord> {
    let mut conn = engine.store.snapshot().await?;
    let plan = plans::load(&mut conn, plan_id)
        .await?
        .ok_or_else(no_such_plan)?;
    ensure_may_read(caller, &plan)?;
    let eligibility = eligibility::of(&mut conn, caller, &plan).await?;
    let mut record = plans::record(&mut conn, engine.registry, plan).await?;
    record.eligibility = eligibility;
    Ok(record)
}

/// One page of `effect_id`'s subjects, ids ascending, after `cursor`.
pub async fn subjects(
    engine: &Engine,
    caller: &Caller,
    plan_id: &str,
    effect_id: &str,
    cursor: Option<&str>,
    limit: Option<u32>,
) -> ApiResult<SubjectPage> {
    let limit = limit.unwrap_or(DEFAULT_PAGE);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(ApiError::validation(
            "/limit",
            format!("limit is 1 to {MAX_PAGE}."),
        ));
    }
    let mut conn = engine.store.snapshot().await?;
    let plan = plans::load(&mut conn, plan_id)
        .await?
        .ok_or_else(no_such_plan)?;
    ensure_may_read(caller, &plan)?;
    if quotas::swept_at(&mut conn, plan_id).await?.is_some() {
        return Err(ApiError::new(
            ErrorCode::PlanNotPending,
            format!(
                "Plan {plan_id} is {}; the subjects of closed plans are not kept.",
                plans::status_text(plan.status)
            ),
        ));
    }
    let effect = plan
        .preview
        .effects
        .iter()
        .find(|e| e.id == effect_id)
        .ok_or_else(|| ApiError::not_found("effect"))?;
    // Read after the plan and effect: a cursor is one effect's, and only a real one can say so.
    let after = match cursor {
        Some(cursor) => summaries::cursor_position(effect_id, cursor).ok_or_else(|| {
            ApiError::validation("/cursor", "The cursor is not one of this effect's.")
        })?,
        None => String::new(),
    };
    let total = effect.subjects.as_ref().map_or(0, |s| s.total);
    let mut rows: Vec<(String, String, Option<String>)> = sqlx::query_as(
        "SELECT subject_id, label, detail FROM plan_subjects
         WHERE plan_id = $1 AND effect_id = $2 AND subject_id > $3
         ORDER BY subject_id LIMIT $4",
    )
    .bind(plan_id)
    .bind(effect_id)
    .bind(&after)
    .bind(i64::from(limit) + 1)
    .fetch_all(&mut *conn)
    .await?;
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let next_cursor = more
        .then(|| {
            rows.last()
                .map(|(id, _, _)| summaries::cursor_after(effect_id, id))
        })
        .flatten();
    Ok(SubjectPage {
        items: rows
            .into_iter()
            .map(|(id, label, detail)| {
                Ok(SubjectItem {
                    id,
                    label,
                    detail: detail
                        .map(|d| serde_json::from_str(&d))
                        .transpose()?
                        .unwrap_or(Value::Null),
                })
            })
            .collect::<serde_json::Result<_>>()?,
        next_cursor,
        total,
    })
}

type DecisionAudit = (
    String,
    String,
    String,
    Option<String>,
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

/// A plan's three audit trails: its previews, the decisions as received, its executions.
pub async fn audit(engine: &Engine, caller: &Caller, plan_id: &str) -> ApiResult<Value> {
    let mut conn = engine.store.snapshot().await?;
    let plan = plans::load(&mut conn, plan_id)
        .await?
        .ok_or_else(no_such_plan)?;
    ensure_may_read(caller, &plan)?;
    let previews: Vec<(String, String, String, String, String)> = sqlx::query_as(
        "SELECT id, capability_id, agent_id, request, at FROM preview_audit
         WHERE plan_id = $1 ORDER BY at, id",
    )
    .bind(plan_id)
    .fetch_all(&mut *conn)
    .await?;
    // The signing key's public half rides along, revoked or not, so every decision verifies.
    let decisions: Vec<DecisionAudit> = sqlx::query_as(
        "SELECT d.approver_id, d.key_id, d.decision, d.reason, d.envelope, d.decided_at,
                k.public_key, k.revoked_at, d.withdrawn_at, d.standing_id
           FROM decisions d LEFT JOIN approver_keys k ON k.id = d.key_id
          WHERE d.plan_id = $1 ORDER BY d.id",
    )
    .bind(plan_id)
    .fetch_all(&mut *conn)
    .await?;
    let executions: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT id, journal, at FROM execution_audit WHERE plan_id = $1 ORDER BY at, id",
    )
    .bind(plan_id)
    .fetch_all(&mut *conn)
    .await?;
    let previews: Vec<Value> = previews
        .into_iter()
        .map(|(audit_id, capability_id, agent_id, request, at)| {
            let request: Value = serde_json::from_str(&request)?;
            Ok(json!({"audit_id": audit_id, "capability_id": capability_id,
                      "agent_id": agent_id, "request": request, "at": at}))
        })
        .collect::<serde_json::Result<_>>()?;
    let decisions: Vec<Value> = decisions
        .into_iter()
        .map(
            |(
                approver_id,
                key_id,
                decision,
                reason,
                envelope,
                at,
                public_key,
                revoked_at,
                withdrawn_at,
                standing_id,
            )| {
                // A standing approval's use: its envelope is the standing approval's.
                json!({"approver_id": approver_id, "key_id": key_id, "decision": decision,
                       "reason": reason, "at": at, "envelope": envelope,
                       "public_key": public_key, "key_revoked_at": revoked_at,
                       "withdrawn_at": withdrawn_at, "standing_id": standing_id})
            },
        )
        .collect();
    let executions: Vec<Value> = executions
        .into_iter()
        .map(|(audit_id, journal, at)| {
            let journal: Value = serde_json::from_str(&journal)?;
            Ok(json!({"audit_id": audit_id, "at": at, "journal": journal}))
        })
        .collect::<serde_json::Result<_>>()?;
    Ok(json!({
        "plan_id": plan_id,
        "previews": previews,
        "decisions": decisions,
        "executions": executions,
    }))
}

/// An agent's budget, so approvers see what a plan's cost leaves of it.
pub async fn wallet(engine: &Engine, agent_id: &str) -> ApiResult<Value> {
    let mut conn = engine.store.pool().acquire().await?;
    let known: Option<String> = sqlx::query_scalar("SELECT id FROM agents WHERE id = $1")
        .bind(agent_id)
        .fetch_optional(&mut *conn)
        .await?;
    if known.is_none() {
        return Err(ApiError::not_found("agent"));
    }
    let wallet = wallet::load(&mut conn, agent_id).await?;
    Ok(json!({
        "agent_id": agent_id,
        "limit_credits": wallet.limit,
        "spent_credits": wallet.spent,
        "remaining_credits": countersign_proto::Credits::new(wallet.remaining()),
    }))
}

/// A plan's status as stored and whether its agent still holds a valid token: the one cheap
/// look a waiter takes when something was committed, before it reads the whole plan again.
pub async fn glance(engine: &Engine, plan_id: &str) -> ApiResult<(PlanStatus, bool)> {
    let (status, active): (String, Flag) = sqlx::query_as(
        "SELECT p.status, CASE WHEN a.revoked_at IS NULL THEN 1 ELSE 0 END
         FROM plans p JOIN agents a ON a.id = p.agent_id WHERE p.id = $1",
    )
    .bind(plan_id)
    .fetch_optional(engine.store.pool())
    .await?
    .ok_or_else(|| ApiError::not_found("plan"))?;
    Ok((plans::parse_status(&status), active.0))
}
