//! The approval queue under polling: `304` answers per second at 10, 1,000 and 10,000 pending
//! plans (DESIGN: ≥ 5,000/s, and the same cost at 10,000 as at 10), and the full listing's time at
//! 1,000 and 10,000, end to end in the console: every page fetched and parsed into typed summaries
//! (issue 28: ≤ 20 ms and ≤ 150 ms), and at 10,000 again from a gateway serving `examples/policy`,
//! whose summaries carry their rules (issue 49).

use std::time::Instant;

use countersign_console::client::{GatewayClient, Poll};

use crate::gateway::{pending_plan, Gateway};
use crate::settings::Settings;
use crate::stats::Summary;
use crate::table::{Goal, Row, Unit};
use crate::wrk::{self, Load, Order};

const POLLS_PER_SECOND: f64 = 5_000.0;
const CONNECTIONS: u32 = 4;
const MANY_CONNECTIONS: u32 = 32;

fn listing_goal(pending: usize) -> Option<Goal> {
    match pending {
        1_000 => Some(Goal::AtMost(20e6)),
        10_000 => Some(Goal::AtMost(150e6)),
        _ => None,
    }
}

fn thousands(n: usize) -> String {
    Unit::Count.format(n as f64)
}

pub async fn rows(settings: &Settings) -> Vec<Row> {
    match measure(settings).await {
        Ok(rows) => rows,
        Err(e) => {
            vec![Row::new("304 polls and listings", Unit::Rate).skipped(format!("failed: {e:#}"))]
        }
    }
}

async fn measure(settings: &Settings) -> anyhow::Result<Vec<Row>> {
    let gateway = Gateway::start(settings).await?;
    let agent = gateway.agent("poll-seeder").await?;
    let approver = gateway.approver("Bench poller").await?;
    let dir = tempfile::tempdir()?;
    let mut rows = Vec::new();
    let mut medians = Vec::new();
    let mut seeded = 0;
    for &pending in settings.pending_stages() {
        let started = Instant::now();
        gateway
            .seed(&agent, pending - seeded, move |i| pending_plan(seeded + i))
            .await?;
        seeded = pending;
        eprintln!(
            "  {} pending plans seeded in {:.1} s",
            thousands(pending),
            started.elapsed().as_secs_f64()
        );
        let listing = gateway.api.pending(&approver.token).await?;
        anyhow::ensure!(
            listing.items == pending,
            "the queue lists {} plans, {pending} were made",
            listing.items
        );
        let line = wrk::request_line(
            "GET",
            "/v1/approvals?status=pending",
            &approver.token,
            Some(&listing.etag),
            None,
        )?;
        let requests =
            wrk::write_requests(&dir.path().join(format!("poll-{pending}.txt")), &[line])?;
        let load = Load {
            base_url: gateway.api.url.clone(),
            requests,
            order: Order::Cycle,
            connections: CONNECTIONS,
            duration: settings.wrk_duration(),
        };
        let bar = format!(
            "`304` polls/s, {} pending (wrk, 4 connections)",
            thousands(pending)
        );
        let row = Row::new(bar, Unit::Rate).goal(Goal::AtLeast(POLLS_PER_SECOND));
        let row = match wrk::repeat(&load, settings.wrk_runs()).await {
            Ok(runs) => wrk::rate_row(row, &runs, &[304]),
            Err(e) => row.skipped(format!("failed: {e:#}")),
        };
        medians.push((pending, row.value()));
        rows.push(row);

        if pending == 10 && !settings.quick {
            let load = Load {
                connections: MANY_CONNECTIONS,
                ..load.clone()
            };
            let row = Row::new("`304` polls/s, 10 pending, 32 connections", Unit::Rate);
            rows.push(match wrk::repeat(&load, settings.wrk_runs()).await {
                Ok(runs) => wrk::rate_row(row, &runs, &[304]),
                Err(e) => row.skipped(format!("failed: {e:#}")),
            });
        }
        if let Some(goal) = listing_goal(pending) {
            let bar = format!(
                "console lists all {} pending (typed summaries)",
                thousands(pending)
            );
            let row = Row::new(bar, Unit::Time).goal(goal);
            let client = GatewayClient::new(&gateway.api.url, Some(approver.token.clone()))?;
            rows.push(listing_row(row, &client, pending, settings.repeats()).await);
        }
    }
    if !settings.quick {
        rows.push(listing_under_policy(settings).await);
    }
    rows.push(spread(&medians));
    // The floor has no store: measured once, beside the SQLite rows.
    if matches!(settings.store, crate::settings::Store::Sqlite) {
        let floor = bare_axum_floor(settings, dir.path()).await;
        rows.push(against_floor(&medians, &floor));
        rows.push(floor);
    }
    Ok(rows)
}

