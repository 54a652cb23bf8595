//! The shapes the OpenAPI description names that no wire type states alone: a dry run's two
//! answers, a wallet, and the refusals every operation may answer.

use countersign_proto::approvals::{Approvals, PlanStatus};
use countersign_proto::error::ErrorEnvelope;
use countersign_proto::plan::{InvalidPreview, Preview};
use utoipa::ToSchema;

/// A dry run's answer: the plan, or seed 000's `valid: false` with what to fix. A repeat with
/// the same idempotency key answers the stored plan with its `status` now. A plan standing
/// approvals approved as it was stored answers with its `status` and `approvals`
/// (`docs/standing.md`).
#[derive(serde::Serialize, ToSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub enum DryRunAnswer {
    Plan(Box<Preview>),
    Invalid(InvalidPreview),
    Standing(Box<StandingPlan>),
}

/// A plan approved as it was stored, by standing approvals.
#[derive(serde::Serialize, ToSchema)]
#[allow(dead_code)]
pub struct StandingPlan {
    #[serde(flatten)]
    plan: Preview,
    status: PlanStatus,
    approvals: Approvals,
}

/// A refusal: seed 002's error envelope, its status matching its code (PROTOCOL section 1).
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)]
pub enum Refused {
    #[response(status = "4XX")]
    Refused(ErrorEnvelope),
}

/// A refusal of a request that writes, which may also meet a store that takes no writes now
/// (`storage_unavailable`, 503).
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)]
pub enum WriteRefused {
    #[response(status = "4XX")]
    Refused(ErrorEnvelope),
    #[response(status = 503)]
    Unavailable(ErrorEnvelope),
}

/// An agent's budget: `limit_credits`, `spent_credits`, `remaining_credits` (decimal strings).
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct Wallet {
    agent_id: String,
    limit_credits: countersign_proto::Credits,
    spent_credits: countersign_proto::Credits,
    remaining_credits: countersign_proto::Credits,
}
