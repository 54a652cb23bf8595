//! Latency as an approver feels it, through the console core on loopback: a plan created by an
//! agent until the console's live queue holds it (over SSE; DESIGN: ≤ 100 ms p50), and a decision's
//! round trip — fetch, digest, sign, journal, send, the gateway's verification and record (DESIGN:
//! ≤ 10 ms p50) — next to Ed25519 sign + verify alone, its floor; and the same round trip while
//! another agent floods the gateway with previews of its largest plan (issue 23: a preview is
//! evaluated off the writer, so the decision keeps its bar). The queue holds 10,000 pending plans
//! throughout (1,000 in a quick run): issue 28's bars hold at that size.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use countersign_console::live::{Link, Live, Timing};
use countersign_console::signing::journal::Journal;
use countersign_console::signing::signer::Signer;
use countersign_console::Console;
use countersign_engine::accounts::limits::DEFAULT_MAX_PREVIEWS_IN_FLIGHT;

use crate::gateway::{bulk_plan, pending_plan, Gateway};
use crate::settings::{keyring_missing, Settings};
use crate::stats::{ns, Summary};
use crate::table::{Goal, Row, Unit};

const SSE_P50: Duration = Duration::from_millis(100);
const DECISION_P50: Duration = Duration::from_millis(10);
/// The longest a plan may take to show up before the sample counts as lost.
const ARRIVAL_TIMEOUT: Duration = Duration::from_secs(10);
/// Between samples, so that one sample's work does not queue behind the last.
const GAP: Duration = Duration::from_millis(20);
/// The flooding agent's previews under way at once: as many as the gateway lets one agent have
/// (the bar's case), and twice that, which the bench's gateway allows (a heavier flood than one
/// agent can make, reported beside it).
const FLOOD_WORKERS: [usize; 2] = [
    DEFAULT_MAX_PREVIEWS_IN_FLIGHT,
    2 * DEFAULT_MAX_PREVIEWS_IN_FLIGHT,
];

fn percentile_row(row: Row, samples: &[f64], p: f64) -> Row {
    row.result(Summary::percentile(samples, p).ok_or_else(|| anyhow::anyhow!("no samples")))
}

/// The queue's size while the row was measured, in its name.
fn with_backlog(row: Row, backlog: &str) -> Row {
    Row {
        bar: format!("{}{backlog}", row.bar),
        ..row
    }
}

/// `floor`: Ed25519 sign + verify of a decision statement, from criterion, when it ran.
pub async fn rows(settings: &Settings, floor: Option<f64>) -> Vec<Row> {
    let backlog = format!(
        " — {} pending",
        Unit::Count.format(settings.latency_backlog() as f64)
    );
    let sse = [
        Row::new(
            "plan created → in the console's live queue over SSE, p50",
            Unit::Time,
        )
        .goal(Goal::AtMost(ns(SSE_P50))),
        Row::new(
            "plan created → in the console's live queue over SSE, p99",
            Unit::Time,
        ),
    ]
    .map(|row| with_backlog(row, &backlog));
    let floor_text = floor.map(|f| format!("Ed25519 sign + verify: {}", Unit::Time.format(f)));
    let decisions = [
        Row::new(
            "decision round trip (console `approve`, journaled), p50",
            Unit::Time,
        )
        .goal(Goal::AtMost(ns(DECISION_P50))),
        Row::new(
            "decision round trip (console `approve`, journaled), p99",
            Unit::Time,
        ),
        Row::new(
            "decision round trip while an agent floods 100,000-subject previews, p50",
            Unit::Time,
        )
        .goal(Goal::AtMost(ns(DECISION_P50))),
        Row::new(
            "decision round trip while an agent floods 100,000-subject previews, p99",
            Unit::Time,
        ),
        Row::new(
            "decision round trip while previews of 100,000 subjects run twice an agent's cap, p50",
            Unit::Time,
        ),
        Row::new(
            "decision round trip while previews of 100,000 subjects run twice an agent's cap, p99",
            Unit::Time,
        ),
    ]
    .map(|row| with_backlog(row, &backlog))
    .map(|row| match &floor_text {
        Some(text) => row.reference(text.clone()),
        None if settings.runs("criterion") => {
            row.reference("Ed25519 floor not measured (criterion failed)")
        }
        None => row.reference("Ed25519 floor not measured (criterion not run)"),
    });
    if let Some(why) = keyring_missing() {
        return sse
            .into_iter()
            .chain(decisions)
            .map(|r| r.skipped(why))
            .collect();
    }
    match measure(settings, sse.clone(), decisions.clone()).await {
        Ok(rows) => rows,
        Err(e) => {
            let why = format!("failed: {e:#}");
            sse.into_iter()
                .chain(decisions)
                .map(|r| r.skipped(why.clone()))
                .collect()
        }
    }
}

