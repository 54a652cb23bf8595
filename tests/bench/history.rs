//! Each run's figures kept in the repository: `docs/benchmarks.tsv` holds every measured row of
//! every full run (date, commit, bar, value), `docs/benchmarks.md` each run's report. A row shows
//! its ratio to the last run that measured it, since absolute figures move between machines.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::table::Row;

pub struct History {
    figures: PathBuf,
    reports: PathBuf,
}

impl History {
    pub fn in_docs(workspace: &Path) -> History {
        History {
            figures: workspace.join("docs/benchmarks.tsv"),
            reports: workspace.join("docs/benchmarks.md"),
        }
    }

    /// The last value of each bar in earlier runs.
    fn last_values(&self) -> HashMap<String, f64> {
        let text = std::fs::read_to_string(&self.figures).unwrap_or_default();
        text.lines()
            .filter_map(|line| {
                let mut cells = line.split('\t').skip(2);
                let bar = cells.next()?;
                let value: f64 = cells.next()?.parse().ok()?;
                Some((bar.to_owned(), value))
            })
            .collect()
    }

    /// Notes on each measured row its ratio to the last run's value of the same bar.
    pub fn compare(&self, rows: &mut [Row]) {
        let last = self.last_values();
        for row in rows {
            let (Some(value), Some(before)) = (row.value(), last.get(&row.bar)) else {
                continue;
            };
            if *before > 0.0 {
                let note = format!("{:.2}× the last run", value / before);
                row.notes.push(note);
            }
        }
    }

    /// Appends this run: its rows' values to the figures, its report to the reports.
    pub fn append(
        &self,
        rows: &[Row],
        date: &str,
        commit: &str,
        report: &str,
    ) -> std::io::Result<()> {
        let mut figures = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.figures)?;
        for row in rows {
            if let Some(value) = row.value() {
                writeln!(
                    figures,
                    "{date}\t{commit}\t{}\t{value}",
                    row.bar.replace('\t', " ")
                )?;
            }
        }
        let mut reports = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.reports)?;
        writeln!(reports, "\n{}", report.replacen("# ", "## ", 1))
    }
}

/// The machine a run measured: processor model, cores and kernel.
pub fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|l| l.split_once(':'))
        .map_or("unknown processor", |(_, m)| m.trim());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("{model}, {cores} cores, Linux {}", kernel.trim())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Summary;
    use crate::table::Unit;

    #[test]
    fn a_second_run_is_compared_with_the_first() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("docs")).unwrap();
        let history = History::in_docs(dir.path());
        let row = |value| Row::new("polls", Unit::Rate).measured(Summary::single(value));
        let unmeasured = Row::new("desktop", Unit::Bytes).skipped("no display");
        history
            .append(&[row(4_000.0), unmeasured.clone()], "d1", "c1", "# one\n")
            .unwrap();
        let mut second = [row(5_000.0), unmeasured];
        history.compare(&mut second);
        assert_eq!(second[0].notes, ["1.25× the last run"]);
        assert!(second[1].notes.is_empty());
        history.append(&second, "d2", "c2", "# two\n").unwrap();
        let reports = std::fs::read_to_string(dir.path().join("docs/benchmarks.md")).unwrap();
        assert_eq!(reports, "\n## one\n\n\n## two\n\n");
        let mut third = [row(5_000.0)];
        history.compare(&mut third);
        assert_eq!(third[0].notes, ["1.00× the last run"]);
    }
}
