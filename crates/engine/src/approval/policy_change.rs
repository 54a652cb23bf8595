//! A new approval policy and the plans already open: the store records the policy in force, and
//! a gateway that starts with another one evaluates every open plan again, in one transaction,
//! each with a `plan.updated` event. A plan is never silently judged by rules it was not shown
//! with: its record names the policy's new rules, or why the new policy refuses it.

use countersign_proto::approvals::PlanStatus;

use crate::accounts::callers::Agent;
use crate::approval::policy::{self, Asking};
use crate::approval::requirement::Requirement;
use crate::queue::events::EventKind;
use crate::{approval::approvals, ids, plan::plans, queue, ApiResult, Engine};

/// Records `engine`'s policy as the store's; when another was in force, evaluates the open plans
/// again. Returns how many were.
pub async fn activate(engine: &Engine) -> ApiResult<usize> {
    let policy = &engine.policy;
    let mut w = engine.store.write().await?;
    let recorded: Option<String> =
        sqlx::query_scalar("SELECT digest FROM policy_state WHERE id = 1")
            .fetch_optional(&mut *w.tx)
            .await?;
    if recorded.as_deref() == Some(policy.digest()) {
        return Ok(0);
    }
    sqlx::query(
        "INSERT INTO policy_state (id, digest, origin, activated_at) VALUES (1, $1, $2, $3)
         ON CONFLICT (id) DO UPDATE SET digest = $1, origin = $2, activated_at = $3",
    )
    .bind(policy.digest())
    .bind(policy.origin())
    .bind(ids::to_text(ids::now()))
    .execute(&mut *w.tx)
    .await?;
    crate::approval::standing::suspend(&mut w.tx, policy).await?;
    // A store that never recorded one was under the built-in policy (or none, before policies).
    if recorded.is_none() && policy.is_builtin() {
        w.commit().await?;
        return Ok(0);
    }
    let open: Vec<String> = sqlx::query_scalar(
        "SELECT id FROM plans
         WHERE status IN ('pending_approval', 'approved', 'stale') AND expires_at > $1
           AND (policy_digest IS NULL OR policy_digest <> $2)
         ORDER BY id",
    )
    .bind(ids::to_text(ids::now()))
    .bind(policy.digest())
    .fetch_all(&mut *w.tx)
    .await?;
    for plan_id in &open {
        let Some(plan) = plans::load(&mut w.tx, plan_id).await? else {
            continue;
        };
        let Some(capability) = engine.registry.get(&plan.preview.capability_id) else {
            continue;
        };
        let agent = Agent {
            id: plan.agent_id.clone(),
            on_behalf_of: plan.preview.caller.on_behalf_of.clone(),
        };
        let asking = Asking::load(&mut w.tx, &agent, policy.reads()).await?;
        let requirement = match policy::requirement(policy, capability, &plan.preview, &asking) {
            Ok(new) => kept_promise(new, plan.preview.would_require_approval),
            Err(refused) => Requirement::refused(refused.message, asking.agent.team),
        };
        let escalates = requirement.next_escalation(plan.preview.created_at, Some(ids::now()));
        sqlx::query(
            "UPDATE plans SET rules = $1, required_approvals = $2, policy_digest = $3,
                    escalates_at = $4
             WHERE id = $5",
        )
        .bind(serde_json::to_string(&requirement)?)
        .bind(i64::from(requirement.required()))
        .bind(policy.digest())
        .bind(escalates.map(ids::to_text))
        .bind(plan_id)
        .execute(&mut *w.tx)
        .await?;
        let plan = plans::StoredPlan {
            requirement,
            ..plan
        };
        let waiting = matches!(
            plan.status,
            PlanStatus::PendingApproval | PlanStatus::Approved
        );
        if waiting || !plan.requirement.denied.is_empty() {
            let (_, status) = approvals::decisions(&mut w.tx, &plan).await?;
            if status != plan.status {
                plans::set_status(&mut w.tx, plan_id, status).await?;
            }
        }
        queue::publish(&mut w.tx, engine.registry, plan_id, EventKind::Updated).await?;
    }
    w.commit().await?;
    if !open.is_empty() {
        tracing::info!(
            plans = open.len(),
            policy = policy.origin(),
            "a new approval policy: the open plans were evaluated again"
        );
    }
    Ok(open.len())
}

/// The new rules of a plan, held to what its agent was told: a plan previewed as waiting for
/// people still waits for one at least, and one previewed as needing nobody is not sent to
/// people now (a new policy may still refuse it).
fn kept_promise(new: Requirement, previewed_waiting: bool) -> Requirement {
    match (previewed_waiting, new.rules.is_empty()) {
        (true, true) => Requirement {
            rules: Requirement::legacy(1).rules,
            ..new
        },
        (false, false) => Requirement {
            rules: Vec::new(),
            ..new
        },
        _ => new,
    }
}
