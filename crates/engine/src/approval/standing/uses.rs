//! A standing approval's use, taken as a plan it approved runs: in the invoke's write
//! transaction, one of its plans and the plan's credits, by an update that holds only while it
//! has room (so two plans racing for its last use, on one instance or two, cannot both run). A
//! standing approval that has no room left by then, or has expired or been revoked, no longer
//! approves the plan: it waits for people again, and does not run.

use countersign_proto::plan::Preview;
use countersign_proto::standing::StandingStatement;
use countersign_proto::ErrorCode;
use serde_json::json;
use sqlx::Acquire as _;

use super::list::credits_of;
use crate::queue::events::EventKind;
use crate::registry::Registry;
use crate::store::Tx;
use crate::{approval::approvals, ids, plan::plans, queue, ApiError, ApiResult};

/// A standing approval's approval of the plan that no longer holds.
struct Lapsed {
    decision: i64,
    standing_id: String,
    signer: String,
    why: String,
}

/// The standing approvals' approvals of a plan about to run, whose uses are not yet taken.
type Row = (i64, String, String, String, String);

/// Takes the use of each standing approval that approved `plan`, which is about to run. When one
/// can no longer give it, nothing is taken, its approval is withdrawn, the plan goes back to
/// where its remaining decisions leave it (with an event), and the refusal to answer the invoke
/// with is returned: the caller commits that, and runs nothing.
pub async fn take(
    tx: &mut Tx,
    registry: &'static Registry,
    plan: &Preview,
) -> ApiResult<Option<ApiError>> {
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT d.id, d.standing_id, s.statement, s.credits_used, a.display_name
         FROM decisions d JOIN standing_approvals s ON s.id = d.standing_id
         JOIN approvers a ON a.id = d.approver_id
         WHERE d.plan_id = $1 AND d.withdrawn_at IS NULL AND d.standing_use IS NULL
           AND d.decision = 'approve'",
    )
    .bind(&plan.plan_id)
    .fetch_all(&mut **tx)
    .await?;
    if rows.is_empty() {
        return Ok(None);
    }
    let now = ids::now();
    let cost = plan.estimated_cost.amount_max;
    let mut lapsed = Vec::new();
    let taken = rows.len();
    // A savepoint: when one use cannot be taken, the others taken before it are undone.
    let mut uses = tx.begin().await?;
    for (decision, standing_id, statement, credits_used, signer) in rows {
        let statement: StandingStatement = serde_json::from_str(&statement)?;
        let credits_used = credits_of(Some(&credits_used));
        let credits = credits_used.value() + cost.value();
        let why = if statement.expires_at <= now {
            Some(format!(
                "it expired at {}",
                ids::to_text(statement.expires_at)
            ))
        } else if credits > statement.max_cost_total.value() {
            Some(format!(
                "its {} credits in all would be passed",
                statement.max_cost_total
            ))
        } else {
            // The count's bound lives in the update itself: it holds whatever was read before.
            let number: Option<i64> = sqlx::query_scalar(
                "UPDATE standing_approvals SET plans_used = plans_used + 1, credits_used = $1
                 WHERE id = $2 AND plans_used < max_plans AND credits_used = $3
                   AND revoked_at IS NULL AND suspended IS NULL
                 RETURNING plans_used",
            )
            .bind(countersign_proto::Credits::new(credits).to_string())
            .bind(&standing_id)
            .bind(credits_used.to_string())
            .fetch_optional(&mut *uses)
            .await?;
            match number {
                Some(number) => {
                    sqlx::query(
                        "UPDATE decisions SET standing_use = $1, standing_credits = $2,
                                standing_used_at = $3
                         WHERE id = $4",
                    )
                    .bind(number)
                    .bind(cost.to_string())
                    .bind(ids::to_text(now))
                    .bind(decision)
                    .execute(&mut *uses)
                    .await?;
                    None
                }
                None => Some(no_room(&mut uses, &standing_id, &statement).await?),
            }
        };
        if let Some(why) = why {
            lapsed.push(Lapsed {
                decision,
                standing_id,
                signer,
                why,
            });
        }
    }
    if lapsed.is_empty() {
        uses.commit().await?;
        for _ in 0..taken {
            crate::telemetry::standing_used(&plan.capability_id);
        }
        return Ok(None);
    }
    uses.rollback().await?;
    Ok(Some(requeue(tx, registry, plan, lapsed).await?))
}

/// Why standing approval `id` gave no use: its plans have all run, or it was revoked or
/// suspended meanwhile.
async fn no_room(
    conn: &mut sqlx::AnyConnection,
    id: &str,
    statement: &StandingStatement,
) -> ApiResult<String> {
    let (revoked, suspended): (Option<String>, Option<String>) =
        sqlx::query_as("SELECT revoked_at, suspended FROM standing_approvals WHERE id = $1")
            .bind(id)
            .fetch_one(&mut *conn)
            .await?;
    Ok(match (revoked, suspended) {
        (Some(at), _) => format!("it was revoked at {at}"),
        (None, Some(why)) => format!("it is suspended: {why}"),
        (None, None) => format!("all {} of its plans have run", statement.max_plans),
    })
}

/// Withdraws the approvals that lapsed and puts the plan where its remaining decisions leave
/// it, with an event: the refusal of the invoke, naming each.
async fn requeue(
    tx: &mut Tx,
    registry: &'static Registry,
    plan: &Preview,
    lapsed: Vec<Lapsed>,
) -> ApiResult<ApiError> {
    let now = ids::to_text(ids::now());
    for gone in &lapsed {
        sqlx::query("UPDATE decisions SET withdrawn_at = $1 WHERE id = $2")
            .bind(&now)
            .bind(gone.decision)
            .execute(&mut **tx)
            .await?;
    }
    let stored = plans::load(tx, &plan.plan_id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("plan {} vanished", plan.plan_id))?;
    let status = approvals::standing(tx, &stored).await?;
    plans::set_status(tx, &plan.plan_id, status).await?;
    queue::publish(tx, registry, &plan.plan_id, EventKind::Updated).await?;
    let named: Vec<String> = lapsed
        .iter()
        .map(|l| {
            format!(
                "{}'s standing approval {} ({})",
                l.signer, l.standing_id, l.why
            )
        })
        .collect();
    Ok(ApiError::new(
        ErrorCode::ApprovalRequired,
        format!(
            "Plan {} was approved by {}, which no longer approves it: it waits for a person \
             again, and nothing of it ran.",
            plan.plan_id,
            named.join(" and ")
        ),
    )
    .with_details(json!({
        "standing": lapsed
            .iter()
            .map(|l| json!({"standing_id": l.standing_id, "why": l.why}))
            .collect::<Vec<_>>()
    })))
}
