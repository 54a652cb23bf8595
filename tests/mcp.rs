//! A real MCP client, the official Python SDK (`tests/mcp/agent.py`), against a live gateway over
//! both transports: it lists the tools, calls one that needs approval and waits; this side
//! approves with the console core; it executes, sees a stale plan refused with the revision that
//! moved, and a wrong token refused. The effect is then read back from the gateway's audit.
//! Needs the venv `make mcp-venv` makes, the built `countersign-gateway`, and a Secret Service
//! (run under tests/with-keyring.sh, as `make test` does).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use countersign_console::signing::signer::Signer;
use countersign_console::Console;
use countersign_e2e::TestGateway;
use countersign_embedded::default_registry;
use countersign_proto::describe::DryRunMode;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

const SETTINGS: &str = "projects.settings.update";

fn python() -> PathBuf {
    let path = std::env::var_os("COUNTERSIGN_MCP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/mcp-venv/bin/python")
        });
    assert!(
        path.exists(),
        "{} is missing: make mcp-venv makes it (make test does)",
        path.display()
    );
    path
}

/// Runs the agent script with `args`, approving with `console` the plans it announces, and
/// returns every event it reported.
async fn run_agent(console: &mut Console, args: &[&str]) -> anyhow::Result<Vec<Value>> {
    run_script(console, "agent.py", args).await
}

/// Runs `script` of `tests/mcp` with `args`; on its `planned` event, approves with `console`
/// each plan the event names (a tool call's answer with a `plan_id`).
async fn run_script(
    console: &mut Console,
    script: &str,
    args: &[&str],
) -> anyhow::Result<Vec<Value>> {
    drive(script, args, async |event: &Value| {
        if event["event"] != "planned" {
            return Ok(());
        }
        // Give the agent time to block in countersign_wait, so the approval is what wakes it.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let plans = event
            .as_object()
            .into_iter()
            .flat_map(|fields| fields.values());
        let plans: Vec<&str> = plans
            .filter_map(|call| call["structured"]["plan_id"].as_str())
            .collect();
        anyhow::ensure!(!plans.is_empty(), "no plan in {event}");
        for plan_id in plans {
            let view = console.plan_view(plan_id).await?;
            console.approve(plan_id, &view.digest, None, &Yes).await?;
        }
        Ok(())
    })
    .await
}

/// Runs `script` of `tests/mcp` with `args`, handing each event it reports (one JSON object a
/// line) to `on_event` as it comes; every event, once the script has exited successfully.
pub(crate) async fn drive(
    script: &str,
    args: &[&str],
    mut on_event: impl AsyncFnMut(&Value) -> anyhow::Result<()>,
) -> anyhow::Result<Vec<Value>> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("mcp")
        .join(script);
    let mut child = Command::new(python())
        .arg(script)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()?;
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut events = Vec::new();
    while let Some(line) = lines.next_line().await? {
        let event: Value = serde_json::from_str(&line)
            .map_err(|e| anyhow::anyhow!("the agent printed {line:?}: {e}"))?;
        on_event(&event).await?;
        events.push(event);
    }
    let status = child.wait().await?;
    anyhow::ensure!(status.success(), "the agent failed: {status}");
    Ok(events)
}

pub(crate) fn event<'a>(events: &'a [Value], name: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["event"] == name)
        .unwrap_or_else(|| panic!("no {name} event in {events:#?}"))
}

fn error_code(answer: &Value) -> &str {
    assert_eq!(answer["is_error"], true, "{answer}");
    assert_eq!(answer["structured"]["success"], false, "{answer}");
    assert_eq!(answer["structured"]["provider"], "system");
    answer["structured"]["error"]["code"].as_str().unwrap_or("")
}

