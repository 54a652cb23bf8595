//! Amend and re-preview (`docs/amend.md`): an approver changes a plan's request instead of
//! rejecting it. Here, whether they may and what they change; `refresh::amend` checks the agent's
//! authorization for the new params and previews them as the plan's successor, which names who
//! changed what. The amender is the successor's requester: their approval does not count for it
//! (`eligibility::wrote_request`), and the request as amended may not act for them or grant to
//! them.

use countersign_proto::approvals::{Amendment, ParamChange};
use countersign_proto::decision::Decision;
use countersign_proto::ErrorCode;
use serde_json::Value;
use sqlx::AnyConnection;

use crate::accounts::callers::Approver;
use crate::plan::plans::StoredPlan;
use crate::registry::Capability;
use crate::{approval::eligibility, plan::bounds, ApiError, ApiResult};

/// What `approver` changes in `old` by asking for `params`, if they may: the plan asks for them,
/// and the params fit the capability's schema and differ from the plan's.
pub(crate) async fn check(
    conn: &mut AnyConnection,
    approver: &Approver,
    old: &StoredPlan,
    capability: Capability,
    params: &Value,
) -> ApiResult<Amendment> {
    if let Some(why) = eligibility::refusal(conn, approver, old, Decision::Reject).await? {
        return Err(ApiError::new(ErrorCode::NotEligible, why));
    }
    bounds::amend(params, capability.max_string())?;
    if let Some(first) = capability.violations(params).first() {
        return Err(ApiError::validation(
            &first.schema_pointer,
            format!(
                "The amended request does not fit {}: {}",
                capability.id(),
                first.message
            ),
        ));
    }
    let changes = ParamChange::between(&old.preview.request.params, params);
    if changes.is_empty() {
        return Err(ApiError::validation(
            "/params",
            "The amended params are the plan's own: refresh the plan instead.",
        ));
    }
    Ok(Amendment {
        approver_id: approver.id.clone(),
        display_name: approver.display_name.clone(),
        amends: old.preview.plan_id.clone(),
        summary: ParamChange::summary(&approver.display_name, &changes),
        changes,
    })
}
