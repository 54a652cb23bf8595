//! Agent side: describe and preview.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::Response;
use axum::Json;
use countersign_proto::describe::{CapabilityList, Describe, DryRunMode, GatewayInfo};
use countersign_proto::plan::{DryRunRequest, InvalidPreview, Violation};
use countersign_proto::INTERFACE_VERSION;
use serde_json::Value;

use super::no_store;
use crate::accounts::Agent;
use crate::auth::Caller;
use crate::capabilities::{schema_violations, Capability};
use crate::error::{ApiError, ApiResult, Body};
use crate::store::{bump_queue_revision, Tx};
use crate::{ids, plans, AppState};

pub async fn gateway(State(state): State<Arc<AppState>>, _caller: Caller) -> Json<GatewayInfo> {
    Json(GatewayInfo {
        gateway_id: state.gateway_id.clone(),
        interface_version: INTERFACE_VERSION.to_owned(),
        name: state.name.clone(),
    })
}

pub async fn capabilities(_caller: Caller) -> Json<CapabilityList> {
    Json(CapabilityList {
        items: Capability::ALL.iter().map(|c| c.describe()).collect(),
    })
}

pub fn capability(id: &str) -> ApiResult<Capability> {
    Capability::by_id(id).ok_or_else(|| ApiError::not_found("capability"))
}

pub async fn describe(_caller: Caller, Path(id): Path<String>) -> ApiResult<Json<Describe>> {
    Ok(Json(capability(&id)?.describe()))
}

/// Seed 000's `valid: false` answer, one violation naming every offending field.
pub fn invalid_preview(
    capability: Capability,
    audit_id: &str,
    details: Vec<countersign_proto::plan::ViolationDetail>,
) -> InvalidPreview {
    let first = details[0].schema_pointer.clone();
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

pub async fn write_preview_audit(
    tx: &mut Tx,
    audit_id: &str,
    capability: Capability,
    agent: &Agent,
    plan_id: Option<&str>,
    request: &Value,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO preview_audit (id, capability_id, agent_id, plan_id, valid, request, at)
         VALUES (?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(audit_id)
    .bind(capability.id())
    .bind(&agent.id)
    .bind(plan_id)
    .bind(plan_id.is_some())
    .bind(request.to_string())
    .bind(ids::to_text(ids::now()))
    .execute(&mut **tx)
    .await?;
    Ok(())
}

pub async fn dry_run(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    agent: Agent,
    Body(request): Body<DryRunRequest>,
) -> ApiResult<Response> {
    let capability = capability(&id)?;
    let describe = capability.describe();
    if describe.dry_run == DryRunMode::NotApplicable {
        return Err(ApiError::validation(
            "",
            format!("{id} has no preview; invoke it directly."),
        ));
    }
    let audit_id = ids::random_id("aud_", 8);
    let request_json = serde_json::to_value(&request)?;
    let violations = schema_violations(&describe, &request.params);
    let mut w = state.store.write().await?;
    if !violations.is_empty() {
        write_preview_audit(
            &mut w.tx,
            &audit_id,
            capability,
            &agent,
            None,
            &request_json,
        )
        .await?;
        w.commit().await?;
        return Ok(no_store(invalid_preview(capability, &audit_id, violations)));
    }
    let planned = capability.plan(&mut w.tx, &request.params).await?;
    let subjects: Vec<_> = planned
        .effects
        .iter()
        .map(|e| (e.effect.id.clone(), e.subjects.clone()))
        .collect();
    let preview = plans::build_preview(
        capability,
        &agent,
        &request.params,
        request.expected_revisions.as_ref(),
        planned,
        &audit_id,
    )?;
    plans::insert(
        &mut w.tx,
        &preview,
        &subjects,
        describe.approval.required_approvals,
    )
    .await?;
    let plan_id = Some(preview.plan_id.as_str());
    write_preview_audit(
        &mut w.tx,
        &audit_id,
        capability,
        &agent,
        plan_id,
        &request_json,
    )
    .await?;
    if preview.would_require_approval {
        bump_queue_revision(&mut w.tx).await?;
    }
    w.commit().await?;
    Ok(no_store(preview))
}
