//! Standing approvals as the gateway serves them: a page of them, newest first, each with its
//! state, the plans it let run (its uses, each with the gateway's receipt) and the plans it
//! approved that have not run, read for the whole page in one query.

use std::collections::HashMap;

use countersign_proto::dsse::Envelope;
use countersign_proto::standing::{
    CoveredPlan, StandingApproval, StandingList, StandingState, StandingStatement, StandingUse,
};
use countersign_proto::Credits;
use sqlx::AnyConnection;

use crate::approval::receipts::Signer;
use crate::{ids, queue::cursors, ApiError, ApiResult};

/// The listing's page cursors (`cursors`).
pub const CURSOR: &str = "s_";

/// The most standing approvals one page holds, and what a page holds unless asked for fewer.
pub const MAX_PAGE: u32 = 100;

/// The most uses, and covered plans, listed with each standing approval.
const LISTED: i64 = 100;

/// One stored row, before its state is worked out.
type Row = (
    String,
    String,
    String,
    i64,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    String,
    Option<String>,
    Option<String>,
    String,
);

const SELECT: &str = "SELECT s.id, s.statement, s.envelope, s.plans_used, s.credits_used,
        s.revoked_at, s.revoked_by, s.suspended, a.display_name, a.revoked_at, k.revoked_at,
        s.created_at
    FROM standing_approvals s JOIN approvers a ON a.id = s.approver_id
    LEFT JOIN approver_keys k ON k.id = s.key_id";

/// Standing approval `id`, with its uses and the plans it covers.
pub async fn load(
    conn: &mut AnyConnection,
    signer: Signer<'_>,
    id: &str,
) -> ApiResult<Option<StandingApproval>> {
    let row: Option<Row> = sqlx::query_as(&format!("{SELECT} WHERE s.id = $1"))
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?;
    let rows: Vec<Row> = row.into_iter().collect();
    Ok(with_uses(conn, signer, rows).await?.pop())
}

/// A page of the gateway's standing approvals, newest first, from `cursor` (a previous page's
/// `next_cursor`), at most `limit` of them.
pub async fn page(
    conn: &mut AnyConnection,
    signer: Signer<'_>,
    cursor: Option<&str>,
    limit: u32,
) -> ApiResult<StandingList> {
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(ApiError::validation(
            "/limit",
            format!("A page holds 1 to {MAX_PAGE} standing approvals."),
        ));
    }
    let order = "ORDER BY s.created_at DESC, s.id DESC";
    let fetch = i64::from(limit) + 1;
    let mut rows: Vec<Row> = match cursor {
        None => {
            sqlx::query_as(&format!("{SELECT} {order} LIMIT $1"))
                .bind(fetch)
                .fetch_all(&mut *conn)
                .await?
        }
        Some(cursor) => {
            let (created_at, id) = cursors::decode(CURSOR, cursor).ok_or_else(|| {
                ApiError::validation("/cursor", "The cursor is not one this gateway gave.")
            })?;
            sqlx::query_as(&format!(
                "{SELECT} WHERE s.created_at < $1 OR (s.created_at = $1 AND s.id < $2)
                 {order} LIMIT $3"
            ))
            .bind(&created_at)
            .bind(&id)
            .bind(fetch)
            .fetch_all(&mut *conn)
            .await?
        }
    };
    let next_cursor = match rows.len() > limit as usize {
        true => {
            rows.truncate(limit as usize);
            rows.last()
                .map(|row| cursors::encode(CURSOR, &row.11, &row.0))
        }
        false => None,
    };
    Ok(StandingList {
        items: with_uses(conn, signer, rows).await?,
        next_cursor,
    })
}

/// A use or a covered plan of some standing approval of a page.
type UseRow = (
    String,
    String,
    String,
    Option<String>,
    String,
    Option<i64>,
    Option<String>,
);

