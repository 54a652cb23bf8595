//! Identifiers and the clock, as the protocol writes them.

use chrono::{DateTime, SubsecRound, Utc};
use rand::RngCore as _;

/// `prefix` followed by `bytes` random bytes in hex.
pub fn random_id(prefix: &str, bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    rand::thread_rng().fill_bytes(&mut buf);
    format!("{prefix}{}", hex::encode(buf))
}

/// Now, to the second, so times print as `2026-11-30T10:15:00Z`.
pub fn now() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(0)
}

pub fn to_text(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

pub fn from_text(text: &str) -> anyhow::Result<DateTime<Utc>> {
    Ok(DateTime::parse_from_rfc3339(text)?.with_timezone(&Utc))
}
