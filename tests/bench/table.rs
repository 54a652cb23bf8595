//! The one table `make bench` prints: bar, target, measured value, range, reference, result.

use crate::stats::Summary;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Unit {
    /// Requests or operations per second.
    Rate,
    /// Nanoseconds, shown in the unit that suits them.
    Time,
    /// Bytes, shown in MB (10^6 bytes, as the bars are written).
    Bytes,
    Count,
    /// A dimensionless factor, shown as `1.23×`.
    Ratio,
    /// A share (0.004 for 0.4 %), shown in percent.
    Percent,
}

impl Unit {
    pub fn format(self, value: f64) -> String {
        match self {
            Unit::Rate if value < 100.0 => format!("{value:.1}/s"),
            Unit::Rate => format!("{}/s", thousands(value.round() as u64)),
            Unit::Time => time(value),
            Unit::Bytes => format!("{} MB", decimal(value / 1e6, 1)),
            Unit::Count => thousands(value.round() as u64),
            Unit::Ratio => format!("{value:.2}×"),
            Unit::Percent => format!("{} %", decimal(value * 100.0, 2)),
        }
    }
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `value` with at most `decimals` decimals, trailing zeros dropped: 20 ms, 3.42 ms, 45.1 ms.
fn decimal(value: f64, decimals: usize) -> String {
    let text = format!("{value:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    }
}

fn time(ns: f64) -> String {
    if ns < 1e3 {
        format!("{} ns", decimal(ns, 0))
    } else if ns < 1e6 {
        format!("{} µs", decimal(ns / 1e3, 1))
    } else if ns < 1e7 {
        format!("{} ms", decimal(ns / 1e6, 2))
    } else if ns < 1e9 {
        format!("{} ms", decimal(ns / 1e6, 1))
    } else {
        format!("{} s", decimal(ns / 1e9, 2))
    }
}

/// A bar's target, checked against the row's value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Goal {
    AtLeast(f64),
    AtMost(f64),
    Below(f64),
}

impl Goal {
    fn met(self, value: f64) -> bool {
        match self {
            Goal::AtLeast(target) => value >= target,
            Goal::AtMost(target) => value <= target,
            Goal::Below(target) => value < target,
        }
    }

