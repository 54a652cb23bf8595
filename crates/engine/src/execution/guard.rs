//! `wallet.agent_budget.guard.check`: seed 000's budget guard. It has no preview and no effect;
//! invoking it answers whether an estimated cost fits the calling agent's remaining budget. The
//! wallets are the engine's, so the engine ships it, as a pack of one.

use countersign_pack::{
    build, parse, Applied, BoxFuture, Definition, EffectProfile, Execution, Handle, Kind, Pack,
    Planned, WorldCapability,
};
use countersign_proto::describe::{CostClass, Describe, DryRunMode, Preflight};
use countersign_proto::guard::{GuardParams, GUARD_CAPABILITY};
use countersign_proto::{Credits, ErrorCode};
use serde_json::{json, Value};
use sqlx::AnyConnection;

use crate::{execution::wallet, ApiError, ApiResult};

const ID: &str = GUARD_CAPABILITY;
const TITLE: &str = "Check an agent's budget";

/// Nothing: the guard only reads the wallet.
const EFFECTS: EffectProfile = EffectProfile {
    kinds: &[],
    irreversible: false,
    external: false,
};

fn describe() -> Describe {
    build::describe(
        ID,
        TITLE,
        build::params(
            &["estimated_cost_credits"],
            json!({
                // The largest amount an exact decimal holds (rust_decimal: 28 digits).
                "estimated_cost_credits": {"type": "number", "minimum": 0, "maximum": 1e28}
            }),
        ),
        DryRunMode::NotApplicable,
        (Preflight::None, CostClass::Free),
        1,
    )
}

fn plan(_: &GuardParams) -> Planned {
    build::nothing(Credits::cents(0))
}

async fn apply(
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

struct WalletGuard;

impl Definition for WalletGuard {
    fn id(&self) -> &'static str {
        ID
    }
    fn title(&self) -> &'static str {
        TITLE
    }
    fn describe(&self) -> Describe {
        describe()
    }
    fn effects(&self) -> EffectProfile {
        EFFECTS
    }
    fn plan<'a>(
        &'a self,
        _handle: &'a mut Handle<'_>,
        params: &'a Value,
    ) -> BoxFuture<'a, ApiResult<Planned>> {
        Box::pin(async move { Ok(plan(&parse(params)?)) })
    }
}

impl WorldCapability for WalletGuard {
    fn apply<'a>(
        &'a self,
        handle: &'a mut Handle<'_>,
        params: &'a Value,
        _planned: &'a Planned,
        execution: Execution<'a>,
    ) -> BoxFuture<'a, ApiResult<Applied>> {
        Box::pin(async move { apply(handle.conn(), &parse(params)?, execution).await })
    }
}

/// The engine's own capability: the budget guard over the wallets it keeps.
pub fn pack() -> Pack {
    Pack::new("engine", vec![Kind::World(Box::new(WalletGuard))])
}
