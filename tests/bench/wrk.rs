//! HTTP load with `wrk` and `load.lua`: the harness writes the requests, wrk sends them for a fixed
//! time, and the script's `done()` prints one `WRK_RESULT {…}` line that is parsed here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context as _};
use serde::Deserialize;

use crate::stats::Summary;
use crate::table::Row;

/// How `load.lua` walks its request file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Over and over: reads.
    Cycle,
    /// Each request at most once: decisions and invokes, which must not be replayed.
    Once,
    /// Over and over, sending the last answer's ETag as a polling console does.
    FollowEtag,
}

#[derive(Debug, Clone)]
pub struct Load {
    pub base_url: String,
    pub requests: PathBuf,
    pub order: Order,
    pub connections: u32,
    pub duration: Duration,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct WrkRun {
    pub duration_us: u64,
    pub requests: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
    pub connect_errors: u64,
    pub read_errors: u64,
    pub write_errors: u64,
    pub timeouts: u64,
    /// 1 when a `once` list ran out before the time did: the rate is then a lower bound.
    pub exhausted: u8,
    pub statuses: BTreeMap<String, u64>,
}

impl WrkRun {
    pub fn rate(&self) -> f64 {
        self.requests as f64 / (self.duration_us.max(1) as f64 / 1e6)
    }

    pub fn count(&self, status: u16) -> u64 {
        self.statuses.get(&status.to_string()).copied().unwrap_or(0)
    }

    /// Requests that did not get one of the `expected` statuses, and sockets that failed.
    pub fn failures(&self, expected: &[u16]) -> u64 {
        let unexpected: u64 = self
            .statuses
            .iter()
            .filter(|(status, _)| !expected.iter().any(|e| e.to_string() == **status))
            .map(|(_, n)| n)
            .sum();
        unexpected + self.connect_errors + self.read_errors + self.write_errors + self.timeouts
    }

    pub fn exhausted(&self) -> bool {
        self.exhausted != 0
    }
}

/// One line of a request file. Tokens, paths and compact JSON hold no tab or newline; anything that
/// does would split the line, so it is refused.
pub fn request_line(
    method: &str,
    path: &str,
    token: &str,
    if_none_match: Option<&str>,
    body: Option<&str>,
) -> anyhow::Result<String> {
    let fields = [
        method,
        path,
        token,
        if_none_match.unwrap_or(""),
        body.unwrap_or(""),
    ];
    if fields.iter().any(|f| f.contains(['\t', '\n', '\r'])) {
        bail!("a request field holds a tab or a line break");
    }
    Ok(fields.join("\t") + "\n")
}

/// Writes `lines` (from [`request_line`]) as a request file for `load.lua`.
pub fn write_requests(path: &Path, lines: &[String]) -> anyhow::Result<PathBuf> {
    anyhow::ensure!(!lines.is_empty(), "no requests to send");
    std::fs::write(path, lines.concat())?;
    Ok(path.to_owned())
}

/// The `WRK_RESULT` line in wrk's output.
pub fn parse(output: &str) -> anyhow::Result<WrkRun> {
    let line = output
        .lines()
        .find_map(|l| l.strip_prefix("WRK_RESULT "))
        .context("wrk printed no WRK_RESULT line")?;
    serde_json::from_str(line).with_context(|| format!("reading {line}"))
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/load.lua")
}

pub async fn run(load: &Load) -> anyhow::Result<WrkRun> {
    let seconds = load.duration.as_secs().max(1);
    let mut command = tokio::process::Command::new("wrk");
    command
        .args(["-t1", "-c", &load.connections.to_string()])
        .args([
            "-d",
            &format!("{seconds}s"),
            "--timeout",
            "10s",
            "--latency",
            "-s",
        ])
        .arg(script())
        .arg(&load.base_url)
        .arg("--")
        .arg(&load.requests)
        .arg(match load.order {
            Order::Once => "once",
            Order::Cycle | Order::FollowEtag => "cycle",
        });
    if load.order == Order::FollowEtag {
        command.arg("follow-etag");
    }
    command.kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(seconds + 30), command.output())
        .await
        .context("wrk ran past its duration")?
        .context("running wrk (make bench installs the Debian package)")?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        bail!(
            "wrk exited with {}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    parse(&stdout)
}

/// `runs` loads one after the other.
pub async fn repeat(load: &Load, runs: usize) -> anyhow::Result<Vec<WrkRun>> {
    let mut results = Vec::with_capacity(runs);
    for _ in 0..runs {
        results.push(run(load).await?);
    }
    Ok(results)
}

/// `row` with the median rate of `runs`, their p99 latency, and a note of every answer that was
/// not one of `expected` and of a request list that ran out.
pub fn rate_row(row: Row, runs: &[WrkRun], expected: &[u16]) -> Row {
    let rates: Vec<f64> = runs.iter().map(WrkRun::rate).collect();
    let Some(summary) = Summary::median(&rates) else {
        return row.skipped("wrk made no run");
    };
    let p99: Vec<f64> = runs.iter().map(|r| r.p99_us as f64 / 1e3).collect();
    let p99 = Summary::median(&p99).map_or(0.0, |s| s.value);
    let mut row = row.measured(summary).note(format!("p99 {p99:.1} ms"));
    let failures: u64 = runs.iter().map(|r| r.failures(expected)).sum();
    if failures > 0 {
        let requests: u64 = runs.iter().map(|r| r.requests).sum();
        row = row.note(format!(
            "{failures} of {requests} answers unexpected or failed"
        ));
    }
    if runs.iter().any(|r| r.requests == 0) {
        row = row.note("a run completed no request: each took longer than the run");
    }
    if runs.iter().any(WrkRun::exhausted) {
        row = row.note("the request list ran out: a lower bound");
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_result_line_of_a_real_run() {
        let run = parse(include_str!("testdata/wrk-mixed-statuses.txt")).unwrap();
        assert_eq!(run.requests, 517);
        assert_eq!(run.duration_us, 1_003_948);
        assert_eq!((run.p50_us, run.p99_us, run.max_us), (3072, 12481, 21753));
        assert_eq!(
            (run.count(200), run.count(404), run.count(304)),
            (258, 259, 0)
        );
        assert!(!run.exhausted());
        assert!((run.rate() - 514.97).abs() < 0.01, "{}", run.rate());
        assert_eq!(run.failures(&[200]), 259);
        assert_eq!(run.failures(&[200, 404]), 0);
    }

    #[test]
    fn reads_a_gateway_poll_run_of_only_304s() {
        let run = parse(include_str!("testdata/wrk-gateway-304.txt")).unwrap();
        assert_eq!((run.requests, run.count(304)), (2332, 2332));
        assert_eq!(run.failures(&[304]), 0);
        assert_eq!(run.failures(&[200]), 2332);
        assert!((run.rate() - 1162.46).abs() < 0.01, "{}", run.rate());
    }

    #[test]
    fn output_without_the_result_line_is_an_error() {
        let error = parse("Running 1s test @ http://127.0.0.1:1/\n").unwrap_err();
        assert!(error.to_string().contains("WRK_RESULT"), "{error}");
    }

    #[test]
    fn request_lines_keep_their_five_fields() {
        let line = request_line("POST", "/v1/x", "tok", None, Some(r#"{"a":1}"#)).unwrap();
        assert_eq!(line, "POST\t/v1/x\ttok\t\t{\"a\":1}\n");
        assert!(request_line("GET", "/", "t\tk", None, None).is_err());
    }
}
