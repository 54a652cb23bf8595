//! A large plan's subject rows, written before its plan in short transactions of their own.
//!
//! Storing the 100,000 rows of a bulk removal takes the better part of a second. Inside the plan's
//! write transaction that second would hold the write lock, and every approver's decision would
//! wait behind every large preview (issue 23). Staged, the rows go in batches, and a decision
//! waits for one batch at most. They name a plan id that no plan holds yet, so no reader finds
//! them until the plan's own transaction stores the plan and deletes its staging marker. What a
//! failed or abandoned preview leaves behind is deleted at once, or by the sweep.

use std::sync::Arc;

use countersign_pack::Dialect;

use crate::plan::summaries::{self, SubjectSet, SubjectSummaries};
use crate::store::Store;
use crate::{ids, plan::plans, ApiResult};

/// Below this many rows a plan's subjects are written in the plan's own transaction: the extra
/// commits would cost more than they spare.
const STAGE_FROM: u64 = 2_000;

/// Rows per staging transaction: the longest a decision may wait for one, a few milliseconds.
fn batch(dialect: Dialect) -> usize {
    match dialect {
        Dialect::Sqlite => 500,
        Dialect::Postgres => 2_000,
    }
}

/// How old a marker must be before the sweep takes it for abandoned: well past the longest a
/// preview may wait for the writer after staging.
const ABANDONED_AFTER: chrono::Duration = chrono::Duration::minutes(10);

/// Subject rows stored under `plan_id` before the plan: its sets, to tell whether the plan that
/// is finally stored is the one they were written for.
pub struct Staged {
    pub plan_id: String,
    sets: Vec<SubjectSet>,
    /// Worked out with the staging, off the writer.
    pub summaries: SubjectSummaries,
}

impl Staged {
    /// Whether these are exactly the rows of `sets`: the same sets of the same effects, not a
    /// second evaluation's (which the writer makes when what the first one read has moved).
    pub fn holds(&self, sets: &[SubjectSet]) -> bool {
        self.sets.len() == sets.len()
            && self
                .sets
                .iter()
                .zip(sets)
                .all(|((a, x), (b, y))| a == b && Arc::ptr_eq(x, y))
    }
}

/// Writes `sets` (a plan's effects and their subjects) under a new plan id, when they are many;
/// `None` when the plan's own transaction may as well write them.
pub async fn stage(store: &Store, sets: Vec<SubjectSet>) -> ApiResult<Option<Staged>> {
    if summaries::rows_stored(&sets) < STAGE_FROM {
        return Ok(None);
    }
    // Sorting, hashing and counting the ids takes tens of milliseconds for 100,000 subjects (a
    // second for a million); on a runtime worker it would hold up the requests queued behind it,
    // decisions among them.
    let (sets, summaries) = tokio::task::spawn_blocking(move || {
        let summaries = SubjectSummaries::of(&sets);
        (sets, summaries)
    })
    .await
    .map_err(anyhow::Error::from)?;
    let staged = Staged {
        plan_id: plans::new_id(),
        summaries,
        sets,
    };
    let mut marker = store.write_apart().await?;
    sqlx::query("INSERT INTO subject_staging (plan_id, started_at) VALUES ($1, $2)")
        .bind(&staged.plan_id)
        .bind(ids::to_text(ids::now()))
        .execute(&mut *marker.tx)
        .await?;
    marker.commit().await?;
    let size = batch(store.dialect());
    for (effect_id, subjects) in staged.summaries.stored(&staged.sets) {
        for chunk in subjects.chunks(size) {
            let written = async {
                let mut batch = store.write_apart().await?;
                plans::insert_subjects(&mut batch.tx, &staged.plan_id, effect_id, chunk).await?;
                batch.commit().await
            };
            if let Err(e) = written.await {
                discard(store, &staged.plan_id).await;
                return Err(e.into());
            }
        }
    }
    Ok(Some(staged))
}

/// After the plan's write transaction: the staged rows stay if the plan stored under their id
/// (`stored`) took them, and go otherwise.
pub async fn settle(store: &Store, staged: Option<Staged>, stored: Option<&str>) {
    if let Some(staged) = staged {
        if stored != Some(staged.plan_id.as_str()) {
            discard(store, &staged.plan_id).await;
        }
    }
}

/// Deletes the staged rows of `plan_id`, batch by batch, then its marker; never the rows of a
/// plan that was stored. A failure leaves the marker for the sweep.
async fn discard(store: &Store, plan_id: &str) {
    if let Err(e) = try_discard(store, plan_id).await {
        tracing::warn!(error = ?e, plan_id, "staged subject rows stay for the sweep");
    }
}

async fn try_discard(store: &Store, plan_id: &str) -> Result<(), sqlx::Error> {
    let size = batch(store.dialect()) as i64;
    loop {
        let mut batch = store.write_apart().await?;
        let deleted = sqlx::query(
            "DELETE FROM plan_subjects WHERE (plan_id, effect_id, subject_id) IN
             (SELECT plan_id, effect_id, subject_id FROM plan_subjects WHERE plan_id = $1
              AND NOT EXISTS (SELECT 1 FROM plans WHERE id = $1) LIMIT $2)",
        )
        .bind(plan_id)
        .bind(size)
        .execute(&mut *batch.tx)
        .await?
        .rows_affected();
        if deleted < size as u64 {
            sqlx::query("DELETE FROM subject_staging WHERE plan_id = $1")
                .bind(plan_id)
                .execute(&mut *batch.tx)
                .await?;
            batch.commit().await?;
            return Ok(());
        }
        batch.commit().await?;
    }
}

/// Deletes the rows of one preview that staged them and never stored its plan (the gateway
/// stopped, or the request was dropped, half-way).
pub async fn sweep(store: &Store) -> Result<(), sqlx::Error> {
    let before = ids::to_text(ids::now() - ABANDONED_AFTER);
    let abandoned: Option<String> = sqlx::query_scalar(
        "SELECT plan_id FROM subject_staging WHERE started_at < $1 ORDER BY started_at LIMIT 1",
    )
    .bind(&before)
    .fetch_optional(store.pool())
    .await?;
    if let Some(plan_id) = abandoned {
        try_discard(store, &plan_id).await?;
    }
    Ok(())
}
