//! Who may decide a plan: one person is one approval, and nobody decides a plan that acts on their
//! own behalf or grants access to them. The same answer refuses a decision (`not_eligible`) and
//! tells an approver's console, in the plan record, why it may not approve.

use countersign_proto::approvals::Eligibility;
use countersign_proto::plan::EffectKind;
use sqlx::AnyConnection;

use crate::callers::{Approver, Caller};
use crate::plans::StoredPlan;

/// What a plan record tells the approver `caller` about deciding `plan`; nothing for an agent.
pub async fn of(
    conn: &mut AnyConnection,
    caller: &Caller,
    plan: &StoredPlan,
) -> Result<Option<Eligibility>, sqlx::Error> {
    let Caller::Approver(approver) = caller else {
        return Ok(None);
    };
    let reason = refusal(conn, approver, plan).await?;
    Ok(Some(Eligibility {
        eligible: reason.is_none(),
        reason,
    }))
}

/// Why `approver` may not decide `plan`, or `None` when they may.
pub async fn refusal(
    conn: &mut AnyConnection,
    approver: &Approver,
    plan: &StoredPlan,
) -> Result<Option<String>, sqlx::Error> {
    let Some(person) = approver.user_id.as_deref() else {
        // An approver invited without a person is a person of its own: nothing to compare.
        return Ok(None);
    };
    if plan.preview.caller.on_behalf_of.as_deref() == Some(person) {
        return Ok(Some(format!(
            "The plan acts on behalf of {person}, who is this approver; someone else must decide it."
        )));
    }
    for effect in &plan.preview.effects {
        if effect.kind != EffectKind::Grant || effect.subjects.is_none() {
            continue;
        }
        let granted: Option<i64> = sqlx::query_scalar(
            "SELECT 1 FROM plan_subjects WHERE plan_id = $1 AND effect_id = $2 AND subject_id = $3",
        )
        .bind(&plan.preview.plan_id)
        .bind(&effect.id)
        .bind(person)
        .fetch_optional(&mut *conn)
        .await?;
        if granted.is_some() {
            return Ok(Some(format!(
                "The plan grants access to {person}, who is this approver (the grantee); someone \
                 else must decide it."
            )));
        }
    }
    let other: Option<String> = sqlx::query_scalar(
        "SELECT d.approver_id FROM decisions d JOIN approvers a ON a.id = d.approver_id
         WHERE d.plan_id = $1 AND d.withdrawn_at IS NULL AND a.user_id = $2 AND a.id <> $3
         LIMIT 1",
    )
    .bind(&plan.preview.plan_id)
    .bind(person)
    .bind(&approver.id)
    .fetch_optional(&mut *conn)
    .await?;
    Ok(other.map(|other| {
        format!("{person} already decided this plan as approver {other}: one person, one decision.")
    }))
}
