//! The decisions standing on a plan, and how they meet what its policy requires: approved once
//! every rule is met by distinct people, rejected by any rejection standing.

use countersign_proto::approvals::{ApprovalEntry, Approvals, PlanStatus};
use countersign_proto::decision::Decision;
use sqlx::AnyConnection;

use crate::approval::requirement::{Approving, Tally};
use crate::plan::stored_plan::StoredPlan;
use crate::{ids, ApiResult};

/// The approvals of `plan` as its record shows them.
pub async fn of(conn: &mut AnyConnection, plan: &StoredPlan) -> ApiResult<Approvals> {
    Ok(decisions(conn, plan).await?.0)
}

/// Where a plan's decisions leave it: rejected by any rejection standing, approved once its
/// rules are met by distinct people ([`Tally`]), else waiting.
pub async fn standing(conn: &mut AnyConnection, plan: &StoredPlan) -> ApiResult<PlanStatus> {
    Ok(decisions(conn, plan).await?.1)
}

/// The decisions standing on a plan: each as the record lists it, and who approved with their
/// teams.
pub struct Standing {
    pub received: Vec<ApprovalEntry>,
    pub approving: Vec<Approving>,
    pub rejected: bool,
    /// The store's ids of these decisions, in the same order.
    pub ids: Vec<i64>,
}

/// The decisions standing on `plan_id`, in the order they were made.
pub async fn standing_decisions(conn: &mut AnyConnection, plan_id: &str) -> ApiResult<Standing> {
    // A decision's row comes once per team of its person (once with no team).
    type Row = (
        i64,
        String,
        String,
        String,
        String,
        String,
        Option<String>,
        Option<String>,
        Option<String>,
    );
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT d.id, d.approver_id, a.display_name, d.decision, d.decided_at,
                    COALESCE(a.user_id, a.id), t.team, d.standing_id, d.reason
             FROM decisions d JOIN approvers a ON a.id = d.approver_id
             LEFT JOIN team_members t ON t.person = COALESCE(a.user_id, a.id)
             WHERE d.plan_id = $1 AND d.withdrawn_at IS NULL ORDER BY d.id, t.team",
    )
    .bind(plan_id)
    .fetch_all(&mut *conn)
    .await?;
    let mut standing = Standing {
        received: Vec::new(),
        approving: Vec::new(),
        rejected: false,
        ids: Vec::new(),
    };
    let mut last = None;
    for (id, approver_id, display_name, decision, at, person, team, standing_id, reason) in rows {
        if last == Some(id) {
            if let (Some(team), Some(latest)) = (team, standing.approving.last_mut()) {
                latest.teams.push(team);
            }
            continue;
        }
        last = Some(id);
        standing.ids.push(id);
        let decision = if decision == "reject" {
            standing.rejected = true;
            Decision::Reject
        } else {
            standing.approving.push(Approving {
                approver_id: approver_id.clone(),
                person,
                teams: team.into_iter().collect(),
                standing: standing_id.is_some(),
            });
            Decision::Approve
        };
        standing.received.push(ApprovalEntry {
            approver_id,
            display_name,
            decision,
            at: ids::from_text(&at)?,
            reason,
            standing_id,
        });
    }
    Ok(standing)
}

/// The decisions standing on `plan` and where they leave it ([`standing`]), read at once: a
/// decision needs both, and each read is a round trip to a PostgreSQL server.
pub async fn decisions(
    conn: &mut AnyConnection,
    plan: &StoredPlan,
) -> ApiResult<(Approvals, PlanStatus)> {
    let (approvals, status, _) = tallied(conn, plan).await?;
    Ok((approvals, status))
}

/// As [`decisions`], with the store's ids of the decisions standing, which an execution's trace
/// names.
pub async fn tallied(
    conn: &mut AnyConnection,
    plan: &StoredPlan,
) -> ApiResult<(Approvals, PlanStatus, Vec<i64>)> {
    let standing = standing_decisions(conn, &plan.preview.plan_id).await?;
    let tally = Tally::new(&plan.requirement, plan.preview.created_at, ids::now());
    let (rules, met) = tally.count(&standing.approving);
    let status = if standing.rejected || !plan.requirement.denied.is_empty() {
        PlanStatus::Rejected
    } else if met {
        PlanStatus::Approved
    } else {
        PlanStatus::PendingApproval
    };
    let approvals = Approvals {
        required: plan.requirement.required(),
        received: standing.received,
        rules,
        denied: plan.requirement.denied.clone(),
        requested_by: plan.amendment.as_ref().map(|a| a.approver_id.clone()),
    };
    Ok((approvals, status, standing.ids))
}
