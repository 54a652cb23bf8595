//! `countersign-gateway stats`: the numbers of `GET /v1/stats` as a table for a terminal.

use std::fmt::Write as _;

use countersign_proto::stats::Stats;

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
    let _ = writeln!(
        out,
        "{:<34} {:>7} {:>9} {:>8} {:>8} {:>8} {:>5}",
        "capability", "decided", "approved", "median", "p90", "expired", "fast"
    );
    for c in &stats.capabilities {
        let _ = writeln!(
            out,
            "{:<34} {:>7} {:>9} {:>8} {:>8} {:>8} {:>5}",
            c.capability_id,
            c.decided,
            rate(c.approved, c.decided),
            duration(c.median_seconds),
            duration(c.p90_seconds),
            c.expired_waiting,
            c.faster_than_reading
        );
    }
    let _ = writeln!(
        out,
        "\n{:<34} {:>7} {:>9} {:>8} {:>8} {:>8} {:>5}",
        "approver", "decided", "approved", "median", "p90", "standing", "fast"
    );
    for a in &stats.approvers {
        let _ = writeln!(
            out,
            "{:<34} {:>7} {:>9} {:>8} {:>8} {:>8} {:>5}",
            format!("{} ({})", a.display_name, a.approver_id),
            a.decided,
            rate(a.approved, a.decided),
            duration(a.median_seconds),
            duration(a.p90_seconds),
            a.standing,
            a.faster_than_reading
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
