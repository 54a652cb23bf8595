//! The agent's preview: schema, scopes and caps checked, the plan evaluated and stored, or the
//! answer to a repeated idempotency key.

use countersign_pack::ApprovalRule;
use countersign_proto::describe::DryRunMode;
use countersign_proto::plan::{DryRunRequest, InvalidPreview, Preview, Violation};
use countersign_proto::{ErrorCode, INTERFACE_VERSION};
use serde::Serialize;
use serde_json::Value;

use crate::accounts::Agent;
use crate::approval::policy::Asking;
use crate::plan::previews::{self, Origin, PreviewAudit};
use crate::registry::{Capability, Registry};
use sqlx::AnyConnection;

use crate::{
    accounts::scopes, approval::approvals, execution::quotas, ids, plan::bounds, plan::plans,
    plan::staging, plan::summaries, ApiError, ApiResult, Engine,
};
use countersign_proto::approvals::{Approvals, PlanStatus};

/// Seed 000's `valid: false` answer, one violation naming every offending field.
pub fn invalid_preview(
    capability: Capability,
    audit_id: &str,
    details: Vec<countersign_proto::plan::ViolationDetail>,
) -> InvalidPreview {
    let first = details
        .first()
        .map_or_else(|| "/params".to_owned(), |d| d.schema_pointer.clone());
    let message = if details.len() == 1 {
        format!(
            "Field '{}' is invalid.",
            first.trim_start_matches("/params/")
        )
    } else {
        format!("{} fields are invalid.", details.len())
    };
    InvalidPreview {
        interface_version: INTERFACE_VERSION.to_owned(),
        valid: false,
        capability_id: capability.id().to_owned(),
        audit_id: audit_id.to_owned(),
        violations: vec![Violation {
            code: "validation_error".to_owned(),
            message,
            hint: "Call describe(id) and resend params that match input_schema.".to_owned(),
            retryable: false,
            schema_pointer: first,
            details,
            audit_id: Some(audit_id.to_owned()),
        }],
        effects: vec![],
    }
}

/// What a dry_run answers: a stored plan, seed 000's `valid: false`, or the first answer to a
/// repeated idempotency key.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum DryRunAnswer {
    Plan(Box<Preview>),
    /// A plan its standing approvals approved as it was stored (`docs/standing.md`): the plan,
    /// with its status and the approvals that count.
    Standing {
        #[serde(flatten)]
        plan: Box<Preview>,
        status: PlanStatus,
        approvals: Approvals,
    },
    Invalid(InvalidPreview),
    Repeated(Value),
}

/// The dry_run of capability `id` for `agent`, as the HTTP route and the MCP tools run it.
pub async fn run(
    engine: &Engine,
    id: &str,
    agent: &Agent,
    request: DryRunRequest,
) -> ApiResult<DryRunAnswer> {
    let capability = engine.capability(id)?;
    let registry = engine.registry;
    // Read before the writer is taken: what the policy will read of the agent and the directory.
    let asking = {
        let mut conn = engine.store.pool().acquire().await?;
        scopes::authorize(&mut conn, registry, agent, capability, &request.params).await?;
        Asking::load(&mut conn, agent, engine.policy.reads()).await?
    };
    bounds::dry_run(&request, capability.max_string())?;
    let describe = capability.describe();
    if describe.dry_run == DryRunMode::NotApplicable {
        return Err(ApiError::validation(
            "",
            format!("{id} has no preview; invoke it directly."),
        ));
    }
    let request_json = serde_json::to_value(&request)?;
    let key = request.idempotency_key.as_deref();
    // A repeated key answers the first plan: looked up first on a read connection, and again
    // under the writer, where two senders of one key meet.
    if let Some(key) = key {
        let mut conn = engine.store.pool().acquire().await?;
        let first = repeated(&mut conn, registry, agent, capability, key, &request_json);
        if let Some(answer) = first.await? {
            return Ok(DryRunAnswer::Repeated(answer));
        }
    }
    let audit_id = ids::random_id("aud_", 8);
    let audit = PreviewAudit {
        audit_id: &audit_id,
        request: &request_json,
        idempotency_key: key,
    };
    let violations = capability.violations(&request.params);
    if !violations.is_empty() {
        let mut w = engine.store.write().await?;
        if let Some(key) = key {
            let first = repeated(&mut w.tx, registry, agent, capability, key, &request_json);
            if let Some(answer) = first.await? {
                return Ok(DryRunAnswer::Repeated(answer));
            }
        }
        previews::write_audit(&mut w.tx, &audit, capability, &agent.id, None).await?;
        w.commit().await?;
        return Ok(DryRunAnswer::Invalid(invalid_preview(
            capability, &audit_id, violations,
        )));
    }
    let _evaluating = engine.previews.enter(&agent.id)?;
    // Only where the answer is known before evaluating: a plan that waits for nobody is not
    // held to the caps, and other rules decide that from the evaluation.
    if capability.approval() == ApprovalRule::Always && engine.policy.is_builtin() {
        let mut conn = engine.store.pool().acquire().await?;
        quotas::at_cap(&mut conn, &agent.id, &engine.limits).await?;
    }
    let planned = previews::evaluate(&engine.store, capability, &request.params).await?;
    let staged = staging::stage(&engine.store, summaries::sets_of(&planned)).await?;
    let answer = store(
        engine,
        (agent, &asking),
        capability,
        &request,
        &audit,
        planned,
        staged.as_ref(),
    )
    .await;
    let stored = match &answer {
        Ok(DryRunAnswer::Plan(preview)) => Some(preview.plan_id.as_str()),
        Ok(DryRunAnswer::Standing { plan, .. }) => Some(plan.plan_id.as_str()),
        _ => None,
    };
    staging::settle(&engine.store, staged, stored).await;
    answer
}

