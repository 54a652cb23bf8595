//! The desktop app as an approver starts it: the release `countersign` binary under Xvfb, pointed
//! at a bench gateway holding 10,000 pending plans and the bulk plan (issue 28). Per launch: cold
//! start to the first queue row, memory idle (PSS of the app and its WebKit processes, summed),
//! time from a click on the bulk plan to its first screen, and memory with it open and its subject
//! list, digest-checked, scrolled to the last row. The last
//! launch is then left alone as it is, the bulk plan open (the window keeps no history to go back
//! through): its processor use over a minute and its memory after ten minutes. Then the app at
//! 100,000 pending: its first row, its memory and its processor use, idle (issue 49).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use crate::gateway::{bulk_plan, pending_plan, Gateway};
use crate::settings::Settings;
use crate::stats::Summary;
use crate::table::{Goal, Row, Unit};
use crate::webdriver::{self, Driver, QUEUE_ROW};
use countersign_e2e::procmem;

const PENDING: usize = 10_000;
/// Issue 49: the window holds only the rows in view, so 100,000 pending open as 10,000 do.
const SCALE_PENDING: usize = 100_000;
/// Pending plans an agent may hold by default.
const PER_AGENT: usize = countersign_engine::accounts::limits::DEFAULT_MAX_PENDING_PLANS as usize;
const SCALE_PSS: f64 = 300e6;
/// Issue 49's bars: the window holds only the rows it shows (a Tauri hello-world window is 204 MB).
const IDLE_PSS: f64 = 250e6;
/// With the bulk plan open and scrolled, and after ten idle minutes beside it (issue 49).
const BULK_PSS: f64 = 280e6;
const FIRST_ROWS_MS: f64 = 1_000.0;
const FIRST_SCREEN_MS: f64 = 300.0;
/// An idle window's share of one core, at most.
const IDLE_CPU: f64 = 0.01;
/// Launches measured after the first, which enrolls and is not counted.
const LAUNCHES: usize = 3;
/// Time given to the page to finish its work before its memory is read.
const SETTLE: Duration = Duration::from_secs(3);
/// How long idle processor use is measured over.
const IDLE_WINDOW: Duration = Duration::from_secs(60);
/// How long after its first idle reading the memory must still be within its bar.
const DRIFT_WINDOW: Duration = Duration::from_secs(600);

struct Launch {
    cold_start: f64,
    idle_pss: f64,
    /// PSS by process name idle, before the bulk plan is opened.
    idle_parts: Vec<(String, u64)>,
    first_screen: f64,
    bulk_pss: f64,
    /// PSS by process name with the bulk plan open.
    parts: Vec<(String, u64)>,
}

/// What the last launch shows left alone: processor use and memory over time.
struct Idle {
    /// Share of one core over [`IDLE_WINDOW`], in all and by process name (largest first).
    cpu: f64,
    cpu_parts: Vec<(String, f64)>,
    /// PSS at the start of the idle time and [`DRIFT_WINDOW`] later, in all and by process name.
    pss_before: f64,
    parts_before: Vec<(String, u64)>,
    pss_after: f64,
    parts_after: Vec<(String, u64)>,
}

fn pending_text() -> String {
    Unit::Count.format(PENDING as f64)
}

fn first_row(pending: &str) -> Row {
    Row::new(
        format!("desktop cold start → first queue row ({pending} pending)"),
        Unit::Time,
    )
    .goal(Goal::AtMost(FIRST_ROWS_MS * 1e6))
}

fn idle_pss(pending: &str, bar: f64) -> Row {
    Row::new(
        format!("desktop PSS idle, {pending} pending (app + WebKit)"),
        Unit::Bytes,
    )
    .goal(Goal::AtMost(bar))
}

/// `what`: the state it is left in ("10,000 pending, bulk plan open").
fn idle_cpu(what: &str) -> Row {
    Row::new(
        format!(
            "desktop CPU idle over {} s, {what} (% of a core)",
            IDLE_WINDOW.as_secs()
        ),
        Unit::Percent,
    )
    .goal(Goal::Below(IDLE_CPU))
}

fn template(subjects: &str) -> [Row; 6] {
    let pending = pending_text();
    [
        first_row(&pending),
        idle_pss(&pending, IDLE_PSS),
        Row::new(
            format!("desktop click → first screen of the {subjects}-subject plan"),
            Unit::Time,
        )
        .goal(Goal::AtMost(FIRST_SCREEN_MS * 1e6)),
        Row::new(
            format!(
                "desktop PSS with the {subjects}-subject plan open, its list scrolled to the end"
            ),
            Unit::Bytes,
        )
        .goal(Goal::AtMost(BULK_PSS)),
        idle_cpu(&format!("{pending} pending, bulk plan open")),
        Row::new(
            format!(
                "desktop PSS after {} min idle, {pending} pending, bulk plan open",
                DRIFT_WINDOW.as_secs() / 60
            ),
            Unit::Bytes,
        )
        .goal(Goal::AtMost(BULK_PSS)),
    ]
}

