//! A token revoked by another process (the admin commands on the SQLite store a gateway serves):
//! the gateway serves reads the caller it found a moment ago (`countersign_api::CALLER_MAX_AGE`),
//! so the revocation stops reads within that bound and writes at once.

use std::time::{Duration, Instant};

use countersign_api::CALLER_MAX_AGE;
use serde_json::json;

use crate::cli::{last_line, serving, BIN};

#[test]
fn a_token_revoked_elsewhere_writes_nothing_and_stops_reading_within_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("gw.db").display());
    let token = last_line(&["agents", "add", "--database", &database, "--name", "ops"]);
    let (server, line) = serving(
        &[
            "--addr",
            "127.0.0.1:0",
            "--database",
            &database,
            "--demo",
            "--rate-limit",
            "off",
        ],
        &[],
    );
    // Killed however the test ends: a server left running would hold the runner's pipes.
    let _server = Stopped(server);
    let url = line.trim().rsplit(' ').next().unwrap().to_owned();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let http = reqwest::Client::new();
    let read = || async {
        http.get(format!("{url}/v1/gateway"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    };
    let write = || async {
        http.post(format!(
            "{url}/v1/capabilities/projects.settings.update/dry_run"
        ))
        .bearer_auth(&token)
        .json(&json!({"params": {"project": "prj_184", "retention_days": 14}}))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
    };
    let outcome = runtime.block_on(async {
        // Read twice: the second is served the caller the first found.
        assert_eq!((read().await, read().await), (200, 200));
        let revoked = std::process::Command::new(BIN)
            .args([
                "revoke-agent",
                "--database",
                &database,
                "--agent",
                "agt_ops",
            ])
            .status()
            .unwrap();
        assert!(revoked.success());
        let at = Instant::now();
        assert_eq!(write().await, 401, "a write asks the store");
        loop {
            let status = read().await;
            if status == 401 {
                return at.elapsed();
            }
            assert_eq!(status, 200);
            assert!(
                at.elapsed() < CALLER_MAX_AGE + Duration::from_secs(2),
                "still read {:?} after the revocation",
                at.elapsed()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    assert!(outcome <= CALLER_MAX_AGE + Duration::from_secs(2));
}

struct Stopped(std::process::Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
