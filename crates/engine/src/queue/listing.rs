//! The approval queue kept ready to serve. Every change a console should see goes through
//! [`publish`] (or [`mark_stale_readers`]), which rewrites the plan's stored summary and logs an
//! event; a listing then reads stored summaries, and a conditional poll needs only the revision.

use countersign_proto::approvals::{PlanRecord, PlanStatus, PlanSummary};
use sqlx::AnyConnection;

use super::events::EventKind;
use super::{cursors, events};
use crate::plan::plans::StoredPlan;
use crate::registry::Registry;
use crate::store::Dialect;
use crate::{ids, plan::plans, telemetry, ApiError, ApiResult, Store};

/// The queue's page cursors (`cursors`).
const QUEUE_CURSOR: &str = "q_";

/// The plans in the queue: waiting for people, and not blocked (a blocked plan has no summary).
/// The predicate of the `plans_queue` index, which SQLite uses only when a query states it.
const QUEUED: &str = "status IN ('pending_approval', 'stale') AND summary IS NOT NULL";

/// Plans in one answer of `GET /v1/approvals` when the caller sets no `limit`, and the most it may
/// ask for.
pub const MAX_PAGE: u32 = 10_000;

/// Rewrites what approvers see of `plan_id` as of now, and logs the change for the event streams.
/// A blocked plan (`executable: false`) can never be approved, so it reaches no person: it gets
/// no summary, so no place in the listing, and no event, so no notification (PROTOCOL section 2).
/// Its agent reads it and refreshes it; a console opens it by id.
pub async fn publish(
    conn: &mut AnyConnection,
    registry: &'static Registry,
    plan_id: &str,
    kind: EventKind,
) -> ApiResult<()> {
    let plan = changed(conn, plan_id).await?;
    publish_plan(conn, registry, plan, plans::Known::default(), kind).await
}

/// A plan this transaction is changing, which must exist.
async fn changed(conn: &mut AnyConnection, plan_id: &str) -> ApiResult<StoredPlan> {
    Ok(plans::load(conn, plan_id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("plan {plan_id} vanished while it changed"))?)
}

/// As [`publish`], for a plan the caller holds as it now stands in this transaction, with what it
/// has just read of it (a decision publishes what it already read). The plan's status is stored
/// with its summary, in one write.
pub async fn publish_plan(
    conn: &mut AnyConnection,
    registry: &'static Registry,
    plan: StoredPlan,
    known: plans::Known,
    kind: EventKind,
) -> ApiResult<()> {
    let plan_id = plan.preview.plan_id.clone();
    let status = plan.status;
    if kind == EventKind::Created {
        telemetry::plan_created(&plan.preview.capability_id);
    }
    if !plan.preview.executable {
        plans::set_status(conn, &plan_id, status).await?;
        return Ok(());
    }
    list(conn, registry, plan, known).await?;
    events::record(conn, &plan_id, kind).await?;
    Ok(())
}

/// Stores `plan`'s summary and keeps the read index to it: a closed plan leaves it, one listed
/// open for the first time (or again after it was marked stale) enters it.
async fn list(
    conn: &mut AnyConnection,
    registry: &'static Registry,
    plan: StoredPlan,
    known: plans::Known,
) -> ApiResult<()> {
    let (plan_id, status) = (plan.preview.plan_id.clone(), plan.status);
    let reads = plan.preview.read_revisions.clone();
    let listed = store_summary(conn, registry, plan, known).await?;
    if plans::is_closed(status) {
        forget_reads(conn, &plan_id).await?;
    } else if listed.now_open && !listed.indexed_before {
        plans::index_reads(conn, &plan_id, &reads).await?;
    }
    Ok(())
}

/// Plan `plan`'s record as it stands in this transaction, and what the queue lists of it.
pub async fn summarize(
    conn: &mut AnyConnection,
    registry: &'static Registry,
    plan: StoredPlan,
    known: plans::Known,
) -> ApiResult<(PlanRecord, PlanSummary)> {
    let subjects_total = plans::subjects_total(&plan);
    let record = plans::record_with(conn, registry, plan, known).await?;
    let summary = plans::summary(registry, &record, subjects_total);
    Ok((record, summary))
}

/// As [`publish`] of a new plan stored with its `summary` in the same write (one write of its
/// row, not an insert and a rewrite): what is left to say is that it is there.
pub async fn publish_stored(conn: &mut AnyConnection, summary: &PlanSummary) -> ApiResult<()> {
    telemetry::plan_created(&summary.capability_id);
    events::record(conn, &summary.plan_id, EventKind::Created).await?;
    Ok(())
}

