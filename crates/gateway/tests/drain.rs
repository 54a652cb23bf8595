//! A gateway that stops (docs/operations.md, "Stopping"): its event streams and MCP waits are
//! told to come back, a provider call still out at the drain's deadline is recorded as of
//! unknown outcome and answered so, and `serve` exits 0 on SIGTERM. Two instances on one
//! PostgreSQL, one stopped during a storm of decisions: `instances::drain`.

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use countersign_providers::local::LocalProviders;
use serde_json::{json, Value};

use crate::common::sse::Events;
use crate::common::{retention, Gateway, JsonReply, RETENTION};

const SLOW_IMAGE: &str = "image.generate";

fn slow_image() -> Value {
    json!({"model": "black-forest-labs/flux-schnell", "prompt": "[[slow]] an owl"})
}

#[tokio::test]
async fn a_draining_gateway_tells_its_streams_to_reconnect_and_ends_them() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let plan = gw.preview(RETENTION, retention("prj_184", 14)).await;
    let mut stream = Events::open(&gw, &dana.token, Some("0")).await;
    let created = stream.next(false).await;
    assert_eq!(created.event.as_deref(), Some("plan.created"));
    gw.state.shutdown.drain();
    let goodbye = stream.next(false).await;
    assert_eq!(goodbye.event.as_deref(), Some("shutdown"), "{goodbye:?}");
    assert_eq!(goodbye.retry.as_deref(), Some("1000"));
    let said: Value = serde_json::from_str(&goodbye.data).unwrap();
    assert_eq!(said["revision"], created.id.unwrap().as_str());
    assert!(stream.ends_within(Duration::from_secs(5)).await);
    assert!(plan["plan_id"].is_string());
}

#[tokio::test]
async fn a_draining_gateway_answers_its_mcp_waits_so_that_the_agent_asks_again() {
    let gw = Arc::new(Gateway::new().await);
    let plan = gw.preview(RETENTION, retention("prj_184", 14)).await;
    let wait = json!({"plan_id": plan["plan_id"], "timeout_seconds": 60});
    let waiting = tokio::spawn({
        let gw = gw.clone();
        async move { gw.tool(&gw.agent, "countersign_wait", wait).await }
    });
    let agent = plan["caller"]["agent_id"].as_str().unwrap();
    while gw.state.waits.open(agent) < 1 {
        assert!(!waiting.is_finished(), "the wait ended before the drain");
        tokio::task::yield_now().await;
    }
    gw.state.shutdown.drain();
    let answer = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("the wait is answered when the gateway drains")
        .unwrap();
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("call countersign_wait again"), "{text}");
}

#[tokio::test]
async fn a_provider_call_out_at_the_deadline_is_recorded_and_answered_as_of_unknown_outcome() {
    let local = LocalProviders::start().await.unwrap();
    let mut providers = local.providers();
    providers.poll_every = Duration::from_millis(20);
    let gw = Arc::new(Gateway::with_providers(providers).await);
    let plan = gw.preview(SLOW_IMAGE, slow_image()).await;
    let plan_id = plan["plan_id"].as_str().unwrap().to_owned();
    let invoke = tokio::spawn({
        let (gw, plan) = (gw.clone(), plan.clone());
        async move { gw.execute(&plan).await }
    });
    let in_flight = "SELECT COUNT(*) FROM plans WHERE id = $1 AND runner IS NOT NULL";
    while gw.count(in_flight, &plan_id).await == 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    gw.state.shutdown.drain();
    // Draining alone cuts nothing short: the call is still out.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!invoke.is_finished());
    gw.state.shutdown.pass_deadline();
    let reply = tokio::time::timeout(Duration::from_secs(10), invoke)
        .await
        .expect("the invoke is answered at the deadline")
        .unwrap();
    assert_eq!(reply.status, StatusCode::BAD_GATEWAY, "{}", reply.body);
    assert_eq!(reply.body["error"]["code"], "provider_unavailable");
    assert_eq!(reply.body["error"]["details"]["outcome"], "unknown");
    assert_eq!(reply.body["error"]["retryable"], false);
    let (status, execution): (String, String) =
        sqlx::query_as("SELECT status, execution FROM plans WHERE id = $1")
            .bind(&plan_id)
            .fetch_one(gw.state.store.pool())
            .await
            .unwrap();
    assert_eq!(status, "failed");
    let execution: Value = serde_json::from_str(&execution).unwrap();
    assert_eq!(execution["in_flight"], Value::Null, "{execution}");
    assert_eq!(
        execution["result"]["error"]["details"]["outcome"],
        "unknown"
    );
    assert_eq!(
        execution["charged"]["amount"],
        plan["estimated_cost"]["amount_max"]
    );
    let again = gw.execute(&plan).await;
    assert_eq!(
        again.status,
        StatusCode::CONFLICT,
        "never run twice: {}",
        again.body
    );
}

#[test]
fn serve_exits_0_on_sigterm_having_answered_the_call_it_cut_short() {
    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("gw.db").display());
    let token = crate::cli::last_line(&["agents", "add", "--database", &database, "--name", "ops"]);
    let (mut server, line) = crate::cli::serving(
        &["--addr", "127.0.0.1:0", "--database", &database],
        &[
            ("COUNTERSIGN_DEMO", "true"),
            ("COUNTERSIGN_DRAIN_SECONDS", "1"),
        ],
    );
    let url = line.trim().rsplit(' ').next().unwrap().to_owned();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = reqwest::Client::new();
    let plan = runtime.block_on(
        client
            .post(format!("{url}/v1/capabilities/{SLOW_IMAGE}/dry_run"))
            .bearer_auth(&token)
            .json(&json!({ "params": slow_image() }))
            .json_reply(),
    );
    let invoke = runtime.spawn(
        client
            .post(format!("{url}/v1/capabilities/{SLOW_IMAGE}/invoke"))
            .bearer_auth(&token)
            .json(&json!({ "plan_id": plan["plan_id"] }))
            .send(),
    );
    runtime.block_on(async {
        let store = countersign_engine::Store::open(&database).await.unwrap();
        let in_flight = "SELECT COUNT(*) FROM plans WHERE id = $1 AND runner IS NOT NULL";
        loop {
            let n: i64 = sqlx::query_scalar(in_flight)
                .bind(plan["plan_id"].as_str())
                .fetch_one(store.pool())
                .await
                .unwrap();
            if n > 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let signalled = std::process::Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .unwrap();
    assert!(signalled.success());
    let answer = runtime.block_on(async {
        let reply = invoke.await.unwrap().expect("the agent is answered");
        (reply.status(), reply.json::<Value>().await.unwrap())
    });
    assert_eq!(answer.0, 502, "{}", answer.1);
    assert_eq!(answer.1["error"]["details"]["outcome"], "unknown");
    let exit = server.wait().unwrap();
    assert_eq!(exit.code(), Some(0), "{exit:?}");
}
