//! The `countersign-gateway` binary: admin commands print their secret last, serve answers.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_countersign-gateway");

fn last_line(args: &[&str]) -> String {
    let output = Command::new(BIN).args(args).output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    stdout.lines().last().unwrap_or_default().to_owned()
}

#[test]
fn admin_commands_print_secrets_and_serve_accepts_them() {
    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("gw.db").display());
    let code = last_line(&[
        "approvers",
        "invite",
        "--database",
        &database,
        "--name",
        "Dana",
    ]);
    assert!(code.starts_with("cse_") && code.len() > 40, "{code}");
    let token = last_line(&["agents", "add", "--database", &database, "--name", "ops"]);
    assert!(token.starts_with("csa_") && token.len() > 40, "{token}");
    let refused = Command::new(BIN)
        .args(["agents", "add", "--database", &database, "--name", "ops"])
        .output()
        .unwrap();
    assert!(!refused.status.success(), "a second agent named ops");

    let mut server = Command::new(BIN)
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--database",
            &database,
            "--demo",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{line}");

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let info: serde_json::Value = runtime.block_on(async {
        reqwest::Client::new()
            .get(format!("{url}/v1/gateway"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    });
    server.kill().unwrap();
    server.wait().unwrap();
    assert!(info["gateway_id"].as_str().unwrap().starts_with("gw_"));
    assert_eq!(info["interface_version"], "1.0");
}
