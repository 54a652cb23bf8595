//! Rules that widen after a time: when a plan's next escalation comes, the sweep publishes the
//! plan again, so its summary names the rule widened and the people it now asks see the plan
//! wait on them (their console counts it, and tells them).

use crate::queue::events::EventKind;
use crate::store::Store;
use crate::{ids, queue, ApiResult, Registry};

/// Publishes every open plan whose next escalation has come, and notes the one after. Returns
/// how many were.
pub async fn sweep(store: &Store, registry: &'static Registry) -> ApiResult<usize> {
    let now = ids::now();
    let due: Vec<String> = sqlx::query_scalar(
        "SELECT id FROM plans WHERE escalates_at IS NOT NULL AND escalates_at <= $1
         ORDER BY escalates_at, id",
    )
    .bind(ids::to_text(now))
    .fetch_all(store.pool())
    .await?;
    if due.is_empty() {
        return Ok(0);
    }
    let mut w = store.write().await?;
    let mut published = 0;
    for plan_id in due {
        let Some(plan) = crate::plan::plans::load(&mut w.tx, &plan_id).await? else {
            continue;
        };
        let following = plan
            .requirement
            .next_escalation(plan.preview.created_at, Some(now));
        sqlx::query("UPDATE plans SET escalates_at = $1 WHERE id = $2")
            .bind(following.map(ids::to_text))
            .bind(&plan_id)
            .execute(&mut *w.tx)
            .await?;
        let waiting = matches!(
            plan.status,
            countersign_proto::approvals::PlanStatus::PendingApproval
                | countersign_proto::approvals::PlanStatus::Stale
        );
        if waiting {
            queue::publish(&mut w.tx, registry, &plan_id, EventKind::Updated).await?;
            published += 1;
        }
    }
    w.commit().await?;
    Ok(published)
}
