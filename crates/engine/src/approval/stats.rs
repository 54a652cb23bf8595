//! Decision analytics over a window (`GET /v1/stats`, `countersign-gateway stats`): read from
//! the decisions and the plans they settled, in one snapshot.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use countersign_proto::stats::{
    ApproverStats, CapabilityStats, DayStats, DecisionTally, ReadingTime, Stats,
};
use serde_json::Value;

use crate::{ids, ApiResult, Store};

/// The longest window asked for: a year.
pub const MAX_DAYS: i64 = 366;

/// One person's decision, with the plan it was on.
struct Decided {
    plan_id: String,
    capability_id: String,
    approver_id: String,
    display_name: String,
    approve: bool,
    standing: bool,
    /// From the plan's creation to this decision.
    seconds: f64,
    at: DateTime<Utc>,
    reading: f64,
}

/// The numbers of the window from `since` to now.
pub async fn window(store: &Store, since: DateTime<Utc>) -> ApiResult<Stats> {
    let until = ids::now();
    let reading = ReadingTime::DOCUMENTED;
    let mut tx = store.snapshot().await?;
    type Row = (
        String,
        String,
        String,
        String,
        String,
        Option<String>,
        String,
        String,
        String,
    );
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT d.plan_id, p.capability_id, d.approver_id, a.display_name, d.decision,
                d.standing_id, d.decided_at, p.created_at, p.preview
         FROM decisions d JOIN plans p ON p.id = d.plan_id JOIN approvers a ON a.id = d.approver_id
         WHERE d.decided_at >= $1 AND d.withdrawn_at IS NULL
         ORDER BY d.decided_at, d.id",
    )
    .bind(ids::to_text(since))
    .fetch_all(&mut *tx)
    .await?;
    let expired: Vec<(String, i64)> = sqlx::query_as(
        "SELECT capability_id, COUNT(*) FROM plans
         WHERE status = 'expired' AND expires_at >= $1 AND expires_at <= $2
           AND NOT EXISTS (SELECT 1 FROM decisions d WHERE d.plan_id = plans.id
                           AND d.withdrawn_at IS NULL)
         GROUP BY capability_id",
    )
    .bind(ids::to_text(since))
    .bind(ids::to_text(until))
    .fetch_all(&mut *tx)
    .await?;
    tx.rollback().await?;
    let mut decided = Vec::with_capacity(rows.len());
    for (
        plan_id,
        capability_id,
        approver_id,
        display_name,
        decision,
        standing,
        at,
        created,
        preview,
    ) in rows
    {
        let (at, created) = (ids::from_text(&at)?, ids::from_text(&created)?);
        let preview: Value = serde_json::from_str(&preview)?;
        let effects = preview["effects"].as_array().map_or(0, Vec::len);
        decided.push(Decided {
            plan_id,
            capability_id,
            approver_id,
            display_name,
            approve: decision == "approve",
            standing: standing.is_some(),
            seconds: (at - created).num_milliseconds().max(0) as f64 / 1000.0,
            at,
            reading: reading.of(effects),
        });
    }
    Ok(Stats {
        since,
        until,
        reading,
        capabilities: capabilities(&decided, &expired),
        approvers: approvers(&decided),
        days: days(&decided, since, until),
    })
}

/// What a window may be written as: [`parse_window`]'s language, for the API's description.
pub const WINDOW_PATTERN: &str =
    "^((36[0-6]|3[0-5][0-9]|[12][0-9]{2}|[1-9][0-9]?)d|[1-9][0-9]{0,2}h|[1-9][0-9]{0,3}m)$";

/// `7d`, `24h`, `90m`: a window's length, as [`WINDOW_PATTERN`] writes it: 1 to 366 days, 999
/// hours or 9,999 minutes, with no leading zero.
pub fn parse_window(text: &str) -> Result<Duration, String> {
    let refused = || {
        format!("{text:?} is not a window: 1 to 366 days, 999 hours or 9999 minutes (7d, 24h, 90m)")
    };
    let Some(unit) = text.chars().last() else {
        return Err(refused());
    };
    let number = &text[..text.len() - unit.len_utf8()];
    if number.is_empty() || number.starts_with('0') || !number.bytes().all(|b| b.is_ascii_digit()) {
        return Err(refused());
    }
    let n: i64 = number.parse().map_err(|_| refused())?;
    match unit {
        'd' if n <= MAX_DAYS => Ok(Duration::days(n)),
        'h' if n <= 999 => Ok(Duration::hours(n)),
        'm' if n <= 9999 => Ok(Duration::minutes(n)),
        _ => Err(refused()),
    }
}

