//! Reading a plan's parts and history, and asking for a fresh preview of it.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::response::Response;
use countersign_proto::approvals::PlanStatus;
use countersign_proto::guard::{SubjectItem, SubjectPage};
use countersign_proto::ErrorCode;
use serde::Deserialize;
use serde_json::{json, Value};

use super::no_store;
use crate::accounts::Agent;
use crate::auth::Caller;
use crate::capabilities::Capability;
use crate::error::{ApiError, ApiResult};
use crate::events::EventKind;
use crate::plans::{self, StoredPlan};
use crate::previews::{self, Origin, PreviewAudit};
use crate::{ids, queue, quotas, scopes, AppState};

pub const DEFAULT_PAGE: u32 = 1000;
pub const MAX_PAGE: u32 = 5000;

/// Approvers read every plan; an agent reads only its own.
pub fn ensure_may_read(caller: &Caller, plan: &StoredPlan) -> ApiResult<()> {
    match caller {
        Caller::Agent(agent) if agent.id != plan.agent_id => Err(not_theirs()),
        _ => Ok(()),
    }
}

fn not_theirs() -> ApiError {
    ApiError::new(ErrorCode::Forbidden, "Agents read only their own plans.")
}

pub fn query<T>(query: Result<Query<T>, axum::extract::rejection::QueryRejection>) -> ApiResult<T> {
    query
        .map(|Query(q)| q)
        .map_err(|e| ApiError::validation("", e.body_text()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageQuery {
    cursor: Option<String>,
    limit: Option<u32>,
}

pub async fn subjects(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path((plan_id, effect_id)): Path<(String, String)>,
    page: Result<Query<PageQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Response> {
    let page = query(page)?;
    let limit = page.limit.unwrap_or(DEFAULT_PAGE);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(ApiError::validation(
            "/limit",
            format!("limit is 1 to {MAX_PAGE}."),
        ));
    }
    let after = match &page.cursor {
        Some(cursor) => plans::cursor_position(&effect_id, cursor).ok_or_else(|| {
            ApiError::validation("/cursor", "The cursor is not one of this effect's.")
        })?,
        None => String::new(),
    };
    let mut conn = state.store.pool().begin().await?;
    // An agent learns nothing of plans not its own, not even whether they exist.
    let plan = match plans::load(&mut conn, &plan_id).await? {
        Some(plan) => plan,
        None if matches!(caller, Caller::Agent(_)) => return Err(not_theirs()),
        None => return Err(ApiError::not_found("plan")),
    };
    ensure_may_read(&caller, &plan)?;
    if quotas::swept_at(&mut conn, &plan_id).await?.is_some() {
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
    let total = effect.subjects.as_ref().map_or(0, |s| s.total);
    let mut rows: Vec<(String, String, Option<String>)> = sqlx::query_as(
        "SELECT subject_id, label, detail FROM plan_subjects
         WHERE plan_id = $1 AND effect_id = $2 AND subject_id > $3
         ORDER BY subject_id LIMIT $4",
    )
    .bind(&plan_id)
    .bind(&effect_id)
    .bind(&after)
    .bind(i64::from(limit) + 1)
    .fetch_all(&mut *conn)
    .await?;
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let next_cursor = more
        .then(|| {
            rows.last()
                .map(|(id, _, _)| plans::cursor_after(&effect_id, id))
        })
        .flatten();
    Ok(no_store(SubjectPage {
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
    }))
}

pub async fn refresh(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    Path(plan_id): Path<String>,
) -> ApiResult<Response> {
    let mut w = state.store.write().await?;
    let old = plans::load(&mut w.tx, &plan_id)
        .await?
        .ok_or_else(|| ApiError::not_found("plan"))?;
    ensure_may_read(&caller, &old)?;
    if matches!(
        old.status,
        PlanStatus::Executed | PlanStatus::Rejected | PlanStatus::Superseded | PlanStatus::Failed
    ) {
        return Err(ApiError::new(
            ErrorCode::PlanNotPending,
            format!(
                "Plan {plan_id} is {} and cannot be refreshed.",
                plans::status_text(old.status)
            ),
        ));
    }
    if matches!(caller, Caller::Approver(_)) && old.status == PlanStatus::Approved {
        let moved = plans::moved(&mut w.tx, &old.preview.read_revisions).await?;
        if plans::effective_status(&old, ids::now(), &moved) == PlanStatus::Approved {
            return Err(ApiError::new(
                ErrorCode::PlanNotPending,
                format!("Plan {plan_id} is approved and current; only its agent may replace it."),
            ));
        }
    }
    let capability = Capability::by_id(&old.preview.capability_id)
        .ok_or_else(|| anyhow::anyhow!("plan {plan_id} names an unknown capability"))?;
    let agent = Agent {
        id: old.agent_id.clone(),
        on_behalf_of: old.preview.caller.on_behalf_of.clone(),
    };
    let params = &old.preview.request.params;
    scopes::authorize(&mut w.tx, &agent, capability, params).await?;
    let audit_id = ids::random_id("aud_", 8);
    let request = json!({"params": old.preview.request.params, "refresh_of": plan_id});
    let audit = PreviewAudit {
        audit_id: &audit_id,
        request: &request,
        idempotency_key: None,
    };
    let fresh = previews::create(
        &mut w.tx,
        capability,
        &agent,
        params,
        None,
        &audit,
        Origin::Refresh {
            supersedes: &plan_id,
        },
    )
    .await?;
    sqlx::query("UPDATE plans SET status = 'superseded', superseded_by = $1 WHERE id = $2")
        .bind(&fresh.plan_id)
        .bind(&plan_id)
        .execute(&mut *w.tx)
        .await?;
    queue::publish(&mut w.tx, &plan_id, EventKind::Updated).await?;
    let stored = plans::load(&mut w.tx, &fresh.plan_id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("the refreshed plan vanished"))?;
    let record = plans::record(&mut w.tx, stored).await?;
    w.commit().await?;
    Ok(no_store(record))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    plan_id: String,
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
);

/// A plan's three audit trails: its previews, the decisions as received, its executions.
pub async fn audit(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    audit_query: Result<Query<AuditQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Response> {
    let AuditQuery { plan_id } = query(audit_query)?;
    let mut conn = state.store.pool().begin().await?;
    let plan = plans::load(&mut conn, &plan_id)
        .await?
        .ok_or_else(|| ApiError::not_found("plan"))?;
    ensure_may_read(&caller, &plan)?;
    let previews: Vec<(String, String, String, String, String)> = sqlx::query_as(
        "SELECT id, capability_id, agent_id, request, at FROM preview_audit
         WHERE plan_id = $1 ORDER BY at, id",
    )
    .bind(&plan_id)
    .fetch_all(&mut *conn)
    .await?;
    // The signing key's public half rides along, revoked or not, so every decision verifies.
    let decisions: Vec<DecisionAudit> = sqlx::query_as(
        "SELECT d.approver_id, d.key_id, d.decision, d.reason, d.envelope, d.decided_at,
                k.public_key, k.revoked_at, d.withdrawn_at
           FROM decisions d LEFT JOIN approver_keys k ON k.id = d.key_id
          WHERE d.plan_id = $1 ORDER BY d.id",
    )
    .bind(&plan_id)
    .fetch_all(&mut *conn)
    .await?;
    let executions: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT id, journal, at FROM execution_audit WHERE plan_id = $1 ORDER BY at, id",
    )
    .bind(&plan_id)
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
            )| {
                json!({"approver_id": approver_id, "key_id": key_id, "decision": decision,
                       "reason": reason, "at": at, "envelope": envelope,
                       "public_key": public_key, "key_revoked_at": revoked_at,
                       "withdrawn_at": withdrawn_at})
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
    Ok(no_store(json!({
        "plan_id": plan_id,
        "previews": previews,
        "decisions": decisions,
        "executions": executions,
    })))
}