/// The listing of 10,000 pending plans from a gateway serving `examples/policy`: each summary
/// carries the rules its plan waits on, which the console parses with the rest.
async fn listing_under_policy(settings: &Settings) -> Row {
    const PENDING: usize = 10_000;
    let row = Row::new(
        format!(
            "console lists all {} pending under examples/policy (summaries with rules)",
            thousands(PENDING)
        ),
        Unit::Time,
    )
    .goal(Goal::AtMost(150e6));
    let policy = settings
        .workspace
        .join("examples/policy")
        .display()
        .to_string();
    let prepared = async {
        let gateway = Gateway::start_with(settings, &["--policy", &policy]).await?;
        let agent = gateway.agent("policy-seeder").await?;
        let approver = gateway.approver("Bench policy").await?;
        gateway.seed(&agent, PENDING, pending_plan).await?;
        let client = GatewayClient::new(&gateway.api.url, Some(approver.token.clone()))?;
        anyhow::Ok((gateway, client))
    }
    .await;
    match prepared {
        Ok((_gateway, client)) => listing_row(row, &client, PENDING, settings.repeats()).await,
        Err(e) => row.skipped(format!("failed: {e:#}")),
    }
}

/// The gateway's `304` rate at the longest queue over the bare handler's: the bearer check, the
/// rate limit and the revision compare should cost no more than the rest (issue 49: 0.28 when
/// it was filed).
fn against_floor(medians: &[(usize, Option<f64>)], floor: &Row) -> Row {
    let (pending, rate) = medians.last().copied().unwrap_or((0, None));
    let bar = format!(
        "`304` polls/s, {} pending ÷ a bare axum handler's",
        thousands(pending)
    );
    let row = Row::new(bar, Unit::Ratio).goal(Goal::AtLeast(0.5));
    match (rate, floor.value()) {
        (Some(rate), Some(floor)) if floor > 0.0 => row.measured(Summary::single(rate / floor)),
        _ => row.skipped("a `304` row or the floor was not measured"),
    }
}

/// The poll's floor: the same wrk load against an axum handler that answers `304` and does
/// nothing else, so that the gateway's rate reads against what the machine and stack allow.
async fn bare_axum_floor(settings: &Settings, dir: &std::path::Path) -> Row {
    let row = Row::new(
        "reference: `304` polls/s from a bare axum handler (4 connections)",
        Unit::Rate,
    );
    let measured = async {
        let app = axum::Router::new().route(
            "/v1/approvals",
            axum::routing::get(|| async { axum::http::StatusCode::NOT_MODIFIED }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let server = tokio::spawn(async move { axum::serve(listener, app).await });
        let line = wrk::request_line(
            "GET",
            "/v1/approvals?status=pending",
            "bench",
            Some("\"floor\""),
            None,
        )?;
        let load = Load {
            base_url: url,
            requests: wrk::write_requests(&dir.join("poll-floor.txt"), &[line])?,
            order: Order::Cycle,
            connections: CONNECTIONS,
            duration: settings.wrk_duration(),
        };
        let runs = wrk::repeat(&load, settings.wrk_runs()).await;
        server.abort();
        runs
    }
    .await;
    match measured {
        Ok(runs) => wrk::rate_row(row, &runs, &[304]),
        Err(e) => row.skipped(format!("failed: {e:#}")),
    }
}

async fn listing_row(row: Row, client: &GatewayClient, pending: usize, repeats: usize) -> Row {
    let mut times = Vec::new();
    for _ in 0..repeats {
        let started = Instant::now();
        let listed = match client.pending(None).await {
            Ok(Poll::Changed { list, .. }) => list.items.len(),
            Ok(Poll::NotModified { .. }) => {
                return row.skipped("a listing without an ETag answered 304")
            }
            Err(e) => return row.skipped(format!("failed: {e}")),
        };
        times.push(started.elapsed().as_nanos() as f64);
        if listed != pending {
            return row.skipped(format!("the console listed {listed} of {pending} plans"));
        }
    }
    row.result(Summary::of(&times))
}

/// Slowest over fastest of the `304` medians: DESIGN wants the same cost at every queue length.
fn spread(medians: &[(usize, Option<f64>)]) -> Row {
    let (first, last) = (medians.first(), medians.last());
    let bar = match (first, last) {
        (Some((a, _)), Some((b, _))) => format!(
            "`304` spread {} → {} pending (fastest ÷ slowest)",
            thousands(*a),
            thousands(*b)
        ),
        _ => "`304` spread".to_owned(),
    };
    let row = Row::new(bar, Unit::Ratio).goal(Goal::Below(2.0));
    let rates: Option<Vec<f64>> = medians.iter().map(|(_, rate)| *rate).collect();
    let Some(rates) = rates.filter(|r| r.len() >= 2) else {
        return row.skipped("a `304` row was not measured");
    };
    let fastest = rates.iter().copied().fold(f64::MIN, f64::max);
    let slowest = rates.iter().copied().fold(f64::MAX, f64::min);
    let shown: Vec<String> = medians
        .iter()
        .zip(&rates)
        .map(|((pending, _), rate)| {
            format!("{}: {}", thousands(*pending), Unit::Rate.format(*rate))
        })
        .collect();
    row.measured(Summary::single(fastest / slowest.max(f64::MIN_POSITIVE)))
        .reference(shown.join(", "))
}
