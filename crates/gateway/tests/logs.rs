//! `serve --log-format json`: every line on standard error is one JSON object, and a line written
//! while a request is served carries that request's trace id, the one its answer names.

use std::process::Stdio;

use crate::cli::{last_line, serving_logged};
use crate::common::JsonReply;

#[test]
fn json_logs_are_one_object_a_line_with_the_request_s_trace_id() {
    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("gw.db").display());
    let token = last_line(&["agents", "add", "--database", &database, "--name", "ops"]);
    let (mut server, line) = serving_logged(
        &[
            "--addr",
            "127.0.0.1:0",
            "--database",
            &database,
            "--log-format",
            "json",
        ],
        &[("RUST_LOG", "info,sqlx::query=debug")],
        Stdio::piped(),
    );
    let url = line.trim().rsplit(' ').next().unwrap().to_owned();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let refused = runtime.block_on(
        reqwest::Client::new()
            .get(format!("{url}/v1/plans/plan_0000000000000000"))
            .bearer_auth(&token)
            .json_reply(),
    );
    let trace_id = refused["metadata"]["trace_id"].as_str().unwrap().to_owned();
    assert!(trace_id.starts_with("trc_"), "{refused}");
    server.kill().unwrap();
    let output = server.wait_with_output().unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    let lines: Vec<serde_json::Value> = stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: not JSON: {l}")))
        .collect();
    assert!(lines
        .iter()
        .all(|l| l["timestamp"].is_string() && l["level"].is_string()));
    let during = lines
        .iter()
        .filter(|l| l["span"]["countersign.trace_id"] == trace_id.as_str())
        .count();
    assert!(during > 0, "no line names {trace_id}:\n{stderr}");
    assert!(!stderr.contains(&token), "the token is in the log");
}
