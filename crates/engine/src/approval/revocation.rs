//! Revoking approvers, approver keys and agents. Rows stay, marked: a revoked token or key is
//! refused from then on, while the decisions it made keep their key in the audit. Approvals it
//! gave to plans not yet executed stop counting, in the same transaction: a plan that had its
//! quorum only with them waits for approvers again.

use countersign_proto::approvals::PlanStatus;
use sqlx::AnyConnection;

use crate::queue::events::EventKind;
use crate::registry::Registry;
use crate::store::Store;
use crate::{ids, plan::plans, queue, ApiResult};

/// Revokes approver `approver_id`: their token and every key of theirs.
pub async fn revoke_approver(
    store: &Store,
    registry: &'static Registry,
    approver_id: &str,
) -> anyhow::Result<()> {
    let now = ids::to_text(ids::now());
    let mut w = store.write().await?;
    let revoked =
        sqlx::query("UPDATE approvers SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL")
            .bind(&now)
            .bind(approver_id)
            .execute(&mut *w.tx)
            .await?;
    anyhow::ensure!(
        revoked.rows_affected() == 1,
        "no approver {approver_id} that is not already revoked"
    );
    sqlx::query(
        "UPDATE approver_keys SET revoked_at = $1, active = 0
         WHERE approver_id = $2 AND revoked_at IS NULL",
    )
    .bind(&now)
    .bind(approver_id)
    .execute(&mut *w.tx)
    .await?;
    let approvals = "SELECT id, plan_id FROM decisions WHERE approver_id = $1";
    withdraw(&mut w.tx, registry, approvals, approver_id, &now)
        .await
        .map_err(|e| anyhow::anyhow!("{}", e.message))?;
    w.commit().await?;
    Ok(())
}

/// Revokes one approver key; the approver keeps their token but must be invited again to sign
/// if this was their active key. Returns the approver's id.
pub async fn revoke_key(
    store: &Store,
    registry: &'static Registry,
    key_id: &str,
) -> anyhow::Result<String> {
    let now = ids::to_text(ids::now());
    let mut w = store.write().await?;
    let approver: Option<String> = sqlx::query_scalar(
        "UPDATE approver_keys SET revoked_at = $1, active = 0
         WHERE id = $2 AND revoked_at IS NULL RETURNING approver_id",
    )
    .bind(&now)
    .bind(key_id)
    .fetch_optional(&mut *w.tx)
    .await?;
    let approver =
        approver.ok_or_else(|| anyhow::anyhow!("no key {key_id} that is not already revoked"))?;
    let approvals = "SELECT id, plan_id FROM decisions WHERE key_id = $1";
    withdraw(&mut w.tx, registry, approvals, key_id, &now)
        .await
        .map_err(|e| anyhow::anyhow!("{}", e.message))?;
    w.commit().await?;
    Ok(approver)
}

/// Withdraws the approvals `select` (bound to `who`) finds that still stand on plans not yet
/// executed, and puts each such plan where its remaining decisions leave it: an approved plan
/// short of its quorum now waits again, with an event. Executed plans keep their approvals: they
/// ran on them.
pub(crate) async fn withdraw(
    tx: &mut AnyConnection,
    registry: &'static Registry,
    select: &str,
    who: &str,
    now: &str,
) -> ApiResult<()> {
    let standing: Vec<(i64, String)> = sqlx::query_as(&format!(
        "{select} AND decision = 'approve' AND withdrawn_at IS NULL
           AND plan_id IN (SELECT id FROM plans
                           WHERE status IN ('pending_approval', 'approved', 'stale'))
         ORDER BY id"
    ))
    .bind(who)
    .fetch_all(&mut *tx)
    .await?;
    let mut touched: Vec<String> = Vec::new();
    for (decision, plan_id) in standing {
        sqlx::query("UPDATE decisions SET withdrawn_at = $1 WHERE id = $2")
            .bind(now)
            .bind(decision)
            .execute(&mut *tx)
            .await?;
        if !touched.contains(&plan_id) {
            touched.push(plan_id);
        }
    }
    for plan_id in touched {
        let Some(plan) = plans::load(tx, &plan_id).await? else {
            continue;
        };
        if plan.status == PlanStatus::Approved {
            let now = crate::approval::approvals::standing(tx, &plan).await?;
            if now != PlanStatus::Approved {
                plans::set_status(tx, &plan_id, now).await?;
            }
        }
        queue::publish(tx, registry, &plan_id, EventKind::Updated).await?;
    }
    Ok(())
}

/// Revokes agent `agent_id`'s token.
pub async fn revoke_agent(store: &Store, agent_id: &str) -> anyhow::Result<()> {
    let mut w = store.write().await?;
    let revoked =
        sqlx::query("UPDATE agents SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL")
            .bind(ids::to_text(ids::now()))
            .bind(agent_id)
            .execute(&mut *w.tx)
            .await?;
    anyhow::ensure!(
        revoked.rows_affected() == 1,
        "no agent {agent_id} that is not already revoked"
    );
    w.commit().await?;
    Ok(())
}

/// Whether approver `approver_id` is still active: an event stream of a revoked approver ends.
pub async fn approver_active(store: &Store, approver_id: &str) -> Result<bool, sqlx::Error> {
    let active: Option<i64> =
        sqlx::query_scalar("SELECT 1 FROM approvers WHERE id = $1 AND revoked_at IS NULL")
            .bind(approver_id)
            .fetch_optional(store.pool())
            .await?;
    Ok(active.is_some())
}

/// Whether agent `agent_id` is still active: a revoked agent's waits end.
pub async fn agent_active(store: &Store, agent_id: &str) -> Result<bool, sqlx::Error> {
    let active: Option<i64> =
        sqlx::query_scalar("SELECT 1 FROM agents WHERE id = $1 AND revoked_at IS NULL")
            .bind(agent_id)
            .fetch_optional(store.pool())
            .await?;
    Ok(active.is_some())
}
