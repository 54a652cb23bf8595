//! Risk flags of PROTOCOL section 3, computed from a plan alone.

use rust_decimal::Decimal;

use crate::approvals::RiskFlag;
use crate::describe::CostClass;
use crate::plan::{EffectKind, Preview};

/// A subject count from which an effect is bulk.
pub const BULK_SUBJECTS: u64 = 25;

/// `amount_max` from which a plan is high-cost, unless configured otherwise.
pub fn default_high_cost_threshold() -> Decimal {
    Decimal::TEN
}

/// The flags a plan carries, in the order of [`RiskFlag`], each once.
pub fn risk_flags(plan: &Preview, high_cost: Decimal) -> Vec<RiskFlag> {
    let effects = &plan.effects;
    let mut flags = Vec::new();
    let mut flag = |on: bool, f: RiskFlag| {
        if on {
            flags.push(f)
        }
    };
    // A deletion or an archival is irreversible whatever the effect claims.
    flag(
        effects
            .iter()
            .any(|e| !e.reversible || matches!(e.kind, EffectKind::Delete | EffectKind::Archive)),
        RiskFlag::Irreversible,
    );
    flag(
        effects
            .iter()
            .any(|e| matches!(e.kind, EffectKind::Grant | EffectKind::Revoke)),
        RiskFlag::AccessChange,
    );
    // Money moves when any effect carries a cost, not only when the plan as a whole does.
    flag(
        effects
            .iter()
            .any(|e| e.kind == EffectKind::Charge || e.cost.is_some())
            || plan.billing.cost_class == CostClass::ExternalPassthrough,
        RiskFlag::Money,
    );
    flag(effects.iter().any(|e| e.external), RiskFlag::External);
    flag(
        effects.iter().any(|e| {
            e.subjects
                .as_ref()
                .is_some_and(|s| s.total >= BULK_SUBJECTS)
        }),
        RiskFlag::Bulk,
    );
    flag(!plan.assumptions.is_empty(), RiskFlag::Uncertain);
    flag(
        plan.estimated_cost.amount_max.value() >= high_cost,
        RiskFlag::HighCost,
    );
    flag(!plan.executable, RiskFlag::Blocked);
    flags
}