/// A finished plan can no longer go stale: its reads leave the index writes consult, which so
/// stays as large as the live queue, not as the gateway's history.
async fn forget_reads(conn: &mut AnyConnection, plan_id: &str) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM plan_reads WHERE plan_id = $1")
        .bind(plan_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Where a plan stands in the read index (`plans::index_reads`) as its summary is stored.
struct Listed {
    /// Listed open before and not marked stale since: its reads are in the index already (a
    /// plan that closed, then opened again, left it).
    indexed_before: bool,
    /// Listed now, open and not stale: its reads belong in the index.
    now_open: bool,
}

/// Stores the status of `plan` (not blocked) and the summary approvers list it by.
async fn store_summary(
    conn: &mut AnyConnection,
    registry: &'static Registry,
    plan: StoredPlan,
    known: plans::Known,
) -> ApiResult<Listed> {
    let (to, created) = (plan.status, plan.preview.created_at);
    let capability = plan.preview.capability_id.clone();
    let mut known = known;
    if known.moved.is_none()
        && registry
            .get(&capability)
            .is_some_and(|c| c.reads_remotely())
    {
        // A server of the capability's own is not read inside a write (plan/ahead.rs): the
        // summary keeps the status the plan has; its record, read apart, says what moved.
        known.moved = Some(Vec::new());
    }
    let (record, summary) = summarize(conn, registry, plan, known).await?;
    // The status it was last published with comes back from the same statement (migration 0020).
    let from: Option<String> = sqlx::query_scalar(
        "UPDATE plans SET previous_status = counted_status, counted_status = $2, summary = $1,
                          status = $2
         WHERE id = $3 RETURNING previous_status",
    )
    .bind(serde_json::to_string(&summary)?)
    .bind(plans::status_text(to))
    .bind(&record.plan.plan_id)
    .fetch_one(&mut *conn)
    .await?;
    let from = from.as_deref().map(plans::parse_status);
    telemetry::plan_changed(&capability, from, to, created);
    Ok(Listed {
        indexed_before: from
            .is_some_and(|from| from != PlanStatus::Stale && !plans::is_closed(from)),
        now_open: summary.status != PlanStatus::Stale,
    })
}

/// The open plans listed for people that read `$1`, from the read index to the plans and never
/// the other way: SQLite, which keeps no statistics here, walked every approved plan to test it
/// against the index's list (`CROSS JOIN` fixes its order; PostgreSQL plans as it likes).
const STALE_READERS: &str = "SELECT p.id, p.summary FROM plan_reads r CROSS JOIN plans p
     WHERE r.resource = $1 AND p.id = r.plan_id
       AND p.summary IS NOT NULL AND p.status IN ('pending_approval', 'approved')
     ORDER BY r.plan_id";

/// A write moved `resource`: every pending or approved plan that read it is stale now. Only the
/// status in their summaries changes, so it is set in place rather than re-derived plan by plan.
pub async fn mark_stale_readers(conn: &mut AnyConnection, resource: &str) -> ApiResult<()> {
    let readers: Vec<(String, String)> = sqlx::query_as(STALE_READERS)
        .bind(resource)
        .fetch_all(&mut *conn)
        .await?;
    for (plan_id, summary) in readers {
        let mut summary: PlanSummary = serde_json::from_str(&summary)?;
        // A stale plan stays stale: what it read no longer concerns any write.
        forget_reads(conn, &plan_id).await?;
        if summary.status == PlanStatus::Stale {
            continue;
        }
        telemetry::plan_changed(
            &summary.capability_id,
            Some(summary.status),
            PlanStatus::Stale,
            summary.created_at,
        );
        summary.status = PlanStatus::Stale;
        sqlx::query("UPDATE plans SET summary = $1, counted_status = 'stale' WHERE id = $2")
            .bind(serde_json::to_string(&summary)?)
            .bind(&plan_id)
            .execute(&mut *conn)
            .await?;
        events::record(conn, &plan_id, EventKind::Updated).await?;
    }
    Ok(())
}

/// One answer of the listing, serialised from the stored summaries without parsing them.
pub struct Page {
    pub revision: i64,
    pub body: String,
}

/// Pending and stale plans, soonest expiry first, after `cursor`, at most `limit` of them.
/// Read in one transaction: one snapshot, so the revision names exactly this state.
pub async fn page(store: &Store, limit: u32, cursor: Option<&str>) -> ApiResult<Page> {
    let (after_expiry, after_id) = match cursor {
        Some(cursor) => cursors::decode(QUEUE_CURSOR, cursor).ok_or_else(|| {
            ApiError::validation("/cursor", "The cursor is not one of the queue's.")
        })?,
        None => (String::new(), String::new()),
    };
    let mut conn = store.snapshot().await?;
    let revision = events::revision(&mut conn).await?;
    let sql = page_sql(store.dialect());
    let (count, items, last_expiry, last_id): (i64, String, Option<String>, Option<String>) =
        sqlx::query_as(&sql)
            .bind(&after_expiry)
            .bind(&after_id)
            .bind(i64::from(limit))
            .fetch_one(&mut *conn)
            .await?;
    let next_cursor = match (last_expiry, last_id) {
        (Some(expires_at), Some(id)) if count >= i64::from(limit) => {
            let more: Option<i64> = sqlx::query_scalar(&format!(
                "SELECT 1 FROM plans {}
                 WHERE {QUEUED} AND (expires_at, id) > ($1, $2)
                 LIMIT 1",
                queue_index(store.dialect())
            ))
            .bind(&expires_at)
            .bind(&id)
            .fetch_optional(&mut *conn)
            .await?;
            more.map(|_| cursors::encode(QUEUE_CURSOR, &expires_at, &id))
        }
        _ => None,
    };
    conn.commit().await?;
    let mut body = String::with_capacity(items.len() + 128);
    body.push_str("{\"items\":[");
    body.push_str(&items);
    body.push_str("],\"revision\":\"");
    body.push_str(&revision.to_string());
    body.push('"');
    if let Some(cursor) = next_cursor {
        body.push_str(",\"next_cursor\":\"");
        body.push_str(&cursor);
        body.push('"');
    }
    body.push('}');
    Ok(Page { revision, body })
}

/// One page of summaries, joined into one value by the database.
fn page_sql(dialect: Dialect) -> String {
    let join = match dialect {
        Dialect::Sqlite => "group_concat(summary, ',' ORDER BY expires_at, id)",
        Dialect::Postgres => "string_agg(summary, ',' ORDER BY expires_at, id)",
    };
    format!(
        "WITH page AS MATERIALIZED (
             SELECT summary, expires_at, id FROM plans {}
             WHERE {QUEUED} AND (expires_at, id) > ($1, $2)
             ORDER BY expires_at, id LIMIT $3)
         SELECT count(*), coalesce({join}, ''),
                (SELECT expires_at FROM page ORDER BY expires_at DESC, id DESC LIMIT 1),
                (SELECT id FROM page ORDER BY expires_at DESC, id DESC LIMIT 1)
         FROM page",
        queue_index(dialect)
    )
}

