//! The budget guard, `wallet.agent_budget.guard.check` (seed 000), and paged subject sets.

use std::str::FromStr;

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Credits;

pub const GUARD_CAPABILITY: &str = "wallet.agent_budget.guard.check";

/// The guard's params. Seed 000's type trap: `estimated_cost_credits` is a JSON number here,
/// although every other credit amount travels as a decimal string.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct GuardParams {
    pub estimated_cost_credits: f64,
}

impl GuardParams {
    /// The amount as an exact decimal: the shortest text that reads back as the same number.
    pub fn estimated(&self) -> Option<Decimal> {
        Decimal::from_str(&self.estimated_cost_credits.to_string()).ok()
    }
}

/// `metadata.guard` of the guard's success envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GuardResult {
    pub allowed: bool,
    pub remaining_credits: Credits,
    pub limit_credits: Credits,
}

/// One page of an effect's subjects, ids ascending.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SubjectPage {
    pub items: Vec<SubjectItem>,
    pub next_cursor: Option<String>,
    pub total: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SubjectItem {
    pub id: String,
    pub label: String,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub detail: Value,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_guard_takes_a_number_and_refuses_a_string() {
        let params: GuardParams =
            serde_json::from_value(json!({"estimated_cost_credits": 0.37})).unwrap();
        assert_eq!(params.estimated().unwrap().to_string(), "0.37");
        assert!(
            serde_json::from_value::<GuardParams>(json!({"estimated_cost_credits": "0.37"}))
                .is_err()
        );
        assert!(serde_json::from_value::<GuardParams>(
            json!({"estimated_cost_credits": 1, "x": 1})
        )
        .is_err());
    }

    #[test]
    fn guard_amounts_are_decimal_strings() {
        let result = GuardResult {
            allowed: true,
            remaining_credits: "12.63".parse().unwrap(),
            limit_credits: "50.00".parse().unwrap(),
        };
        assert_eq!(
            serde_json::to_value(&result).unwrap(),
            json!({"allowed": true, "remaining_credits": "12.63", "limit_credits": "50.00"})
        );
    }
}