/// Everything both transports must show; returns the executed plan's id.
fn assert_scenario(events: &[Value]) -> String {
    let tools = event(events, "tools")["tools"].as_array().unwrap();
    let tool = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no tool {name}"))
    };
    for capability in default_registry().all() {
        // The capability's own schema, and beside its params the two reserved arguments of a
        // tool that previews.
        let mut schema = tool(capability.id())["input_schema"].clone();
        let previews = capability.describe().dry_run != DryRunMode::NotApplicable;
        for reserved in [
            "countersign_expected_revisions",
            "countersign_idempotency_key",
        ] {
            let taken = schema["properties"]
                .as_object_mut()
                .and_then(|p| p.remove(reserved));
            assert_eq!(taken.is_some(), previews, "{} {reserved}", capability.id());
        }
        assert_eq!(
            schema,
            capability.describe().input_schema,
            "{} keeps its input schema",
            capability.id()
        );
    }
    tool("countersign_execute");
    tool("countersign_wait");
    let hints = &tool("groups.members.remove")["annotations"];
    assert_eq!(hints["destructiveHint"], true, "{hints}");
    assert_eq!(hints["openWorldHint"], true, "{hints}");
    assert_eq!(
        tool("wallet.agent_budget.guard.check")["annotations"]["readOnlyHint"],
        true
    );
    assert_eq!(tool(SETTINGS)["annotations"]["destructiveHint"], false);

    let guard = event(events, "guard");
    assert_eq!(guard["is_error"], false, "{guard}");
    assert_eq!(guard["structured"]["success"], true);
    assert_eq!(guard["structured"]["metadata"]["guard"]["allowed"], true);

    let invalid = event(events, "invalid");
    assert_eq!(error_code(invalid), "validation_error");
    assert_eq!(
        invalid["structured"]["error"]["details"]["violations"][0]["schema_pointer"],
        "/params/retention_days"
    );

    let planned = event(events, "planned");
    let first = &planned["first"];
    assert_eq!(first["is_error"], false, "{first}");
    let plan_id = first["structured"]["plan_id"].as_str().unwrap().to_owned();
    assert!(plan_id.starts_with("plan_"));
    assert_eq!(first["structured"]["status"], "pending_approval");
    assert_eq!(first["structured"]["approvals"]["required"], 1);
    assert!(first["structured"]["expires_at"].is_string());
    let plan = &first["structured"]["plan"];
    assert_eq!(plan["effects"][0]["changes"][0]["after"], 14, "{plan}");
    assert!(plan["estimated_cost"]["currency"] == "credits" && plan["validation"].is_array());
    let text = first["text"].as_str().unwrap();
    assert!(
        text.starts_with(&format!(
            "Waiting for approval: plan {plan_id} needs 1 approval"
        )) && text.contains("countersign_wait"),
        "{text}"
    );

    assert_eq!(error_code(event(events, "early")), "approval_required");
    let waited: Vec<&Value> = events.iter().filter(|e| e["event"] == "waited").collect();
    assert_eq!(waited.len(), 2);
    for w in waited {
        assert_eq!(w["is_error"], false, "{w}");
        assert_eq!(w["structured"]["status"], "approved", "{w}");
        assert_eq!(
            w["structured"]["approvals"]["received"][0]["display_name"],
            "Dana"
        );
    }

    let executed = event(events, "executed");
    assert_eq!(executed["is_error"], false, "{executed}");
    assert_eq!(executed["structured"]["success"], true);
    assert_eq!(executed["structured"]["metadata"]["plan_id"], plan_id);

    let stale = event(events, "stale");
    assert_eq!(error_code(stale), "plan_stale");
    let moved = &stale["structured"]["error"]["details"]["moved"][0];
    assert_eq!(moved["resource"], "projects/prj_184", "{stale}");
    assert_ne!(moved["planned"], moved["current"]);

    assert_eq!(error_code(event(events, "unknown_tool")), "not_found");
    assert_eq!(event(events, "wrong_token")["refused"], true);
    event(events, "done");
    plan_id
}