/// The evaluated plan stored under the writer, checked against the state it is stored in; or
/// the first answer to its idempotency key, if another sender of the key came first.
async fn store(
    engine: &Engine,
    (agent, asking): (&Agent, &Asking),
    capability: Capability,
    request: &DryRunRequest,
    audit: &PreviewAudit<'_>,
    planned: countersign_pack::Planned,
    staged: Option<&staging::Staged>,
) -> ApiResult<DryRunAnswer> {
    let registry = engine.registry;
    let mut w = engine.store.write().await?;
    if let Some(key) = audit.idempotency_key {
        let first = repeated(&mut w.tx, registry, agent, capability, key, audit.request);
        if let Some(answer) = first.await? {
            return Ok(DryRunAnswer::Repeated(answer));
        }
    }
    let planned =
        previews::current(&mut w.tx, registry, capability, &request.params, planned).await?;
    let (preview, status) = previews::create(
        &mut w.tx,
        engine,
        capability,
        (agent, asking),
        &request.params,
        request.expected_revisions.as_ref(),
        audit,
        Origin::DryRun,
        planned,
        staged,
    )
    .await?;
    // Approved as it was stored: its standing approvals are in its approvals.
    if preview.would_require_approval && status == PlanStatus::Approved {
        let plan = plans::load(&mut w.tx, &preview.plan_id)
            .await?
            .ok_or_else(|| anyhow::anyhow!("the plan vanished as it was stored"))?;
        let approvals = approvals::of(&mut w.tx, &plan).await?;
        w.commit().await?;
        return Ok(DryRunAnswer::Standing {
            plan: Box::new(preview),
            status,
            approvals,
        });
    }
    w.commit().await?;
    Ok(DryRunAnswer::Plan(Box::new(preview)))
}

/// A dry_run repeated with its idempotency key: the first plan again with its status now, or a
/// conflict when the key came with another request.
async fn repeated(
    conn: &mut AnyConnection,
    registry: &'static Registry,
    agent: &Agent,
    capability: Capability,
    key: &str,
    request: &Value,
) -> ApiResult<Option<Value>> {
    let first: Option<(String, String, Option<String>, String)> = sqlx::query_as(
        "SELECT id, request, plan_id, capability_id FROM preview_audit
         WHERE agent_id = $1 AND idempotency_key = $2",
    )
    .bind(&agent.id)
    .bind(key)
    .fetch_optional(&mut *conn)
    .await?;
    let Some((audit_id, first_request, plan_id, first_capability)) = first else {
        return Ok(None);
    };
    let same = first_capability == capability.id()
        && serde_json::from_str::<Value>(&first_request).ok().as_ref() == Some(request);
    if !same {
        return Err(ApiError::new(
            ErrorCode::IdempotencyConflict,
            "This idempotency key was used for another preview request.",
        ));
    }
    let Some(plan_id) = plan_id else {
        // The first request was invalid, and validation depends on nothing but the request.
        let violations = capability.violations(&request["params"]);
        return Ok(Some(serde_json::to_value(invalid_preview(
            capability, &audit_id, violations,
        ))?));
    };
    let plan = plans::load(conn, &plan_id)
        .await?
        .ok_or_else(|| ApiError::not_found("plan"))?;
    // The stored plan as it stands now, never as if it were fresh: its digest covers only the
    // plan core, so the members added here leave it intact.
    let record = plans::record(conn, registry, plan).await?;
    let mut answer = serde_json::to_value(&record.plan)?;
    answer["status"] = serde_json::to_value(record.status)?;
    answer["stale"] = serde_json::to_value(&record.stale)?;
    answer["superseded_by"] = serde_json::to_value(&record.superseded_by)?;
    Ok(Some(answer))
}
