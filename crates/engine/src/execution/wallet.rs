//! Agent wallets: a credit limit and what has been spent against it.

use countersign_proto::guard::GuardResult;
use countersign_proto::{Credits, ErrorCode};
use rust_decimal::Decimal;
use serde_json::json;
use sqlx::AnyConnection;

use crate::{ApiError, ApiResult};

/// Every new agent's limit: 50.00 credits.
fn default_limit() -> Credits {
    Credits::cents(5000)
}

pub struct Wallet {
    pub limit: Credits,
    pub spent: Credits,
}

impl Wallet {
    pub fn remaining(&self) -> Decimal {
        self.limit.value() - self.spent.value()
    }

    /// The guard's verdict on spending `amount` now.
    pub fn check(&self, amount: Decimal) -> GuardResult {
        let remaining = self.remaining();
        GuardResult {
            allowed: amount <= remaining,
            remaining_credits: Credits::new(
                remaining.max(Decimal::ZERO).round_dp(Credits::DECIMALS),
            ),
            limit_credits: self.limit,
        }
    }
}

fn parse(text: &str) -> anyhow::Result<Credits> {
    text.parse().map_err(anyhow::Error::from)
}

/// The agent's wallet; one that was never written holds the default limit and nothing spent.
pub async fn load(conn: &mut AnyConnection, agent_id: &str) -> ApiResult<Wallet> {
    let row: Option<(String, String)> =
        sqlx::query_as("SELECT limit_credits, spent_credits FROM wallets WHERE agent_id = $1")
            .bind(agent_id)
            .fetch_optional(conn)
            .await?;
    Ok(match row {
        Some((limit, spent)) => Wallet {
            limit: parse(&limit)?,
            spent: parse(&spent)?,
        },
        None => Wallet {
            limit: default_limit(),
            spent: Credits::cents(0),
        },
    })
}

/// Sets the agent's credit limit, keeping what it has spent.
pub async fn set_limit(
    conn: &mut AnyConnection,
    agent_id: &str,
    limit: Credits,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO wallets (agent_id, limit_credits, spent_credits) VALUES ($1, $2, '0.00')
         ON CONFLICT (agent_id) DO UPDATE SET limit_credits = excluded.limit_credits",
    )
    .bind(agent_id)
    .bind(limit.to_string())
    .execute(conn)
    .await?;
    Ok(())
}

/// Refuses with `budget_exceeded` unless `amount` fits the agent's remaining budget.
pub async fn ensure(conn: &mut AnyConnection, agent_id: &str, amount: Credits) -> ApiResult<()> {
    let wallet = load(conn, agent_id).await?;
    let verdict = wallet.check(amount.value());
    if verdict.allowed {
        return Ok(());
    }
    Err(ApiError::new(
        ErrorCode::BudgetExceeded,
        format!(
            "{amount} credits exceed the remaining budget of {} credits.",
            verdict.remaining_credits
        ),
    )
    .with_details(json!({ "guard": verdict })))
}

/// Adds `amount` to what the agent has spent.
pub async fn charge(conn: &mut AnyConnection, agent_id: &str, amount: Credits) -> ApiResult<()> {
    add_spent(conn, agent_id, amount.value()).await
}

/// Gives back `amount` of what the agent has spent: a charge for something that never happened
/// (a cancelled notification). Never below nothing spent.
pub async fn refund(conn: &mut AnyConnection, agent_id: &str, amount: Credits) -> ApiResult<()> {
    add_spent(conn, agent_id, -amount.value()).await
}

async fn add_spent(conn: &mut AnyConnection, agent_id: &str, amount: Decimal) -> ApiResult<()> {
    if amount.is_zero() {
        return Ok(());
    }
    let wallet = load(conn, agent_id).await?;
    let spent = Credits::new((wallet.spent.value() + amount).max(Decimal::ZERO));
    sqlx::query(
        "INSERT INTO wallets (agent_id, limit_credits, spent_credits) VALUES ($1, $2, $3)
         ON CONFLICT (agent_id) DO UPDATE SET spent_credits = excluded.spent_credits",
    )
    .bind(agent_id)
    .bind(wallet.limit.to_string())
    .bind(spent.to_string())
    .execute(conn)
    .await?;
    Ok(())
}
