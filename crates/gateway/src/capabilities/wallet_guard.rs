//! `wallet.agent_budget.guard.check`: seed 000's budget guard. It has no preview and no effect;
//! invoking it answers whether an estimated cost fits the calling agent's remaining budget.

use countersign_proto::describe::{CostClass, Describe, DryRunMode, Preflight};
use countersign_proto::guard::{GuardParams, GUARD_CAPABILITY};
use countersign_proto::{Credits, ErrorCode};
use serde_json::json;
use sqlx::AnyConnection;

use super::{world, Applied, EffectProfile, Execution, Planned};
use crate::error::{ApiError, ApiResult};
use crate::wallet;

pub const ID: &str = GUARD_CAPABILITY;
pub const TITLE: &str = "Check an agent's budget";

/// Nothing: the guard only reads the wallet.
pub const EFFECTS: EffectProfile = EffectProfile {
    kinds: &[],
    irreversible: false,
    external: false,
};

pub fn describe() -> Describe {
    world::describe(
        ID,
        TITLE,
        json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["estimated_cost_credits"],
            "properties": {
                "estimated_cost_credits": {"type": "number", "minimum": 0}
            }
        }),
        DryRunMode::NotApplicable,
        (Preflight::None, CostClass::Free),
        1,
    )
}

pub fn plan(_: &GuardParams) -> Planned {
    world::nothing(Credits::cents(0))
}

pub async fn apply(
    conn: &mut AnyConnection,
    p: &GuardParams,
    execution: Execution<'_>,
) -> ApiResult<Applied> {
    let amount = p.estimated().ok_or_else(|| {
        ApiError::validation(
            "/params/estimated_cost_credits",
            "The estimate is not a finite decimal amount.",
        )
    })?;
    let verdict = wallet::load(conn, execution.agent_id).await?.check(amount);
    if !verdict.allowed {
        return Err(ApiError::new(
            ErrorCode::BudgetExceeded,
            format!(
                "{amount} credits exceed the remaining budget of {} credits.",
                verdict.remaining_credits
            ),
        )
        .with_details(json!({ "guard": verdict })));
    }
    let mut metadata = serde_json::Map::new();
    metadata.insert("guard".to_owned(), json!(verdict));
    Ok(Applied {
        content: format!(
            "{amount} credits fit; {} of {} credits remain.",
            verdict.remaining_credits, verdict.limit_credits
        ),
        journal: vec![],
        metadata,
        ..Applied::default()
    })
}