/// The execution the agent asked for over MCP, as the gateway's audit and domain table hold it.
async fn assert_audited(gateway: &TestGateway, agent_token: &str, plan_id: &str) {
    let audit: Value = reqwest::Client::new()
        .get(format!("{}/v1/audit?plan_id={plan_id}", gateway.url))
        .bearer_auth(agent_token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(audit["decisions"].as_array().unwrap().len(), 1, "{audit}");
    let executions = audit["executions"].as_array().unwrap();
    assert_eq!(executions.len(), 1, "{audit}");
    assert_eq!(
        executions[0]["journal"][0]["changes"][0],
        json!({"path": "/retention_days", "before": 30, "after": 14})
    );
    assert_eq!(gateway.retention_days("prj_184").await.unwrap(), 14);
}

/// A new agent's token, and the console of Dana, enrolled at `gateway`.
pub(crate) async fn agent_and_console(gateway: &TestGateway) -> anyhow::Result<(String, Console)> {
    let (_, token) =
        countersign_engine::accounts::add_agent(&gateway.state.store, "mcp", Some("usr_lead"))
            .await?;
    Ok((token, enrolled_console(gateway).await?))
}

async fn enrolled_console(gateway: &TestGateway) -> anyhow::Result<Console> {
    assert!(
        std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some(),
        "no D-Bus session: run this test through tests/with-keyring.sh (make test does)"
    );
    let code = gateway.invite("Dana").await?;
    Ok(Console::enroll(&gateway.url, &code, "Dana").await?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_agent_over_streamable_http_waits_for_a_signed_approval() -> anyhow::Result<()> {
    let gateway = TestGateway::start().await?;
    let (token, mut console) = agent_and_console(&gateway).await?;
    let url = format!("{}/mcp", gateway.url);
    let events = tokio::time::timeout(
        Duration::from_secs(180),
        run_agent(&mut console, &["http", &url, &token, "csa_wrong"]),
    )
    .await??;
    let plan_id = assert_scenario(&events);
    // The SDK reports a refused connection without its status; this is what it was refused with.
    let refused = reqwest::Client::new()
        .post(&url)
        .bearer_auth("csa_wrong")
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await?;
    assert_eq!(refused.status().as_u16(), 401);
    let body: Value = refused.json().await?;
    assert_eq!(body["error"]["code"], "unauthenticated", "{body}");
    assert_audited(&gateway, &token, &plan_id).await;
    Signer::forget(&gateway.state.gateway_id)?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_agent_over_stdio_waits_for_a_signed_approval() -> anyhow::Result<()> {
    let gateway = TestGateway::start().await?;
    let (token, mut console) = agent_and_console(&gateway).await?;
    let binary = countersign_e2e::gateway_binary();
    let binary = binary.to_str().unwrap();
    let events = tokio::time::timeout(
        Duration::from_secs(180),
        run_agent(
            &mut console,
            &["stdio", binary, &gateway.database, &token, "csa_wrong"],
        ),
    )
    .await??;
    let plan_id = assert_scenario(&events);
    let stderr = event(&events, "wrong_token")["stderr"].as_str().unwrap();
    assert!(stderr.contains("unauthenticated"), "{stderr}");
    assert_audited(&gateway, &token, &plan_id).await;
    Signer::forget(&gateway.state.gateway_id)?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_agent_writes_through_a_published_server_only_after_a_signed_approval(
) -> anyhow::Result<()> {
    let root = tempfile::tempdir()?;
    let file = root.path().join("notes.txt");
    std::fs::write(&file, "before\n")?;
    let gateway = TestGateway::before_files(root.path()).await?;
    let (token, mut console) = agent_and_console(&gateway).await?;
    let url = format!("{}/mcp", gateway.url);
    let path = file.display().to_string();
    let events = tokio::time::timeout(
        Duration::from_secs(180),
        run_script(&mut console, "proxied_agent.py", &[&url, &token, &path]),
    )
    .await??;

    // The server's tools, under its name; the read ran at once.
    let tools = &event(&events, "tools")["tools"];
    assert!(tools["files.write_file"].is_object(), "{tools}");
    for name in ["write_file", "read_text_file", "edit_file"] {
        assert!(tools.get(name).is_none(), "{name} un-namespaced in {tools}");
    }
    let around = event(&events, "around");
    assert_eq!(around["is_error"], true, "{around}");
    let read = event(&events, "read");
    assert_eq!(read["is_error"], false, "{read}");
    assert_eq!(read["structured"]["content"], "before\n", "{read}");
    // The write waited for Dana, showing the text before and after; then it ran, once.
    let write = &event(&events, "planned")["write"];
    assert_eq!(write["structured"]["status"], "pending_approval", "{write}");
    let change = &write["structured"]["plan"]["effects"][0]["changes"][0];
    assert_eq!(change["before"], "before\n", "{write}");
    assert_eq!(change["after"], "as signed\n");
    assert_eq!(event(&events, "waited")["structured"]["status"], "approved");
    let executed = event(&events, "executed");
    assert_eq!(executed["is_error"], false, "{executed}");
    assert_eq!(executed["structured"]["provider"], "files");
    assert_eq!(std::fs::read_to_string(&file)?, "as signed\n");
    event(&events, "done");
    Signer::forget(&gateway.state.gateway_id)?;
    Ok(())
}

/// The approver's yes to every confirmation: these tests are about what happens after it.
pub(crate) struct Yes;

impl countersign_console::Confirm for Yes {
    fn confirm(&self, _: &str, _: &str, _: &[String]) -> bool {
        true
    }
}