    fn format(self, unit: Unit) -> String {
        match self {
            Goal::AtLeast(target) => format!("≥ {}", unit.format(target)),
            Goal::AtMost(target) => format!("≤ {}", unit.format(target)),
            Goal::Below(target) => format!("< {}", unit.format(target)),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Measured(Summary),
    /// Why there is no number: no display, a failed run, not part of this run.
    Skipped(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail,
    /// Measured, but the bar has no target: shown for reference.
    Info,
    Skipped,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub bar: String,
    pub unit: Unit,
    pub goal: Option<Goal>,
    pub outcome: Outcome,
    pub reference: Option<String>,
    pub notes: Vec<String>,
}

impl Row {
    pub fn new(bar: impl Into<String>, unit: Unit) -> Row {
        Row {
            bar: bar.into(),
            unit,
            goal: None,
            outcome: Outcome::Skipped("not measured".to_owned()),
            reference: None,
            notes: Vec::new(),
        }
    }

    pub fn goal(mut self, goal: Goal) -> Row {
        self.goal = Some(goal);
        self
    }

    pub fn reference(mut self, text: impl Into<String>) -> Row {
        self.reference = Some(text.into());
        self
    }

    pub fn note(mut self, text: impl Into<String>) -> Row {
        self.notes.push(text.into());
        self
    }

    pub fn measured(mut self, summary: Summary) -> Row {
        self.outcome = Outcome::Measured(summary);
        self
    }

    pub fn skipped(mut self, reason: impl Into<String>) -> Row {
        self.outcome = Outcome::Skipped(reason.into());
        self
    }

    /// The summary, or the error that kept it from being measured.
    pub fn result(self, result: anyhow::Result<Summary>) -> Row {
        match result {
            Ok(summary) => self.measured(summary),
            Err(e) => self.skipped(format!("failed: {e:#}")),
        }
    }

    pub fn value(&self) -> Option<f64> {
        match &self.outcome {
            Outcome::Measured(summary) => Some(summary.value),
            Outcome::Skipped(_) => None,
        }
    }

    /// The value as this row prints it, for another row's reference column.
    pub fn shown(&self) -> Option<String> {
        self.value().map(|v| self.unit.format(v))
    }

    pub fn verdict(&self) -> Verdict {
        match (&self.outcome, self.goal) {
            // A bar that could not be measured is not met.
            (Outcome::Skipped(_), Some(_)) => Verdict::Fail,
            (Outcome::Skipped(_), None) => Verdict::Skipped,
            (Outcome::Measured(_), None) => Verdict::Info,
            (Outcome::Measured(s), Some(goal)) if goal.met(s.value) => Verdict::Pass,
            (Outcome::Measured(_), Some(_)) => Verdict::Fail,
        }
    }

    fn cells(&self) -> [String; 6] {
        let target = self.goal.map_or("—".to_owned(), |g| g.format(self.unit));
        let (value, range) = match &self.outcome {
            Outcome::Measured(s) => (
                self.unit.format(s.value),
                if s.min == s.max {
                    "—".to_owned()
                } else {
                    format!("{} – {}", self.unit.format(s.min), self.unit.format(s.max))
                },
            ),
            Outcome::Skipped(reason) => (format!("skipped: {}", clipped(reason)), "—".to_owned()),
        };
        let reference: Vec<&str> = self
            .reference
            .iter()
            .chain(&self.notes)
            .map(String::as_str)
            .collect();
        let reference = if reference.is_empty() {
            "—".to_owned()
        } else {
            reference.join("; ")
        };
        let result = match self.verdict() {
            Verdict::Pass => "pass",
            Verdict::Fail => "FAIL",
            Verdict::Info => "info",
            Verdict::Skipped => "skipped",
        };
        [
            self.bar.clone(),
            target,
            value,
            range,
            reference,
            result.to_owned(),
        ]
        .map(|cell| cell.replace('|', "\\|").replace('\n', " "))
    }
}

/// A reason short enough for a table cell; the full text of a failure is in the run's output.
fn clipped(reason: &str) -> String {
    const LIMIT: usize = 200;
    let line = reason.lines().next().unwrap_or_default();
    if line.chars().count() > LIMIT {
        format!("{}…", line.chars().take(LIMIT).collect::<String>())
    } else {
        line.to_owned()
    }
}

const HEADER: [&str; 6] = [
    "bar",
    "target",
    "median",
    "min – max",
    "reference",
    "result",
];

/// The rows as a Markdown table, columns padded so that it reads as well in a terminal.
pub fn render(rows: &[Row]) -> String {
    let cells: Vec<[String; 6]> = rows.iter().map(Row::cells).collect();
    let mut widths = HEADER.map(|h| h.chars().count());
    for row in &cells {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |row: &[String]| {
        let padded: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell}{}", " ".repeat(width - cell.chars().count())))
            .collect();
        format!("| {} |\n", padded.join(" | "))
    };
    let mut out = line(&HEADER.map(str::to_owned));
    out.push_str(&line(&widths.map(|w| "-".repeat(w))));
    for row in &cells {
        out.push_str(&line(row));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_print_in_the_unit_that_suits_them() {
        assert_eq!(Unit::Rate.format(12_345.4), "12,345/s");
        assert_eq!(Unit::Rate.format(42.25), "42.2/s");
        assert_eq!(Unit::Time.format(850.0), "850 ns");
        assert_eq!(Unit::Time.format(21_340.0), "21.3 µs");
        assert_eq!(Unit::Time.format(3_420_000.0), "3.42 ms");
        assert_eq!(Unit::Time.format(45_060_000.0), "45.1 ms");
        assert_eq!(Unit::Time.format(1_250_000_000.0), "1.25 s");
        assert_eq!(Unit::Time.format(20_000_000.0), "20 ms");
        assert_eq!(Unit::Time.format(3_400_000.0), "3.4 ms");
        assert_eq!(Unit::Bytes.format(96_300_000.0), "96.3 MB");
        assert_eq!(Unit::Bytes.format(250e6), "250 MB");
        assert_eq!(Unit::Count.format(1_000_000.0), "1,000,000");
        assert_eq!(Unit::Ratio.format(1.234), "1.23×");
        assert_eq!(Unit::Percent.format(0.0042), "0.42 %");
    }

    #[test]
    fn a_row_passes_fails_informs_or_says_why_it_was_skipped() {
        let polls = Row::new("304 polls/s", Unit::Rate).goal(Goal::AtLeast(5_000.0));
        let fast = polls.clone().measured(Summary {
            value: 6_000.0,
            min: 5_500.0,
            max: 6_100.0,
        });
        assert_eq!(fast.verdict(), Verdict::Pass);
        assert_eq!(
            polls.clone().measured(Summary::single(4_999.0)).verdict(),
            Verdict::Fail
        );
        let spread = Row::new("spread", Unit::Ratio).goal(Goal::Below(2.0));
        assert_eq!(
            spread.measured(Summary::single(2.0)).verdict(),
            Verdict::Fail
        );
        let floor = Row::new("sign", Unit::Time).measured(Summary::single(20_000.0));
        assert_eq!(floor.verdict(), Verdict::Info);
        let failed = polls.result(Err(anyhow::anyhow!("wrk | exited 1")));
        assert_eq!(failed.verdict(), Verdict::Fail);
        let unmeasured_info = Row::new("sign", Unit::Time).skipped("no criterion");
        assert_eq!(unmeasured_info.verdict(), Verdict::Skipped);

        let table = render(&[fast, failed]);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 4, "{table}");
        assert!(lines[0].starts_with("| bar "), "{table}");
        assert!(lines[2].contains("| ≥ 5,000/s |"), "{table}");
        assert!(lines[2].contains("| 6,000/s "), "{table}");
        assert!(lines[2].contains("5,500/s – 6,100/s"), "{table}");
        assert!(lines[2].ends_with("| pass   |"), "{table}");
        assert!(
            lines[3].contains("skipped: failed: wrk \\| exited 1"),
            "{table}"
        );
        assert!(lines[3].ends_with("| FAIL   |"), "{table}");
        let widths: Vec<usize> = lines.iter().map(|l| l.chars().count()).collect();
        assert!(widths.iter().all(|w| *w == widths[0]), "{table}");
    }
}
