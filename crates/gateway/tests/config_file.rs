//! `serve --config FILE` and `config check FILE` as an operator runs them: the binary, a file,
//! the environment and flags.

use std::process::Command;

use crate::cli::{last_line, serving, BIN};
use crate::common::JsonReply;

#[test]
fn serve_runs_on_a_config_file_with_the_environment_and_flags_over_it() {
    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("gw.db").display());
    let token = last_line(&["agents", "add", "--database", &database, "--name", "ops"]);
    let file = dir.path().join("gateway.toml");
    std::fs::write(
        &file,
        format!(
            "# the gateway\naddr = \"127.0.0.1:0\"\ndatabase = \"{database}\"\n\
             name = \"From the file\"\nmax_waits = 3\n"
        ),
    )
    .unwrap();
    let file = file.to_str().unwrap();

    let check = Command::new(BIN)
        .args(["config", "check", file])
        .env("COUNTERSIGN_MAX_WAITS", "2")
        .output()
        .unwrap();
    assert!(check.status.success(), "{check:?}");
    let report = String::from_utf8(check.stdout).unwrap();
    for line in [
        "name = \"From the file\"  # the file",
        "max_waits = 2  # COUNTERSIGN_MAX_WAITS",
        "max_streams = 8  # default",
    ] {
        assert!(
            report.lines().any(|l| l == line),
            "no `{line}` in\n{report}"
        );
    }

    let (mut server, line) = serving(
        &["--config", file, "--name", "From the flag"],
        &[("COUNTERSIGN_NAME", "From the environment")],
    );
    let url = line.trim().rsplit(' ').next().unwrap().to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{line}");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (info, ready) = runtime.block_on(async {
        let client = reqwest::Client::new();
        let info: serde_json::Value = client
            .get(format!("{url}/v1/gateway"))
            .bearer_auth(&token)
            .json_reply()
            .await;
        let ready = client.get(format!("{url}/readyz")).send().await.unwrap();
        (info, ready.status())
    });
    server.kill().unwrap();
    server.wait().unwrap();
    assert_eq!(info["name"], "From the flag");
    assert_eq!(ready, 200);
}

#[test]
fn a_config_file_with_an_unknown_key_stops_check_and_serve_naming_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gateway.toml");
    std::fs::write(
        &file,
        "database = \"sqlite::memory:\"\naddr = \"127.0.0.1:0\"\nmax_pending = 3\n",
    )
    .unwrap();
    let file = file.to_str().unwrap();
    for args in [
        &["config", "check", file][..],
        &["serve", "--config", file][..],
    ] {
        let output = Command::new(BIN).args(args).output().unwrap();
        assert!(!output.status.success(), "{args:?} succeeded");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("line 3") && stderr.contains("unknown field `max_pending`"),
            "{args:?}: {stderr}"
        );
        assert!(output.stdout.is_empty(), "{args:?} printed before failing");
    }
}
