//! A new plan covered by standing approvals: in the transaction that stores it, a standing
//! approval that covers it and still has room counts as its signer's approval. Nothing of it is
//! used up here: a preview reserves nothing (seed 004), and the use is taken when the plan runs
//! ([`super::uses`]).

use chrono::{DateTime, Utc};
use countersign_proto::approvals::PlanStatus;
use countersign_proto::plan::Preview;
use countersign_proto::standing::StandingStatement;
use countersign_proto::Credits;

use super::list::credits_of;
use crate::accounts::callers::Approver;
use crate::approval::requirement::{Approving, Tally};
use crate::plan::plans::StoredPlan;
use crate::store::Tx;
use crate::{
    approval::approvals, approval::eligibility, approval::teams, ids, plan::plans, ApiResult,
    Engine,
};

/// A candidate's row: the standing approval, its use so far, and its signer.
type CandidateRow = (
    String,
    String,
    String,
    String,
    String,
    String,
    Option<String>,
);

/// A standing approval that covers the new plan and has room for it.
struct Candidate {
    id: String,
    statement: StandingStatement,
    envelope: String,
    signer: Approver,
}

/// The standing approvals that cover a new plan and have room for it, found before it is
/// stored: a plan none covers is stored with its place in the queue at once.
pub struct Candidates {
    found: Vec<Candidate>,
    now: DateTime<Utc>,
}

impl Candidates {
    pub fn is_empty(&self) -> bool {
        self.found.is_empty()
    }
}

/// The standing approvals that cover the new plan `preview` (waiting for people) as `tx` stands.
pub async fn candidates(tx: &mut Tx, engine: &Engine, preview: &Preview) -> ApiResult<Candidates> {
    let now = ids::now();
    let none = || Candidates {
        found: Vec::new(),
        now,
    };
    if !preview.executable {
        return Ok(none());
    }
    // Only the candidates: not revoked, suspended or used up, their signer and key active, and
    // not expired (to the second; the exact time is checked below).
    let expired_before =
        ids::to_text(chrono::SubsecRound::trunc_subsecs(now, 0) - chrono::Duration::seconds(1));
    let rows: Vec<CandidateRow> = sqlx::query_as(
        "SELECT s.id, s.statement, s.envelope, s.credits_used, a.id, a.display_name, a.user_id
         FROM standing_approvals s JOIN approvers a ON a.id = s.approver_id
         JOIN approver_keys k ON k.id = s.key_id
         WHERE s.agent_id = $1 AND s.capability_id = $2 AND s.revoked_at IS NULL
           AND s.suspended IS NULL AND s.plans_used < s.max_plans AND s.expires_at > $3
           AND a.revoked_at IS NULL AND k.revoked_at IS NULL
         ORDER BY s.created_at, s.id",
    )
    .bind(&preview.caller.agent_id)
    .bind(&preview.capability_id)
    .bind(&expired_before)
    .fetch_all(&mut **tx)
    .await?;
    if rows.is_empty() {
        return Ok(none());
    }
    let cost = preview.estimated_cost.amount_max;
    let found: Vec<Candidate> = rows
        .into_iter()
        .filter_map(|row| {
            let statement: StandingStatement = serde_json::from_str(&row.1).ok()?;
            covers(
                &statement,
                engine,
                preview,
                (credits_of(Some(&row.3)), cost),
                now,
            )
            .then_some(Candidate {
                id: row.0,
                statement,
                envelope: row.2,
                signer: Approver {
                    id: row.4,
                    display_name: row.5,
                    user_id: row.6,
                },
            })
        })
        .collect();
    Ok(Candidates { found, now })
}

/// Counts `candidates` of the new plan `preview` (stored in `tx`, waiting) as their signers'
/// approvals, where a rule of the plan takes one and at most one for the plan
/// (`requirement::Tally`). Returns the plan's status after them.
pub async fn apply(
    tx: &mut Tx,
    preview: &Preview,
    candidates: Candidates,
) -> ApiResult<PlanStatus> {
    let waiting = PlanStatus::PendingApproval;
    let Candidates { found, now } = candidates;
    if found.is_empty() {
        return Ok(waiting);
    }
    let Some(plan) = plans::load(tx, &preview.plan_id).await? else {
        return Ok(waiting);
    };
    let Some(seated) = seat(tx, &plan, found, now).await? else {
        return Ok(waiting);
    };
    record(tx, &seated, preview, now).await?;
    let status = approvals::standing(tx, &plan).await?;
    if status != waiting {
        plans::set_status(tx, &preview.plan_id, status).await?;
    }
    Ok(status)
}

/// Whether `statement` covers `preview` now and has room for its cost beside `used` credits.
fn covers(
    statement: &StandingStatement,
    engine: &Engine,
    preview: &Preview,
    (used, cost): (Credits, Credits),
    now: DateTime<Utc>,
) -> bool {
    statement.expires_at > now
        && statement
            .refuses(preview, engine.policy.coverable())
            .is_none()
        && used.value() + cost.value() <= statement.max_cost_total.value()
}

/// The first candidate whose approval counts for the plan: its signer may decide it (not the
/// person it acts for, not a grantee, not whoever wrote its request) and it fills a seat a rule
/// lets a standing approval fill. One at most: a plan's other seats are people who decide it.
async fn seat(
    tx: &mut Tx,
    plan: &StoredPlan,
    candidates: Vec<Candidate>,
    now: DateTime<Utc>,
) -> ApiResult<Option<Candidate>> {
    let tally = Tally::new(&plan.requirement, plan.preview.created_at, now);
    for candidate in candidates {
        if eligibility::personal(tx, &candidate.signer, plan)
            .await?
            .is_some()
            || eligibility::wrote_request(tx, &candidate.signer, plan)
                .await?
                .is_some()
        {
            continue;
        }
        let profile = teams::profile(tx, &candidate.signer).await?;
        let seated = Approving {
            approver_id: candidate.signer.id.clone(),
            person: profile.person,
            teams: profile.teams,
            standing: true,
        };
        if tally.would_count(&[], seated) {
            return Ok(Some(candidate));
        }
    }
    Ok(None)
}

/// The standing approval's approval of the plan: a decision row of its signer, under the standing
/// approval's envelope. Its use (number, credits) is written when the plan runs.
async fn record(
    tx: &mut Tx,
    candidate: &Candidate,
    preview: &Preview,
    now: DateTime<Utc>,
) -> ApiResult<()> {
    sqlx::query(
        "INSERT INTO decisions (plan_id, approver_id, key_id, decision, reason, nonce, envelope,
         decided_at, standing_id)
         VALUES ($1, $2, $3, 'approve', $4, $5, $6, $7, $8)",
    )
    .bind(&preview.plan_id)
    .bind(&candidate.signer.id)
    .bind(&candidate.statement.key_id)
    .bind(format!(
        "Standing approval {}: {}",
        candidate.id, candidate.statement.reason
    ))
    .bind(format!("{}:{}", candidate.id, preview.plan_id))
    .bind(&candidate.envelope)
    .bind(ids::to_text(now))
    .bind(&candidate.id)
    .execute(&mut **tx)
    .await?;
    Ok(())
}