/// Each plan's settling decision by people: the rejection, or the last approval.
fn settled(decided: &[Decided]) -> BTreeMap<&str, &Decided> {
    let mut plans: BTreeMap<&str, &Decided> = BTreeMap::new();
    for d in decided.iter().filter(|d| !d.standing) {
        match plans.get(d.plan_id.as_str()) {
            Some(settling) if !settling.approve => {}
            _ => {
                plans.insert(&d.plan_id, d);
            }
        }
    }
    plans
}

fn capabilities(decided: &[Decided], expired: &[(String, i64)]) -> Vec<CapabilityStats> {
    let mut by: BTreeMap<&str, Vec<&Decided>> = BTreeMap::new();
    for d in settled(decided).into_values() {
        by.entry(&d.capability_id).or_default().push(d);
    }
    for (capability, _) in expired {
        by.entry(capability).or_default();
    }
    by.into_iter()
        .map(|(capability, plans)| CapabilityStats {
            capability_id: capability.to_owned(),
            tally: tally(&plans),
            expired_waiting: expired
                .iter()
                .find(|(c, _)| c == capability)
                .map_or(0, |(_, n)| *n as u64),
        })
        .collect()
}

fn approvers(decided: &[Decided]) -> Vec<ApproverStats> {
    let mut by: BTreeMap<&str, Vec<&Decided>> = BTreeMap::new();
    for d in decided {
        by.entry(&d.approver_id).or_default().push(d);
    }
    by.into_iter()
        .map(|(approver, all)| {
            let (standing, people): (Vec<&Decided>, Vec<&Decided>) =
                all.iter().partition(|d| d.standing);
            ApproverStats {
                approver_id: approver.to_owned(),
                display_name: all[0].display_name.clone(),
                tally: tally(&people),
                standing: standing.len() as u64,
            }
        })
        .collect()
}

fn tally(decisions: &[&Decided]) -> DecisionTally {
    let times: Vec<f64> = decisions.iter().map(|d| d.seconds).collect();
    let approved = decisions.iter().filter(|d| d.approve).count() as u64;
    DecisionTally {
        decided: decisions.len() as u64,
        approved,
        rejected: decisions.len() as u64 - approved,
        median_seconds: quantile(&times, 0.5),
        p90_seconds: quantile(&times, 0.9),
        faster_than_reading: decisions
            .iter()
            .filter(|d| d.approve && d.seconds < d.reading)
            .count() as u64,
    }
}

fn days(decided: &[Decided], since: DateTime<Utc>, until: DateTime<Utc>) -> Vec<DayStats> {
    let mut by: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut day = since.date_naive();
    while day <= until.date_naive() {
        by.insert(day.to_string(), Vec::new());
        day = day.succ_opt().unwrap_or(day);
        if by.len() as i64 > MAX_DAYS {
            break;
        }
    }
    for d in settled(decided).into_values() {
        by.entry(d.at.date_naive().to_string())
            .or_default()
            .push(d.seconds);
    }
    by.into_iter()
        .map(|(day, times)| DayStats {
            day,
            decided: times.len() as u64,
            median_seconds: quantile(&times, 0.5),
        })
        .collect()
}

/// The `q` quantile of `values` (nearest rank); `None` for none.
fn quantile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_nearest_rank() {
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(quantile(&[4.0], 0.9), Some(4.0));
        assert_eq!(quantile(&[5.0, 1.0, 3.0, 2.0, 4.0], 0.5), Some(3.0));
        let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&hundred, 0.9), Some(90.0));
    }

    #[test]
    fn windows_read_as_days_hours_or_minutes_within_a_year() {
        assert_eq!(parse_window("7d"), Ok(Duration::days(7)));
        assert_eq!(parse_window("24h"), Ok(Duration::hours(24)));
        assert_eq!(parse_window("90m"), Ok(Duration::minutes(90)));
        assert_eq!(parse_window("366d"), Ok(Duration::days(366)));
        assert_eq!(parse_window("9999m"), Ok(Duration::minutes(9999)));
        for bad in [
            "", "d", "7", "7w", "-1d", "0m", "07d", "367d", "1000h", "10000m", "1.5d", "\u{80}",
            "7\u{80}", "\u{80}d",
        ] {
            assert!(parse_window(bad).is_err(), "{bad}");
        }
    }
}
