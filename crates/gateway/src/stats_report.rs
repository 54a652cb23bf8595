//! `countersign-gateway stats`: the numbers of `GET /v1/stats` as a table for a terminal.

use std::fmt::Write as _;

use countersign_proto::stats::{DecisionTally, Stats};

/// The report, one line per capability and per approver, then one per day.
pub fn text(stats: &Stats) -> String {
    let mut out = String::new();
    let reading = stats.reading;
    let _ = writeln!(
        out,
        "Decisions from {} to {}.\n\"Fast\": approved sooner than the plan can be read \
         ({} s, and {} s per effect): a signal, not a verdict.\n",
        stats.since.format("%Y-%m-%d %H:%M"),
        stats.until.format("%Y-%m-%d %H:%M UTC"),
        reading.base_seconds,
        reading.per_effect_seconds
    );
    let header = ["decided", "approved", "median", "p90"];
    row(&mut out, "capability", header, "expired", "fast");
    for c in &stats.capabilities {
        let t = &c.tally;
        let expired = c.expired_waiting.to_string();
        row(
            &mut out,
            &c.capability_id,
            cells(t),
            &expired,
            &t.faster_than_reading.to_string(),
        );
    }
    out.push('\n');
    row(&mut out, "approver", header, "standing", "fast");
    for a in &stats.approvers {
        let t = &a.tally;
        let who = format!("{} ({})", a.display_name, a.approver_id);
        let standing = a.standing.to_string();
        row(
            &mut out,
            &who,
            cells(t),
            &standing,
            &t.faster_than_reading.to_string(),
        );
    }
    let _ = writeln!(out, "\n{:<12} {:>7} {:>8}", "day", "decided", "median");
    for d in &stats.days {
        let _ = writeln!(
            out,
            "{:<12} {:>7} {:>8}",
            d.day,
            d.decided,
            duration(d.median_seconds)
        );
    }
    out
}

fn cells(t: &DecisionTally) -> [String; 4] {
    [
        t.decided.to_string(),
        rate(t.approved, t.decided),
        duration(t.median_seconds),
        duration(t.p90_seconds),
    ]
}

fn row(out: &mut String, name: &str, cells: [impl std::fmt::Display; 4], extra: &str, fast: &str) {
    let [decided, approved, median, p90] = cells;
    let _ = writeln!(
        out,
        "{name:<34} {decided:>7} {approved:>9} {median:>8} {p90:>8} {extra:>8} {fast:>5}"
    );
}

fn rate(part: u64, whole: u64) -> String {
    match whole {
        0 => "-".to_owned(),
        _ => format!("{:.0} %", part as f64 * 100.0 / whole as f64),
    }
}

/// `42 s`, `7 min`, `3.5 h`, `2.0 d`, or `-` for none.
pub fn duration(seconds: Option<f64>) -> String {
    match seconds {
        None => "-".to_owned(),
        Some(s) if s < 60.0 => format!("{s:.0} s"),
        Some(s) if s < 3600.0 => format!("{:.0} min", s / 60.0),
        Some(s) if s < 86400.0 => format!("{:.1} h", s / 3600.0),
        Some(s) => format!("{:.1} d", s / 86400.0),
    }
}
