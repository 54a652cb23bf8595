//! How wire values read in the views: an enum by its wire name, a time as RFC 3339, approvals
//! counted, and the one unit the console signs for.

use chrono::{DateTime, Utc};
use countersign_proto::approvals::Approvals;
use countersign_proto::decision::Decision;
use serde::Serialize;
use serde_json::Value;

/// The only unit the console signs for; anything else means the contract must be re-read (seed 000).
pub const CREDITS: &str = "credits";

pub(crate) fn approvals_count(approvals: &Approvals) -> u32 {
    approvals
        .received
        .iter()
        .filter(|a| a.decision == Decision::Approve)
        .count() as u32
}

pub(crate) fn wire<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

pub(crate) fn time(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}
