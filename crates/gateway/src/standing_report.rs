//! `countersign-gateway standing list`: each standing approval on a line of its own.

use std::fmt::Write as _;

use countersign_proto::standing::{StandingList, StandingState};

/// One line per standing approval of a page: id, signer, state, use, expiry; then what it
/// allows. The first page says when there are none.
pub fn list(list: &StandingList, first: bool) -> String {
    if list.items.is_empty() {
        return match first {
            true => "No standing approvals.\n".to_owned(),
            false => String::new(),
        };
    }
    let mut out = String::new();
    for item in &list.items {
        let s = &item.statement;
        let state = match (item.state, &item.state_reason) {
            (StandingState::Active, _) => "active".to_owned(),
            (state, Some(why)) => format!(
                "{} ({why})",
                serde_json::to_value(state)
                    .unwrap_or_default()
                    .as_str()
                    .unwrap_or("")
            ),
            (state, None) => serde_json::to_value(state)
                .unwrap_or_default()
                .as_str()
                .unwrap_or("")
                .to_owned(),
        };
        let _ = writeln!(
            out,
            "{}  {}  {state}  {}/{} plans run  {}/{} credits  until {}",
            item.standing_id,
            item.display_name,
            item.plans_used,
            s.max_plans,
            item.credits_used,
            s.max_cost_total,
            s.expires_at.format("%Y-%m-%d %H:%MZ"),
        );
        let _ = writeln!(out, "    {}", s.allows());
    }
    out
}
