//! Amend and re-preview (`docs/amend.md`): an approver changes a plan's request instead of
//! rejecting it. Here, whether they may and what they change; `refresh::amend` checks the agent's
//! authorization for the new params and previews them as the plan's successor, which names who
//! changed what. The amender signs the successor like anyone else: one person, one approval.

use countersign_proto::approvals::{Amendment, ParamChange};
use countersign_proto::decision::Decision;
use countersign_proto::ErrorCode;
use serde_json::Value;
use sqlx::AnyConnection;

use crate::callers::Approver;
use crate::plans::StoredPlan;
use crate::registry::Capability;
use crate::{eligibility, ApiError, ApiResult};

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
    let mut changes = Vec::new();
    diff(
        "",
        Some(&old.preview.request.params),
        Some(params),
        &mut changes,
    );
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
        summary: summary(&approver.display_name, &changes),
        changes,
    })
}

/// The params that differ between `before` and `after`, by JSON pointer: objects member by
/// member, anything else as a whole.
pub fn diff(at: &str, before: Option<&Value>, after: Option<&Value>, out: &mut Vec<ParamChange>) {
    match (before, after) {
        (Some(Value::Object(b)), Some(Value::Object(a))) => {
            let mut keys: Vec<&String> = b.keys().chain(a.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let pointer = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
                diff(&pointer, b.get(key), a.get(key), out);
            }
        }
        (b, a) if b != a => out.push(ParamChange {
            param: at.to_owned(),
            before: b.cloned(),
            after: a.cloned(),
        }),
        _ => {}
    }
}

/// "Lena changed retention_days from 7 to 14 and removed note."
pub fn summary(who: &str, changes: &[ParamChange]) -> String {
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let parts: Vec<String> = changes
        .iter()
        .map(|c| {
            let name = c.param.trim_start_matches('/').replace('/', ".");
            match (&c.before, &c.after) {
                (Some(b), Some(a)) => format!("changed {name} from {} to {}", text(b), text(a)),
                (None, Some(a)) => format!("set {name} to {}", text(a)),
                (Some(_), None) => format!("removed {name}"),
                (None, None) => format!("left {name}"),
            }
        })
        .collect();
    let joined = match parts.as_slice() {
        [] => "changed nothing".to_owned(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    };
    format!("{who} {joined}.")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_summary_names_each_changed_param() {
        let mut changes = Vec::new();
        diff(
            "",
            Some(
                &json!({"project": "prj_184", "retention_days": 7, "filter": {"team": "a"}, "note": "x"}),
            ),
            Some(&json!({"project": "prj_184", "retention_days": 14, "filter": {"team": "b"}})),
            &mut changes,
        );
        assert_eq!(
            changes.iter().map(|c| c.param.as_str()).collect::<Vec<_>>(),
            ["/filter/team", "/note", "/retention_days"]
        );
        assert_eq!(
            summary("Lena", &changes),
            "Lena changed filter.team from a to b, removed note and changed retention_days from 7 to 14."
        );
        let mut none = Vec::new();
        diff(
            "",
            Some(&json!({"a": [1]})),
            Some(&json!({"a": [1]})),
            &mut none,
        );
        assert!(none.is_empty());
    }
}
