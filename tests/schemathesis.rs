//! Schema-driven tests of the gateway's HTTP API: schemathesis (in the throw-away venv `make
//! schema-venv` makes) reads `GET /v1/openapi.json` from a live gateway and sends what it
//! generates from it, once with an agent's token and once with an approver's. Every answer must
//! match the description, none may be a 5xx, and none may hang (a request timeout fails it).
//! A pending plan exists, so the queue, plan and wallet routes have something to answer about.

use std::path::PathBuf;
use std::process::Command;

use countersign_e2e::{enroll, TestGateway};
use serde_json::json;

fn schemathesis() -> PathBuf {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/schema-venv/bin/schemathesis");
    assert!(
        path.exists(),
        "{} is missing: make schema-venv makes it (make test does)",
        path.display()
    );
    path
}

fn run(url: &str, token: &str, who: &str) {
    // Its caches go to a directory of their own, not into the work tree.
    let scratch = tempfile::tempdir().unwrap();
    let output = Command::new(schemathesis())
        .current_dir(scratch.path())
        .arg("run")
        .arg(format!("{url}/v1/openapi.json"))
        .args(["--header", &format!("Authorization: Bearer {token}")])
        .args([
            "--checks",
            "not_a_server_error,response_schema_conformance,content_type_conformance",
        ])
        // An event stream answers for as long as it is read: a hang by design, tested elsewhere.
        .args(["--exclude-path", "/v1/events"])
        .args(["--phases", "examples,coverage,fuzzing"])
        .args([
            "--max-examples",
            "40",
            "--request-timeout",
            "20",
            "--seed",
            "11",
        ])
        .output()
        .expect("schemathesis runs");
    let report = String::from_utf8_lossy(&output.stdout);
    println!("{who}:\n{report}");
    assert!(
        output.status.success(),
        "schemathesis with the {who} token found failures:\n{report}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_requests_get_answers_that_match_the_description() -> anyhow::Result<()> {
    let gateway = TestGateway::start().await?;
    let agent = gateway.agent("schema-agent").await?;
    agent
        .dry_run(
            "projects.settings.update",
            json!({"project": "prj_184", "retention_days": 21}),
        )
        .await?;
    let approver = enroll(&gateway.url, &gateway.invite("Kim").await?).await;
    let url = gateway.url.clone();
    let agent_token = agent.token().to_owned();
    tokio::task::spawn_blocking(move || {
        run(&url, &agent_token, "agent");
        run(&url, &approver.token, "approver");
    })
    .await?;
    Ok(())
}
