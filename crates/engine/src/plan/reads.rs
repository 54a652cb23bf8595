//! Reading plans: a plan's record, the pages of an effect's subjects, a plan's audit trails, an
//! agent's wallet. Approvers read every plan; an agent only its own.

use countersign_proto::approvals::{PlanRecord, PlanStatus};
use countersign_proto::guard::SubjectItem;
use countersign_proto::ErrorCode;
use serde_json::{json, Value};
use sqlx::Row;

use crate::accounts::Caller;
use crate::plan::plans::{self, StoredPlan};
use crate::store::{Dialect, Flag};
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

/// One page of `effect_id`'s subjects, ids ascending, after `cursor`: a
/// [`SubjectPage`](countersign_proto::guard::SubjectPage)'s JSON, its items rendered as each
/// store reads fastest ([`Page::items`]). An effect whose set another effect names first reads
/// that effect's rows.
pub async fn subjects(
    engine: &Engine,
    caller: &Caller,
    plan_id: &str,
    effect_id: &str,
    cursor: Option<&str>,
    limit: Option<u32>,
) -> ApiResult<String> {
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
    let rows_of = plan.rows_of(effect_id);
    let page = Page {
        plan_id,
        rows_of,
        after: &after,
        limit,
    };
    let (count, items, last) = page.items(&mut conn, engine.store.dialect()).await?;
    let next_cursor = match last {
        Some(last) if count == limit as usize => {
            let more: Option<i32> = sqlx::query_scalar(
                "SELECT 1 FROM plan_subjects
                 WHERE plan_id = $1 AND effect_id = $2 AND subject_id > $3 LIMIT 1",
            )
            .bind(plan_id)
            .bind(rows_of)
            .bind(&last)
            .fetch_optional(&mut *conn)
            .await?;
            more.map(|_| summaries::cursor_after(effect_id, &last))
        }
        _ => None,
    };
    let mut body = String::with_capacity(items.len() + 128);
    body.push_str("{\"items\":[");
    body.push_str(&items);
    body.push_str("],\"next_cursor\":");
    body.push_str(&serde_json::to_string(&next_cursor)?);
    body.push_str(",\"total\":");
    body.push_str(&total.to_string());
    body.push('}');
    Ok(body)
}

/// Which rows a page of subjects holds: `rows_of`'s, ids ascending, after `after`.
struct Page<'a> {
    plan_id: &'a str,
    rows_of: &'a str,
    after: &'a str,
    limit: u32,
}

impl Page<'_> {
    /// The page's `(count, items joined by commas, last id)`. An item without detail has none,
    /// as [`SubjectItem`] serialises.
    ///
    /// On SQLite the database renders the items and joins them into one value: sqlx's SQLite
    /// worker hands every row over a channel on its own, which cost most of a 5,000-row page.
    /// PostgreSQL's rows come off the socket in the task that reads them, and rendering JSON in
    /// the database cost it more than they do (17 ms against 3 for 5,000 rows): it reads rows.
    async fn items(
        &self,
        conn: &mut sqlx::AnyConnection,
        dialect: Dialect,
    ) -> ApiResult<(usize, String, Option<String>)> {
        let sql = match dialect {
            Dialect::Sqlite => SQLITE_PAGE,
            Dialect::Postgres => POSTGRES_PAGE,
        };
        let query = sqlx::query(sql)
            .bind(self.plan_id)
            .bind(self.rows_of)
            .bind(self.after)
            .bind(i64::from(self.limit));
        if dialect == Dialect::Sqlite {
            let row = query.fetch_one(&mut *conn).await?;
            let count: i64 = row.try_get(0)?;
            return Ok((count as usize, row.try_get(1)?, row.try_get(2)?));
        }
        let rows = query.fetch_all(&mut *conn).await?;
        let mut items = String::with_capacity(rows.len() * 48);
        let mut last = None;
        for row in &rows {
            if last.is_some() {
                items.push(',');
            }
            let detail: Option<String> = row.try_get(2)?;
            let item = SubjectItem {
                id: row.try_get(0)?,
                label: row.try_get(1)?,
                detail: detail
                    .as_deref()
                    .map(serde_json::from_str)
                    .transpose()?
                    .unwrap_or(Value::Null),
            };
            items.push_str(&serde_json::to_string(&item)?);
            last = Some(item.id);
        }
        Ok((rows.len(), items, last))
    }
}

const POSTGRES_PAGE: &str = "
    SELECT subject_id, label, detail FROM plan_subjects
    WHERE plan_id = $1 AND effect_id = $2 AND subject_id > $3
    ORDER BY subject_id LIMIT $4";

/// Ordered twice on purpose: the subquery's order picks the page, and an aggregate's order is its
/// own (arbitrary without ORDER BY).
const SQLITE_PAGE: &str = "
    SELECT count(*), coalesce(group_concat(item, ',' ORDER BY subject_id), ''), max(subject_id)
    FROM (SELECT subject_id,
                 CASE WHEN detail IS NULL
                      THEN json_object('id', subject_id, 'label', label)
                      ELSE json_object('id', subject_id, 'label', label, 'detail', json(detail))
                 END AS item
          FROM plan_subjects
          WHERE plan_id = $1 AND effect_id = $2 AND subject_id > $3
          ORDER BY subject_id LIMIT $4) AS page";

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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    async fn page(
        conn: &mut sqlx::AnyConnection,
        dialect: Dialect,
        after: &str,
    ) -> (usize, Vec<SubjectItem>, Option<String>) {
        let page = Page {
            plan_id: "plan_1",
            rows_of: "eff_1",
            after,
            limit: 2,
        };
        let (count, items, last) = page.items(conn, dialect).await.unwrap();
        let items = serde_json::from_str(&format!("[{items}]")).unwrap();
        (count, items, last)
    }

    /// A page reads back as exactly the subjects stored, whatever their labels hold and whether
    /// they carry a detail or not.
    #[tokio::test]
    async fn a_page_reads_back_as_the_subjects_stored() {
        let store = crate::store::for_test().await;
        let dialect = store.dialect();
        let mut conn = store.pool().acquire().await.unwrap();
        let item = |id: &str, label: &str, detail: Value| SubjectItem {
            id: id.to_owned(),
            label: label.to_owned(),
            detail,
        };
        let stored = [
            item("s_1", "Ann \"Nan\" O'Neil \\ 100%", Value::Null),
            item(
                "s_2",
                "Zoë\tand\nnext — 東京 \u{1F600} \u{1}",
                json!({"before": "2026-01-01", "n": [1, 2.5, -3], "deep": {"x": null,
                       "big": 12_345_678_901_234_567_i64}}),
            ),
            item("s_3", "", json!("a string")),
        ];
        for s in &stored {
            sqlx::query(
                "INSERT INTO plan_subjects (plan_id, effect_id, subject_id, label, detail)
                 VALUES ('plan_1', 'eff_1', $1, $2, $3)",
            )
            .bind(&s.id)
            .bind(&s.label)
            .bind((!s.detail.is_null()).then(|| s.detail.to_string()))
            .execute(&mut *conn)
            .await
            .unwrap();
        }
        let first = page(&mut conn, dialect, "").await;
        assert_eq!(first, (2, stored[..2].to_vec(), Some("s_2".to_owned())));
        let second = page(&mut conn, dialect, "s_2").await;
        assert_eq!(second, (1, stored[2..].to_vec(), Some("s_3".to_owned())));
        assert_eq!(page(&mut conn, dialect, "s_3").await, (0, vec![], None));
    }
}
