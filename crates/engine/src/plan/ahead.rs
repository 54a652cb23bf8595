//! A plan's reads checked ahead of the store's writer, for a capability whose state lives on a
//! server of its own (an MCP upstream: [`Definition::reads_remotely`]). Each of its reads is a
//! round trip that may take seconds; held inside the write, they would stall every other write
//! of the gateway behind one slow server, and protect nothing, since that server's state is not
//! the store's to hold still. So a decision and an execution read them first; everything that
//! is the store's (status, approvals, expiry) is still checked inside the write.
//!
//! [`Definition::reads_remotely`]: countersign_pack::Definition::reads_remotely

use countersign_proto::approvals::{MovedRevision, PlanStatus};

use crate::plan::{plans, rederive::rederive};
use crate::{ApiResult, Engine};

/// What the plan's reads are now, read ahead.
pub struct Ahead {
    /// The read revisions that moved, or why they could not be read (kept for the check that
    /// needs them: an answer the store already holds, a replay, does not wait on the server).
    pub moved: ApiResult<Vec<MovedRevision>>,
    /// The plan evaluated again (when asked for, and nothing moved): drifted or blocked, or
    /// still the plan that was approved.
    pub rederived: ApiResult<()>,
}

/// Plan `plan_id`'s reads, read now, if its capability reads remotely; `None` otherwise (or
/// when there is no such plan, it is not `owner`'s, or it is closed: the write's own checks say
/// so, as they say it of a plan that is not there), and evaluated again too when `evaluate`
/// (for an execution: only an approved or stale plan is read for then).
pub async fn read(
    engine: &Engine,
    plan_id: &str,
    owner: Option<&str>,
    evaluate: bool,
) -> ApiResult<Option<Ahead>> {
    // A gateway with no such capability pays nothing for this, not even the plan's load.
    if !engine.registry.reads_remotely() {
        return Ok(None);
    }
    let mut tx = engine.store.snapshot().await?;
    let Some(plan) = plans::load(&mut tx, plan_id).await? else {
        return Ok(None);
    };
    if owner.is_some_and(|agent| agent != plan.agent_id) {
        return Ok(None);
    }
    // Only a plan that may still run (or, for a decision, still be decided) is read for.
    let open = match evaluate {
        true => matches!(plan.status, PlanStatus::Approved | PlanStatus::Stale),
        false => matches!(
            plan.status,
            PlanStatus::PendingApproval | PlanStatus::Approved | PlanStatus::Stale
        ),
    };
    if !open {
        return Ok(None);
    }
    let Some(capability) = engine.registry.get(&plan.preview.capability_id) else {
        return Ok(None);
    };
    if !capability.reads_remotely() {
        return Ok(None);
    }
    let moved = plans::moved(&mut tx, engine.registry, &plan.preview.read_revisions, None).await;
    let rederived = if evaluate && moved.as_ref().is_ok_and(Vec::is_empty) {
        rederive(&mut tx, capability, &plan.preview).await.map(drop)
    } else {
        Ok(())
    };
    Ok(Some(Ahead { moved, rederived }))
}