fn desktop_binary(settings: &Settings) -> PathBuf {
    std::env::var_os("COUNTERSIGN_DESKTOP_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| settings.bin_dir.join("countersign"))
}

/// Why the desktop rows cannot run here, if they cannot.
fn missing(binary: &std::path::Path) -> Option<String> {
    if std::env::var_os("DISPLAY").is_none() {
        return Some("no display (make bench runs Xvfb)".to_owned());
    }
    if let Some(why) = crate::settings::keyring_missing() {
        return Some(why.to_owned());
    }
    if !binary.exists() {
        return Some(format!("{} is not built", binary.display()));
    }
    for tool in ["tauri-driver", "WebKitWebDriver"] {
        let found = std::process::Command::new("which")
            .arg(tool)
            .stdout(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            return Some(format!("{tool} is not installed (make deps installs it)"));
        }
    }
    None
}

pub async fn rows(settings: &Settings) -> Vec<Row> {
    let binary = desktop_binary(settings);
    let mut rows: Vec<Row> = match missing(&binary) {
        Some(why) => template("bulk").map(|r| r.skipped(why.clone())).into(),
        None => match measure(settings, &binary).await {
            Ok(rows) => rows,
            Err(e) => template("bulk")
                .map(|r| r.skipped(format!("failed: {e:#}")))
                .into(),
        },
    };
    rows.extend(match missing(&binary) {
        Some(why) => scale_template().map(|r| r.skipped(why.clone())).into(),
        None => match at_scale(settings, &binary).await {
            Ok(rows) => rows,
            Err(e) => scale_template()
                .map(|r| r.skipped(format!("failed: {e:#}")))
                .into(),
        },
    });
    rows.push(hello_floor(settings).await);
    rows
}

fn scale_template() -> [Row; 3] {
    let pending = Unit::Count.format(SCALE_PENDING as f64);
    [
        first_row(&pending),
        idle_pss(&pending, SCALE_PSS),
        idle_cpu(&format!("{pending} pending")),
    ]
}

/// The desktop at 100,000 pending: one launch measured after the one that enrolls, its first
/// row, its memory once the header counts every plan, and its processor use left alone.
async fn at_scale(settings: &Settings, binary: &std::path::Path) -> anyhow::Result<Vec<Row>> {
    let gateway = Gateway::start(settings).await?;
    eprintln!("  desktop: seeding {SCALE_PENDING} pending plans");
    // A hundred agents at the default cap of pending plans each, as a busy team's queue would
    // be: one agent a hundred times over it counts all it holds at every dry_run, and its first
    // plans expire before the last are made.
    for agent_no in 0..SCALE_PENDING.div_ceil(PER_AGENT) {
        let agent = gateway
            .funded_agent(&format!("desk{agent_no}"), "100000")
            .await?;
        let first = agent_no * PER_AGENT;
        gateway
            .seed(&agent, PER_AGENT, move |i| pending_plan(first + i))
            .await?;
    }
    let data_dir = tempfile::tempdir()?;
    let env = app_env(&gateway, data_dir.path()).await?;
    let mut measured = None;
    for counted in [false, true] {
        eprintln!("  desktop: {SCALE_PENDING} pending, launch (counted: {counted})");
        let driver = Driver::start(&env).await?;
        let started = Instant::now();
        let client = driver.session(binary).await?;
        let result = async {
            webdriver::wait_for(&client, QUEUE_ROW, Duration::from_secs(60)).await?;
            let first_row = started.elapsed().as_nanos() as f64;
            webdriver::wait_for_pending(&client, SCALE_PENDING, Duration::from_secs(120)).await?;
            if !counted {
                return anyhow::Ok(None);
            }
            tokio::time::sleep(SETTLE).await;
            let app = app_process(&driver, binary)?;
            let (pss, parts) = procmem::tree_pss(app)?;
            let cpu: f64 = cpu_over(app, IDLE_WINDOW)
                .await?
                .iter()
                .map(|(_, share)| share)
                .sum();
            anyhow::Ok(Some((first_row, pss as f64, parts, cpu)))
        }
        .await;
        let _ = client.close().await;
        measured = result?;
    }
    countersign_console::signing::signer::Signer::forget(&gateway.gateway_id)?;
    let (first_row, pss, parts, cpu) = measured.context("the counted launch measured nothing")?;
    let [first, idle, processor] = scale_template();
    Ok(vec![
        first
            .measured(Summary::single(first_row))
            .note("release build, Xvfb; launch → first row in the DOM, one launch"),
        idle.measured(Summary::single(pss)).note(parts_text(&parts)),
        processor
            .measured(Summary::single(cpu))
            .note("user + system time of the app and its WebKit processes"),
    ])
}

/// The floor under the memory rows: Tauri's own example-sized window (`countersign-hello`, one
/// line of static text) started the same way and left idle as long as the app is before its
/// first reading.
async fn hello_floor(settings: &Settings) -> Row {
    let row = Row::new(
        "reference: desktop PSS of an idle Tauri hello-world window (app + WebKit)",
        Unit::Bytes,
    );
    let binary = settings.bin_dir.join("examples").join("countersign-hello");
    if std::env::var_os("DISPLAY").is_none() {
        return row.skipped("no display (make bench runs Xvfb)");
    }
    if !binary.exists() {
        return row.skipped(format!(
            "{} is not built (make bench-build)",
            binary.display()
        ));
    }
    let measured = async {
        let mut child = tokio::process::Command::new(&binary)
            .env("WEBKIT_DISABLE_DMABUF_RENDERER", "1")
            .kill_on_drop(true)
            .spawn()
            .context("starting the reference window")?;
        let pid = child.id().context("the reference window's process")?;
        // Its page is under way once a web process runs below it (its page needs no network
        // process, so only that one is looked for); then it settles as the app does.
        let deadline = Instant::now() + Duration::from_secs(30);
        while procmem::find_below(pid, "WebKitWebProcess").is_none() {
            anyhow::ensure!(
                Instant::now() < deadline,
                "no WebKit web process below the reference window after 30 s"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tokio::time::sleep(SETTLE * 2).await;
        let (bytes, parts) = procmem::tree_pss(pid)?;
        child.kill().await?;
        anyhow::Ok((bytes, parts))
    }
    .await;
    match measured {
        Ok((bytes, parts)) => row
            .measured(Summary::single(bytes as f64))
            .note(parts_text(&parts)),
        Err(e) => row.skipped(format!("failed: {e:#}")),
    }
}

fn parts_text(parts: &[(String, u64)]) -> String {
    parts
        .iter()
        .map(|(name, bytes)| format!("{name} {}", Unit::Bytes.format(*bytes as f64)))
        .collect::<Vec<_>>()
        .join(", ")
}

async fn measure(settings: &Settings, binary: &std::path::Path) -> anyhow::Result<Vec<Row>> {
    let gateway = Gateway::start(settings).await?;
    let agent = gateway.funded_agent("desk", "1000000").await?;
    gateway.seed(&agent, PENDING, pending_plan).await?;
    let (capability, params) = bulk_plan();
    let bulk = gateway.api.dry_run(&agent, capability, &params).await?;
    let bulk_id = bulk["plan_id"].as_str().context("a plan id")?.to_owned();
    let effect_id = bulk["effects"][0]["id"].as_str().context("an effect id")?;
    let last_subject = gateway
        .api
        .last_subject(&agent, &bulk_id, effect_id)
        .await?;
    let subjects = Unit::Count.format(
        bulk["effects"][0]["subjects"]["total"]
            .as_f64()
            .unwrap_or(0.0),
    );
    let data_dir = tempfile::tempdir()?;
    let env = app_env(&gateway, data_dir.path()).await?;

    eprintln!("  desktop: first launch (enrolls, not counted)");
    launch(binary, &env, &bulk_id, &last_subject, false).await?;
    let mut launches = Vec::new();
    let mut idle = None;
    for n in 1..=LAUNCHES {
        eprintln!("  desktop: launch {n} of {LAUNCHES}");
        let last = n == LAUNCHES;
        let (measured, idle_reading) = launch(binary, &env, &bulk_id, &last_subject, last).await?;
        launches.push(measured);
        idle = idle_reading.or(idle);
    }
    let idle = idle.context("the last launch was not left idle")?;
    countersign_console::signing::signer::Signer::forget(&gateway.gateway_id)?;

    let column = |f: fn(&Launch) -> f64| -> anyhow::Result<Summary> {
        let values: Vec<f64> = launches.iter().map(f).collect();
        Summary::median(&values).context("no launch")
    };
    let [cold, idle_row, first, open, cpu, drift] = template(&subjects);
    let (idle_parts, parts) = launches
        .last()
        .map(|l| (parts_text(&l.idle_parts), parts_text(&l.parts)))
        .unwrap_or_default();
    Ok(vec![
        cold.result(column(|l| l.cold_start))
            .note("release build, Xvfb; launch → first row in the DOM"),
        idle_row.result(column(|l| l.idle_pss)).note(idle_parts),
        first
            .result(column(|l| l.first_screen))
            .note("click → first effect painted, timed in the page"),
        open.result(column(|l| l.bulk_pss)).note(parts),
        cpu.measured(Summary::single(idle.cpu)).note(format!(
            "user + system time, last launch: {}",
            idle.cpu_parts
                .iter()
                .map(|(name, share)| format!("{name} {}", Unit::Percent.format(*share)))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        drift
            .measured(Summary::single(idle.pss_after))
            .note(format!(
                "{}; at the start of the idle time {} ({})",
                parts_text(&idle.parts_after),
                Unit::Bytes.format(idle.pss_before),
                parts_text(&idle.parts_before)
            )),
    ])
}

/// What the app is started with: the bench gateway, a fresh enrollment code, its own data.
async fn app_env(
    gateway: &Gateway,
    data_dir: &std::path::Path,
) -> anyhow::Result<[(&'static str, String); 6]> {
    Ok([
        ("COUNTERSIGN_GATEWAY_URL", gateway.api.url.clone()),
        (
            "COUNTERSIGN_ENROLLMENT_CODE",
            gateway.invite("Bench desktop").await?,
        ),
        ("COUNTERSIGN_APPROVER_NAME", "Bench desktop".to_owned()),
        ("COUNTERSIGN_DATA_DIR", data_dir.display().to_string()),
        ("COUNTERSIGN_SIM_INTERVAL_MS", "0".to_owned()),
        ("WEBKIT_DISABLE_DMABUF_RENDERER", "1".to_owned()),
    ])
}

async fn launch(
    binary: &std::path::Path,
    env: &[(&str, String)],
    bulk_id: &str,
    last_subject: &str,
    leave_idle: bool,
) -> anyhow::Result<(Launch, Option<Idle>)> {
    let driver = Driver::start(env).await?;
    let started = Instant::now();
    let client = driver.session(binary).await?;
    let result = async {
        webdriver::wait_for(&client, QUEUE_ROW, Duration::from_secs(60)).await?;
        let cold_start = started.elapsed().as_nanos() as f64;
        webdriver::wait_for_pending(&client, PENDING, Duration::from_secs(60)).await?;
        tokio::time::sleep(SETTLE).await;
        let app = app_process(&driver, binary)?;
        let (idle_pss, idle_parts) = procmem::tree_pss(app)?;
        let first_screen = webdriver::time_to_first_screen(&client, bulk_id).await? * 1e6;
        let last = webdriver::scroll_subjects_to_end(&client).await?;
        if last != last_subject {
            anyhow::bail!("the subject list ends at {last}, the plan at {last_subject}");
        }
        tokio::time::sleep(SETTLE).await;
        let (bulk_pss, parts) = procmem::tree_pss(app)?;
        let launch = Launch {
            cold_start,
            idle_pss: idle_pss as f64,
            idle_parts,
            first_screen,
            bulk_pss: bulk_pss as f64,
            parts,
        };
        let idle = if leave_idle {
            Some(left_alone(app).await?)
        } else {
            None
        };
        anyhow::Ok((launch, idle))
    }
    .await;
    let _ = client.close().await;
    result
}

/// Nothing at all: processor use over [`IDLE_WINDOW`] and memory over [`DRIFT_WINDOW`], with
/// the gateway's queue unchanged all the while.
async fn left_alone(app: u32) -> anyhow::Result<Idle> {
    eprintln!(
        "  desktop: left idle for {} min",
        DRIFT_WINDOW.as_secs() / 60
    );
    let (pss_before, parts_before) = procmem::tree_pss(app)?;
    let started = Instant::now();
    let cpu_parts = cpu_over(app, IDLE_WINDOW).await?;
    tokio::time::sleep(DRIFT_WINDOW.saturating_sub(started.elapsed())).await;
    let (pss_after, parts_after) = procmem::tree_pss(app)?;
    Ok(Idle {
        cpu: cpu_parts.iter().map(|(_, share)| share).sum(),
        cpu_parts,
        pss_before: pss_before as f64,
        parts_before,
        pss_after: pss_after as f64,
        parts_after,
    })
}

/// The app's own process, below the driver that started it.
fn app_process(driver: &Driver, binary: &std::path::Path) -> anyhow::Result<u32> {
    let name = binary
        .file_name()
        .context("a binary name")?
        .to_string_lossy()
        .into_owned();
    procmem::find_below(driver.pid(), &name).context("the app's process")
}

/// The share of one core the app and each of its processes used over `window`, largest first.
async fn cpu_over(app: u32, window: Duration) -> anyhow::Result<Vec<(String, f64)>> {
    let before = procmem::tree_cpu_seconds(app)?;
    let started = Instant::now();
    tokio::time::sleep(window).await;
    let seconds = started.elapsed().as_secs_f64();
    let mut parts: Vec<(String, f64)> = procmem::tree_cpu_seconds(app)?
        .into_iter()
        .map(|(name, used)| {
            let was = before.get(&name).copied().unwrap_or(0.0);
            (name, (used - was) / seconds)
        })
        .collect();
    parts.sort_by(|(_, a), (_, b)| b.total_cmp(a));
    Ok(parts)
}
