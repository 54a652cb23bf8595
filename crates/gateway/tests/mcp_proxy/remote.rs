//! An upstream reached over streamable HTTP (`NAME=URL`): a server on the official Python SDK
//! that answers only a request with its bearer token, which the gateway takes from
//! `COUNTERSIGN_MCP_<NAME>_TOKEN` and sends to that server alone.

use std::path::Path;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use countersign_mcp_proxy::{Spec, Upstream};
use serde_json::json;

use super::{approve_by, flags, registry, sdk_python};
use crate::common::{assert_error, Gateway};

#[tokio::test]
async fn a_remote_upstream_gets_its_token_and_its_write_waits_for_a_signed_approval() {
    let root = tempfile::tempdir().unwrap();
    let port_file = root.path().join("port");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_upstreams/http_server.py");
    let _server = tokio::process::Command::new(sdk_python())
        .arg(&script)
        .arg(root.path())
        .arg("s3cret-token")
        .arg(&port_file)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let port = loop {
        match std::fs::read_to_string(&port_file) {
            Ok(port) if !port.is_empty() => break port,
            _ if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(50)).await,
            _ => panic!("the HTTP server never said its port"),
        }
    };
    let url = format!("remote=http://127.0.0.1:{port}/mcp");
    let token = |variable: &str| {
        (variable == "COUNTERSIGN_MCP_REMOTE_TOKEN").then(|| "s3cret-token".to_owned())
    };

    // With its token the gateway connects; without it the server answers nothing, and a
    // gateway does not start with it.
    let upstream = Upstream::connect(Spec::parse(&url, token).unwrap())
        .await
        .unwrap();
    let without = Upstream::connect(Spec::parse(&url, |_| None).unwrap()).await;
    assert!(without.is_err(), "connected without the token");
    let gw = Gateway::serving(Default::default(), registry(&[upstream])).await;
    let plan = gw
        .preview("remote.post_note", json!({"text": "ship it"}))
        .await;
    assert_eq!(plan["would_require_approval"], true, "{plan}");
    // Open-world, and no preview of its own: flagged external and uncertain.
    let flags = flags(&plan);
    assert!(
        flags.contains(&"external".to_owned()) && flags.contains(&"uncertain".to_owned()),
        "{flags:?}"
    );
    let board = root.path().join("board.log");
    assert_error(&gw.execute(&plan).await, "approval_required", 409);
    assert!(!board.exists());
    let approver = gw.enroll("Ana").await;
    approve_by(&gw, &plan, &[&approver]).await;
    let ran = gw.execute(&plan).await;
    assert_eq!(ran.status, StatusCode::OK, "{}", ran.body);
    assert_eq!(ran.body["provider"], "remote");
    assert_eq!(std::fs::read_to_string(&board).unwrap(), "ship it\n");
}
