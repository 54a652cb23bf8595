//! `countersign-bench`: measures every bar of DESIGN's "Quality bars" and issue 9 that a benchmark
//! covers, and prints one table (also written to `target/bench/report.md`). `make bench` runs it
//! in release under a private Secret Service and Xvfb; `--quick` (`make bench-quick`) measures a
//! subset in under two minutes. A full run appends its figures and report to `docs/` (see
//! `history`). It measures; it never decides a test.

mod bulk;
mod criterion;
mod desktop;
mod gateway;
mod history;
mod latency;
mod policy;
mod polls;
mod proxy;
mod settings;
mod stats;
mod table;
mod throughput;
mod webdriver;
mod wrk;

use std::future::Future;
use std::time::{Duration, Instant};

use settings::Settings;
use table::{Row, Verdict};

/// Runs one part of the benchmark and keeps how long it took.
async fn section<T>(
    name: &str,
    timings: &mut Vec<(String, Duration)>,
    part: impl Future<Output = T>,
) -> T {
    eprintln!("== {name}");
    let started = Instant::now();
    let result = part.await;
    let took = started.elapsed();
    eprintln!("   {name}: {:.1} s", took.as_secs_f64());
    timings.push((name.to_owned(), took));
    result
}

fn git_head(settings: &Settings) -> String {
    std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(&settings.workspace)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|| "unknown".to_owned())
}

fn report(
    settings: &Settings,
    run: &Run,
    rows: &[Row],
    timings: &[(String, Duration)],
    total: Duration,
) -> String {
    let mut out = format!(
        "# Countersign benchmarks ({})\n\n{}, commit {}, {}\n\n",
        if settings.quick {
            "make bench-quick: a subset"
        } else if !settings.complete() {
            "make bench, some parts only"
        } else {
            "make bench"
        },
        run.date,
        run.commit,
        history::machine(),
    );
    out.push_str(&table::render(rows));
    out.push_str(
        "\nRates are the median of the wrk runs; times the median of the samples; rows named p50 or \
         p99 show that percentile of all samples. min – max is the range of runs or samples.\n",
    );
    let count = |v: Verdict| rows.iter().filter(|r| r.verdict() == v).count();
    out.push_str(&format!(
        "\n{} pass, {} fail, {} info, {} skipped.\n",
        count(Verdict::Pass),
        count(Verdict::Fail),
        count(Verdict::Info),
        count(Verdict::Skipped)
    ));
    let parts: Vec<String> = timings
        .iter()
        .map(|(name, took)| format!("{name} {:.0} s", took.as_secs_f64()))
        .collect();
    out.push_str(&format!(
        "Run time {:.0} s ({}).\n",
        total.as_secs_f64(),
        parts.join(", ")
    ));
    if settings.quick {
        out.push_str(
            "make bench adds the 10,000-pending rows, dry_runs, decisions and invokes per second, \
             the bulk plan, the console diffs and the desktop.\n",
        );
    }
    out
}

/// When and on what a run measured.
struct Run {
    date: String,
    commit: String,
}

/// The gateway's rows on the store `settings` names, each part as a section of its own.
async fn store_rows(
    settings: &Settings,
    timings: &mut Vec<(String, Duration)>,
    floor: Option<f64>,
) -> Vec<Row> {
    let suffix = settings.store.suffix();
    let mut rows = Vec::new();
    if settings.runs("polls") {
        let name = format!("304 polls and listings{suffix}");
        rows.extend(section(&name, timings, polls::rows(settings)).await);
    }
    if settings.runs("writes") {
        let name = format!("writes per second{suffix}");
        rows.extend(section(&name, timings, throughput::rows(settings)).await);
    }
    if settings.runs("bulk") {
        let name = format!("bulk plan{suffix}");
        rows.extend(section(&name, timings, bulk::rows(settings)).await);
    }
    if settings.runs("latency") {
        let name = format!("latency{suffix}");
        rows.extend(section(&name, timings, latency::rows(settings, floor)).await);
    }
    for row in &mut rows {
        row.bar.push_str(suffix);
    }
    rows
}

/// The gateway's rows again, each gateway on a new PostgreSQL database.
async fn postgres_rows(
    settings: &Settings,
    timings: &mut Vec<(String, Duration)>,
    floor: Option<f64>,
) -> Vec<Row> {
    let Some(server) = settings::postgres_server() else {
        return vec![Row::new("gateway rows on PostgreSQL", table::Unit::Rate)
            .skipped("no PostgreSQL server (make bench starts one)")];
    };
    let settings = &Settings {
        store: settings::Store::Postgres { server },
        ..settings.clone()
    };
    store_rows(settings, timings, floor).await
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let settings = Settings::from_args()?;
    let started = Instant::now();
    let mut timings = Vec::new();
    let mut rows = Vec::new();

    let mut floor = None;
    if settings.runs("criterion") {
        let benches = section(
            "criterion (in-process)",
            &mut timings,
            criterion::run(&settings),
        )
        .await;
        rows.extend(benches.rows());
        floor = benches.signature_floor();
    }
    if settings.runs("policy") {
        rows.extend(
            section(
                "approval policy (in-process)",
                &mut timings,
                policy::rows(&settings),
            )
            .await,
        );
    }
    rows.extend(store_rows(&settings, &mut timings, floor).await);
    if settings.runs("proxy") {
        rows.extend(section("MCP proxy", &mut timings, proxy::rows(&settings)).await);
    }
    if settings.runs("desktop") {
        rows.extend(section("desktop", &mut timings, desktop::rows(&settings)).await);
    }
    rows.extend(postgres_rows(&settings, &mut timings, floor).await);

    for row in &rows {
        if let table::Outcome::Skipped(why) = &row.outcome {
            eprintln!("skipped: {}: {why}", row.bar);
        }
    }
    let run = Run {
        date: chrono::Utc::now().format("%Y-%m-%d %H:%M UTC").to_string(),
        commit: git_head(&settings),
    };
    let history = history::History::in_docs(&settings.workspace);
    history.compare(&mut rows);
    let text = report(&settings, &run, &rows, &timings, started.elapsed());
    let path = settings.out_dir.join("report.md");
    std::fs::write(&path, &text)?;
    println!("{text}\nWritten to {}", path.display());
    // A quick run or a part of one measures a subset: it is not history.
    if settings.complete() {
        history.append(&rows, &run.date, &run.commit, &text)?;
        println!("Appended to docs/benchmarks.md and docs/benchmarks.tsv");
    }
    Ok(())
}
