//! The in-process rows: runs the criterion benches of `countersign-proto` and
//! `countersign-console` and reads what criterion wrote (`estimates.json` for the median,
//! `sample.json` for the fastest and slowest sample).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context as _};
use countersign_console::review::diff::{INLINE_BUDGET, LINE_DEADLINE};
use serde::Deserialize;

use crate::settings::Settings;
use crate::stats::Summary;
use crate::table::{Goal, Row, Unit};

/// DESIGN: a 1 MB text with 1 % of lines changed diffs in ≤ 50 ms.
const TEXT_DIFF: Duration = Duration::from_millis(50);
/// The packages whose criterion benches run, as `make bench` and `make bench-quick` build them:
/// the same selection, so that cargo finds them already built.
fn packages(settings: &Settings) -> &'static [&'static str] {
    if settings.quick {
        &["countersign-proto"]
    } else {
        &["countersign-proto", "countersign-console"]
    }
}

pub struct Results {
    dir: PathBuf,
    /// Why `cargo bench` failed, if it did: the rows it left without results say so.
    failure: Option<String>,
    packages: &'static [&'static str],
}

#[derive(Deserialize)]
struct Estimates {
    median: Estimate,
}

#[derive(Deserialize)]
struct Estimate {
    point_estimate: f64,
}

#[derive(Deserialize)]
struct Sample {
    iters: Vec<f64>,
    times: Vec<f64>,
}

pub async fn run(settings: &Settings) -> Results {
    let dir = settings.out_dir.join("criterion");
    // Results of an earlier run must not stand in for a bench that fails now.
    let _ = std::fs::remove_dir_all(&dir);
    let log = settings.out_dir.join("criterion.log");
    let packages = packages(settings);
    let failure = cargo_bench(settings, packages, &dir, &log)
        .await
        .err()
        .map(|e| format!("{e:#} (see {})", log.display()));
    Results {
        dir,
        failure,
        packages,
    }
}

async fn cargo_bench(
    settings: &Settings,
    packages: &[&str],
    dir: &Path,
    log: &Path,
) -> anyhow::Result<()> {
    let (warm_up, measure) = if settings.quick {
        ("0.5", "1")
    } else {
        ("1", "3")
    };
    let out = std::fs::File::create(log)?;
    let mut command =
        tokio::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
    // `--bench '*'`: the criterion targets only; a library's libtest harness refuses their flags.
    command.args(["bench", "--quiet", "--no-fail-fast", "--bench", "*"]);
    for package in packages {
        command.args(["-p", package]);
    }
    command
        .args([
            "--",
            "--warm-up-time",
            warm_up,
            "--measurement-time",
            measure,
        ])
        .current_dir(&settings.workspace)
        .env("CRITERION_HOME", dir)
        .stdout(out.try_clone()?)
        .stderr(out)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let status = tokio::time::timeout(Duration::from_secs(600), command.status())
        .await
        .context("cargo bench ran for more than 10 minutes")??;
    if !status.success() {
        bail!("cargo bench exited with {status}");
    }
    Ok(())
}

impl Results {
    /// Nanoseconds per iteration of `group/function`: the median, and the fastest and slowest sample.
    pub fn summary(&self, id: &str) -> anyhow::Result<Summary> {
        let dir = self.dir.join(id).join("new");
        let read = |file: &str| -> anyhow::Result<String> {
            std::fs::read_to_string(dir.join(file)).with_context(|| {
                let why = self.failure.as_deref().unwrap_or("no error reported");
                format!("criterion wrote no {id}/new/{file}: {why}")
            })
        };
        let estimates: Estimates = serde_json::from_str(&read("estimates.json")?)?;
        let sample: Sample = serde_json::from_str(&read("sample.json")?)?;
        let per_iteration: Vec<f64> = sample
            .times
            .iter()
            .zip(&sample.iters)
            .map(|(t, n)| t / n)
            .collect();
        let range = Summary::median(&per_iteration).context("an empty criterion sample")?;
        Ok(Summary {
            value: estimates.median.point_estimate,
            ..range
        })
    }

    /// Ed25519 sign + verify of one decision statement, the floor of a decision's round trip.
    pub fn signature_floor(&self) -> Option<f64> {
        let sign = self.summary("ed25519/sign_statement").ok()?;
        let verify = self.summary("ed25519/verify_statement").ok()?;
        Some(sign.value + verify.value)
    }

    pub fn rows(&self) -> Vec<Row> {
        let mut rows = Vec::new();
        let row = |id: &str, row: Row| row.result(self.summary(id));
        if self.packages.contains(&"countersign-proto") {
            rows.extend([
                row(
                    "digest/plan_bulk",
                    Row::new(
                        "plan digest of the bulk fixture (JCS + SHA-256)",
                        Unit::Time,
                    ),
                ),
                row(
                    "digest/subjects_100k",
                    Row::new("subject digest of 100,000 ids", Unit::Time),
                ),
                row(
                    "ed25519/sign_statement",
                    Row::new("Ed25519 sign of a decision statement (DSSE)", Unit::Time),
                ),
                row(
                    "ed25519/verify_statement",
                    Row::new("Ed25519 verify of a decision statement (DSSE)", Unit::Time),
                ),
                row(
                    "strict_json/listing_1000",
                    Row::new(
                        "duplicate-key check of a 1,000-plan listing (about 600 KB)",
                        Unit::Time,
                    ),
                ),
            ]);
        }
        if self.packages.contains(&"countersign-console") {
            let git = self
                .summary("diff/git_word_diff_1mb")
                .map(|s| {
                    format!(
                        "git diff --no-index --word-diff: {}",
                        Unit::Time.format(s.value)
                    )
                })
                .unwrap_or_else(|e| format!("git reference failed: {e:#}"));
            let deadline = LINE_DEADLINE + INLINE_BUDGET;
            rows.extend([
                row(
                    "diff/text_1mb",
                    Row::new(
                        "line + word diff, 1 MB text, 1 % of lines changed",
                        Unit::Time,
                    )
                    .goal(Goal::AtMost(TEXT_DIFF.as_nanos() as f64))
                    .reference(git),
                ),
                row(
                    "diff/json_10k_keys",
                    Row::new("structural diff of a 10,000-key JSON object", Unit::Time),
                ),
                row(
                    "diff/pathological",
                    Row::new(
                        "pathological text diff (30,000 lines, all moved): within its deadline",
                        Unit::Time,
                    )
                    .goal(Goal::AtMost(deadline.as_nanos() as f64)),
                ),
            ]);
        }
        rows
    }
}