async fn with_uses(
    conn: &mut AnyConnection,
    signer: Signer<'_>,
    rows: Vec<Row>,
) -> ApiResult<Vec<StandingApproval>> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    // Every use and covered plan of the page in one query, the newest `LISTED` of each kind
    // per standing approval.
    let ids: Vec<String> = (1..=rows.len()).map(|i| format!("${i}")).collect();
    let query = format!(
        "SELECT standing_id, plan_id, plan_digest, standing_credits, decided_at, standing_use,
                standing_used_at
         FROM (SELECT d.standing_id, d.plan_id, p.plan_digest, d.standing_credits, d.decided_at,
                      d.standing_use, d.standing_used_at,
                      ROW_NUMBER() OVER (PARTITION BY d.standing_id, d.standing_use IS NULL
                                         ORDER BY d.id DESC) AS n
               FROM decisions d JOIN plans p ON p.id = d.plan_id
               WHERE d.standing_id IN ({})
                 AND (d.standing_use IS NOT NULL
                      OR (d.withdrawn_at IS NULL
                          AND p.status IN ('pending_approval', 'approved')))) listed
         WHERE n <= {LISTED} ORDER BY standing_id, n",
        ids.join(", ")
    );
    let mut select = sqlx::query_as::<_, UseRow>(&query);
    for row in &rows {
        select = select.bind(&row.0);
    }
    let mut by_standing: HashMap<String, Vec<UseRow>> = HashMap::new();
    for found in select.fetch_all(&mut *conn).await? {
        by_standing.entry(found.0.clone()).or_default().push(found);
    }
    rows.into_iter()
        .map(|row| {
            let found = by_standing.remove(&row.0).unwrap_or_default();
            approval(signer, row, found)
        })
        .collect()
}

fn approval(signer: Signer<'_>, row: Row, found: Vec<UseRow>) -> ApiResult<StandingApproval> {
    let (id, statement, envelope, plans_used, credits_used, revoked_at, revoked_by, suspended) =
        (row.0, row.1, row.2, row.3, row.4, row.5, row.6, row.7);
    let (display_name, approver_revoked, key_revoked, created_at) = (row.8, row.9, row.10, row.11);
    let statement: StandingStatement = serde_json::from_str(&statement)?;
    let envelope: Envelope = serde_json::from_str(&envelope)?;
    let receipt = signer.standing(&envelope, &id, ids::from_text(&created_at)?)?;
    let (mut uses, mut covered) = (Vec::new(), Vec::new());
    for (_, plan_id, plan_digest, credits, decided_at, number, used_at) in found {
        match (number, used_at) {
            (Some(number), Some(used_at)) => {
                let number = u32::try_from(number).unwrap_or(0);
                let at = ids::from_text(&used_at)?;
                let receipt =
                    signer.standing_use(&envelope, (&id, number), (&plan_id, &plan_digest), at)?;
                uses.push(StandingUse {
                    number,
                    plan_id,
                    plan_digest,
                    credits: credits_of(credits.as_deref()),
                    at,
                    receipt,
                });
            }
            _ => covered.push(CoveredPlan {
                plan_id,
                plan_digest,
                at: ids::from_text(&decided_at)?,
            }),
        }
    }
    let plans_used = plans_used.max(0) as u32;
    let credits_used = credits_of(Some(&credits_used));
    let (state, state_reason) = if let Some(at) = revoked_at {
        let by = revoked_by.unwrap_or_else(|| "an admin".to_owned());
        (
            StandingState::Revoked,
            Some(format!("revoked by {by} at {at}")),
        )
    } else if approver_revoked.is_some() {
        (
            StandingState::Revoked,
            Some("its approver was revoked".to_owned()),
        )
    } else if key_revoked.is_some() {
        (
            StandingState::Revoked,
            Some("the key that signed it was revoked".to_owned()),
        )
    } else if let Some(why) = suspended {
        (StandingState::Suspended, Some(why))
    } else if statement.expires_at <= ids::now() {
        (StandingState::Expired, None)
    } else if plans_used >= statement.max_plans {
        (
            StandingState::UsedUp,
            Some(format!("all {plans_used} plans have run")),
        )
    } else if credits_used >= statement.max_cost_total && statement.max_cost_total > Credits::ZERO {
        (
            StandingState::UsedUp,
            Some(format!("all {credits_used} credits are used")),
        )
    } else {
        (StandingState::Active, None)
    };
    Ok(StandingApproval {
        standing_id: id,
        display_name,
        statement,
        envelope,
        receipt,
        plans_used,
        credits_used,
        state,
        state_reason,
        uses,
        covered,
    })
}

/// Credits as stored (decimal text), zero when absent or unreadable.
pub(super) fn credits_of(text: Option<&str>) -> Credits {
    text.and_then(|t| t.parse().ok()).unwrap_or(Credits::ZERO)
}
