//! Revoking approvers, approver keys and agents. Rows stay, marked: a revoked token or key is
//! refused from then on, while the decisions it made keep their key in the audit.

use crate::ids;
use crate::store::Store;

/// Revokes approver `approver_id`: their token and every key of theirs.
pub async fn revoke_approver(store: &Store, approver_id: &str) -> anyhow::Result<()> {
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
    w.commit().await?;
    Ok(())
}

/// Revokes one approver key; the approver keeps their token but must be invited again to sign
/// if this was their active key. Returns the approver's id.
pub async fn revoke_key(store: &Store, key_id: &str) -> anyhow::Result<String> {
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
    w.commit().await?;
    Ok(approver)
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