async fn measure(
    settings: &Settings,
    sse: [Row; 2],
    decisions: [Row; 6],
) -> anyhow::Result<Vec<Row>> {
    let gateway = Gateway::start(settings).await?;
    let agent = gateway.agent("latency").await?;
    let seeder = gateway.agent("backlog").await?;
    gateway
        .seed(&seeder, settings.latency_backlog(), pending_plan)
        .await?;
    let code = gateway.invite("Bench approver").await?;
    let dir = tempfile::tempdir()?;
    let journal = Journal::open(&dir.path().join("journal.db")).await?;
    let console = Console::enroll(&gateway.api.url, &code, "Bench approver")
        .await?
        .with_journal(journal);

    let (live, mut snapshots) = Live::new(console.client().clone(), Timing::default());
    let live = tokio::spawn(live.run());
    tokio::time::timeout(
        Duration::from_secs(30),
        snapshots.wait_for(|s| s.link == Link::Online),
    )
    .await
    .map_err(|_| anyhow::anyhow!("the console's event stream did not open within 30 s"))??;
    let seen: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let watcher = {
        let seen = seen.clone();
        let mut snapshots = snapshots.clone();
        tokio::spawn(async move {
            while snapshots.changed().await.is_ok() {
                let now = Instant::now();
                let snapshot = snapshots.borrow_and_update();
                let mut seen = seen.lock().expect("not poisoned");
                for item in &snapshot.items {
                    seen.entry(item.plan_id.clone()).or_insert(now);
                }
            }
        })
    };

    let mut arrivals = Vec::new();
    let mut answered = Vec::new();
    let mut plans = Vec::new();
    for i in 0..settings.latency_samples() {
        let (capability, params) = pending_plan(i);
        let sent = Instant::now();
        let preview = gateway.api.dry_run(&agent, capability, &params).await?;
        answered.push(ns(sent.elapsed()));
        let plan_id = preview["plan_id"].as_str().unwrap_or_default().to_owned();
        let deadline = sent + ARRIVAL_TIMEOUT;
        let arrived = loop {
            if let Some(at) = seen.lock().expect("not poisoned").get(&plan_id) {
                break *at;
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "{plan_id} never reached the live queue"
            );
            tokio::time::sleep(Duration::from_micros(200)).await;
        };
        arrivals.push(ns(arrived.saturating_duration_since(sent)));
        plans.push(plan_id);
        tokio::time::sleep(GAP).await;
    }
    watcher.abort();
    live.abort();
    let samples = settings.latency_samples();
    let mut under_flood = Vec::new();
    for (n, _) in FLOOD_WORKERS.iter().enumerate() {
        let first = samples * (n + 1);
        let plans: Vec<String> = gateway
            .seed(&agent, samples, move |i| pending_plan(first + i))
            .await?
            .iter()
            .map(|p| p["plan_id"].as_str().unwrap_or_default().to_owned())
            .collect();
        under_flood.push(plans);
    }

    let mut round_trips = Vec::new();
    for plan_id in &plans {
        let view = console.plan_view(plan_id).await?;
        let started = Instant::now();
        console.approve(plan_id, &view.digest, None, &Yes).await?;
        round_trips.push(ns(started.elapsed()));
        tokio::time::sleep(GAP).await;
    }

    let flooder = gateway.agent("flood").await?;
    let mut floods = Vec::new();
    for (workers, plans) in FLOOD_WORKERS.into_iter().zip(&under_flood) {
        floods.push(flooded(&gateway, &console, &flooder, workers, plans).await?);
    }
    Signer::forget(&gateway.gateway_id)?;

    let dry_run = Summary::median(&answered).map(|s| Unit::Time.format(s.value));
    let [p50, p99] = sse.map(|row| match &dry_run {
        Some(text) => row.reference(format!("dry_run answered (p50): {text}")),
        None => row,
    });
    let [d50, d99, f50, f99, h50, h99] = decisions;
    let mut rows = vec![
        percentile_row(p50, &arrivals, 50.0),
        percentile_row(p99, &arrivals, 99.0),
        percentile_row(d50, &round_trips, 50.0),
        percentile_row(d99, &round_trips, 99.0),
    ];
    for ((workers, (samples, made)), [r50, r99]) in FLOOD_WORKERS
        .into_iter()
        .zip(floods)
        .zip([[f50, f99], [h50, h99]])
    {
        let [r50, r99] = [r50, r99].map(|row| {
            row.reference(format!(
                "{made} previews of 100,000 removals made meanwhile, {workers} at a time"
            ))
        });
        rows.push(percentile_row(r50, &samples, 50.0));
        rows.push(percentile_row(r99, &samples, 99.0));
    }
    Ok(rows)
}

/// Decisions on `plans`, one after another, while `workers` previews of the largest plan run
/// at once for `flooder`: each round trip, and the previews made meanwhile.
async fn flooded(
    gateway: &Gateway,
    console: &Console,
    flooder: &str,
    workers: usize,
    plans: &[String],
) -> anyhow::Result<(Vec<f64>, usize)> {
    let stop = Arc::new(AtomicBool::new(false));
    let made = Arc::new(AtomicUsize::new(0));
    let mut flood = tokio::task::JoinSet::new();
    for _ in 0..workers {
        let (api, token) = (gateway.api.clone(), flooder.to_owned());
        let (stop, made) = (stop.clone(), made.clone());
        flood.spawn(async move {
            let (capability, params) = bulk_plan();
            while !stop.load(Ordering::Relaxed) {
                match api.dry_run(&token, capability, &params).await {
                    Ok(_) => {
                        made.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(_) => tokio::time::sleep(GAP).await,
                }
            }
        });
    }
    // Every worker's first preview under way before the first decision.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut round_trips = Vec::new();
    let decided = async {
        for plan_id in plans {
            let view = console.plan_view(plan_id).await?;
            let started = Instant::now();
            console.approve(plan_id, &view.digest, None, &Yes).await?;
            round_trips.push(ns(started.elapsed()));
            tokio::time::sleep(GAP).await;
        }
        anyhow::Ok(())
    }
    .await;
    stop.store(true, Ordering::Relaxed);
    while flood.join_next().await.is_some() {}
    decided?;
    Ok((round_trips, made.load(Ordering::Relaxed)))
}

/// The approver's yes to every confirmation: these tests are about what happens after it.
struct Yes;

impl countersign_console::Confirm for Yes {
    fn confirm(&self, _: &str, _: &str, _: &[String]) -> bool {
        true
    }
}
