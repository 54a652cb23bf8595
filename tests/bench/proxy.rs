//! The MCP proxy's bars (issue 47), against the published filesystem server that
//! `make mcp-servers` installs: a read-only call through the gateway measured side by side with
//! the same call straight to the server (the proxy's overhead, p50 ≤ 2 ms), and the preview of a
//! `write_file` over a 1 MB file (p50 ≤ 50 ms), both over HTTP to the release gateway on SQLite.

use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context};
use countersign_mcp_proxy::{Spec, Upstream};
use serde_json::{json, Value};

use crate::gateway::Gateway;
use crate::settings::Settings;
use crate::stats::{ns, Summary};
use crate::table::{Goal, Row, Unit};

const OVERHEAD: Duration = Duration::from_millis(2);
const PREVIEW: Duration = Duration::from_millis(50);
const ONE_MB: usize = 1_000_000;

pub async fn rows(settings: &Settings) -> Vec<Row> {
    let direct = Row::new(
        "MCP read_text_file straight to the filesystem server (p50)",
        Unit::Time,
    );
    let through = Row::new(
        "MCP read_text_file through the gateway, an HTTP invoke (p50)",
        Unit::Time,
    );
    let overhead = Row::new(
        "MCP proxy overhead of a read-only call, side by side (p50)",
        Unit::Time,
    )
    .goal(Goal::AtMost(ns(OVERHEAD)));
    let preview = Row::new("MCP write_file preview of a 1 MB file (p50)", Unit::Time)
        .goal(Goal::AtMost(ns(PREVIEW)));
    match measure(settings).await {
        Ok(m) => vec![
            direct.result(Summary::of(&m.direct)),
            through.result(Summary::of(&m.through)),
            overhead.result(Summary::of(&m.overhead)),
            preview.result(Summary::of(&m.preview)),
        ],
        Err(e) => [direct, through, overhead, preview]
            .into_iter()
            .map(|row| row.skipped(format!("failed: {e:#}")))
            .collect(),
    }
}

/// Nanoseconds per call, each kind.
struct Measured {
    direct: Vec<f64>,
    through: Vec<f64>,
    /// Each through-the-gateway call less the direct call made just before it.
    overhead: Vec<f64>,
    preview: Vec<f64>,
}

async fn measure(settings: &Settings) -> anyhow::Result<Measured> {
    let server = settings
        .workspace
        .join("target/mcp-servers/npm/node_modules/.bin/mcp-server-filesystem");
    ensure!(
        server.exists(),
        "{} is missing: make bench installs it (make mcp-servers)",
        server.display()
    );
    let root = tempfile::tempdir()?;
    let small = root.path().join("small.txt");
    std::fs::write(&small, "a line the agent reads\n")?;
    let big = root.path().join("big.txt");
    std::fs::write(&big, text(ONE_MB, 'a'))?;
    let command = format!("{} {}", server.display(), root.path().display());

    let upstream = Upstream::connect(
        Spec::parse(&format!("direct={command}"), |_| None).map_err(anyhow::Error::msg)?,
    )
    .await
    .map_err(anyhow::Error::msg)?;
    let gateway =
        Gateway::start_with(settings, &["--mcp-upstream", &format!("files={command}")]).await?;
    let token = gateway.agent("proxy-bench").await?;
    let read = json!({ "path": small });

    let samples = if settings.quick { 50 } else { 300 };
    let mut m = Measured {
        direct: Vec::new(),
        through: Vec::new(),
        overhead: Vec::new(),
        preview: Vec::new(),
    };
    for n in 0..samples + 10 {
        let started = Instant::now();
        let answer = upstream
            .call(
                "read_text_file",
                read.as_object().cloned().unwrap_or_default(),
                Duration::from_secs(10),
            )
            .await
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let direct = ns(started.elapsed());
        ensure!(answer.is_error != Some(true), "the direct read failed");
        let started = Instant::now();
        invoke(&gateway, &token, &read).await?;
        let through = ns(started.elapsed());
        // The first calls warm both paths up.
        if n >= 10 {
            m.direct.push(direct);
            m.through.push(through);
            m.overhead.push(through - direct);
        }
    }

    let content = Value::String(text(ONE_MB, 'b'));
    for n in 0..samples / 5 + 2 {
        let params = json!({ "path": big, "content": content });
        let started = Instant::now();
        let plan = gateway
            .api
            .dry_run(&token, "files.write_file", &params)
            .await?;
        let took = ns(started.elapsed());
        ensure!(
            plan["executable"] == true,
            "the preview was blocked: {}",
            plan["validation"]
        );
        if n >= 2 {
            m.preview.push(took);
        }
    }
    Ok(m)
}

/// `files.read_text_file` invoked over HTTP, as an agent would.
async fn invoke(gateway: &Gateway, token: &str, params: &Value) -> anyhow::Result<()> {
    let response = gateway
        .api
        .http
        .post(format!(
            "{}/v1/capabilities/files.read_text_file/invoke",
            gateway.api.url
        ))
        .bearer_auth(token)
        .json(&json!({ "params": params }))
        .send()
        .await?;
    let status = response.status();
    let body: Value = response.json().await.context("the invoke's answer")?;
    if status != 200 || body["success"] != true {
        bail!("the invoke answered {status}: {body}");
    }
    Ok(())
}

/// `size` bytes of lines of `letter`.
fn text(size: usize, letter: char) -> String {
    let line = format!("{}\n", letter.to_string().repeat(79));
    line.repeat(size / line.len())
}