/// The queue's own index, named to SQLite: without statistics it prefers `plans_by_status`, reads
/// every plan row and sorts them. PostgreSQL keeps statistics and takes no hints.
fn queue_index(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Sqlite => "INDEXED BY plans_queue",
        Dialect::Postgres => "",
    }
}

/// Moves plans whose time ran out to `expired`, so they leave the queue with an event and the
/// queue revision (and so every ETag) changes with them, never with the clock alone.
pub async fn sweep(store: &Store, registry: &'static Registry) -> ApiResult<usize> {
    let now = ids::to_text(ids::now());
    let due: Vec<String> = sqlx::query_scalar(
        "SELECT id FROM plans WHERE status IN ('pending_approval', 'approved', 'stale')
         AND expires_at < $1 ORDER BY expires_at, id",
    )
    .bind(&now)
    .fetch_all(store.pool())
    .await?;
    if due.is_empty() {
        return Ok(0);
    }
    let mut w = store.write().await?;
    let mut expired = 0;
    for plan_id in due {
        let moved = sqlx::query(
            "UPDATE plans SET status = 'expired'
             WHERE id = $1 AND status IN ('pending_approval', 'approved', 'stale')",
        )
        .bind(&plan_id)
        .execute(&mut *w.tx)
        .await?
        .rows_affected();
        if moved == 0 {
            continue;
        }
        expired += 1;
        // One plan that cannot be read back (a damaged row) must not keep the others in the queue.
        if let Err(e) = publish(&mut w.tx, registry, &plan_id, EventKind::Updated).await {
            tracing::warn!(plan_id, error = ?e, "an expired plan's summary could not be rewritten");
        }
    }
    w.commit().await?;
    Ok(expired)
}

/// Summaries for plans stored before the queue kept them (an older database).
pub async fn backfill(store: &Store, registry: &'static Registry) -> ApiResult<()> {
    let missing: Vec<String> = sqlx::query_scalar(
        "SELECT id FROM plans WHERE summary IS NULL
         AND (status IN ('pending_approval', 'stale') OR id IN (SELECT plan_id FROM plan_events))",
    )
    .fetch_all(store.pool())
    .await?;
    if missing.is_empty() {
        return Ok(());
    }
    let mut w = store.write().await?;
    for plan_id in missing {
        let plan = changed(&mut w.tx, &plan_id).await?;
        // A blocked plan has no summary: it reaches no person.
        if plan.preview.executable {
            list(&mut w.tx, registry, plan, plans::Known::default()).await?;
        }
    }
    w.commit().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On SQLite, whatever the PostgreSQL pass sets: the order is SQLite's planner's choice.
    #[tokio::test]
    async fn a_write_looks_up_its_stale_readers_from_the_read_index() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&format!("sqlite://{}", dir.path().join("s.db").display()))
            .await
            .unwrap();
        let mut conn = store.pool().acquire().await.unwrap();
        let steps: Vec<(i64, i64, i64, String)> =
            sqlx::query_as(&format!("EXPLAIN QUERY PLAN {STALE_READERS}"))
                .bind("storage/q_1")
                .fetch_all(&mut *conn)
                .await
                .unwrap();
        let steps: Vec<&str> = steps.iter().map(|s| s.3.as_str()).collect();
        assert!(
            steps[0].starts_with("SEARCH r USING PRIMARY KEY (resource=?)"),
            "{steps:?}"
        );
        assert!(
            steps[1..].iter().all(|s| s.starts_with("SEARCH p USING")),
            "each plan by its id, none scanned: {steps:?}"
        );
    }
}
