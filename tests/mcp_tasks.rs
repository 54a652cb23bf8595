//! MCP clients that wait the standard way (issue 48): the official Python SDK
//! (`tests/mcp/task_agent.py`) declaring the tasks extension and URL elicitation, over both
//! transports. Each call that needs approval asks the client's user to open the plan's
//! `countersign://` link, then answers with a task; this side approves, rejects or expires the
//! plan, and the task completes with the envelope, the rejection's reason or the expiry. A
//! cancelled task leaves its plan to its approver. Clients that declare neither, at 2026-07-28
//! and at the handshake-era version, get the answer they always got.
//! Needs the venv `make mcp-venv` makes and a Secret Service (tests/with-keyring.sh).

use std::time::Duration;

use countersign_console::signing::signer::Signer;
use countersign_console::Console;
use countersign_e2e::TestGateway;
use serde_json::Value;

use crate::mcp::{agent_and_console, drive, event, Yes};

const REASON: &str = "Retention under 30 days breaks the audit rule";

/// Runs the task agent with `args`, bringing about on each `task` event what it wants of the
/// task's plan, and approving each plan a `decide` event names; returns every event.
async fn run(
    gateway: &TestGateway,
    console: &Console,
    args: &[&str],
) -> anyhow::Result<Vec<Value>> {
    drive("task_agent.py", args, async |event: &Value| {
        let plan_id = event["task_id"].as_str().or(event["plan_id"].as_str());
        let wants = match event["event"].as_str() {
            Some("task") => event["wants"].as_str(),
            Some("decide") => Some("approve"),
            _ => None,
        };
        let (Some(plan_id), Some(wants)) = (plan_id, wants) else {
            return Ok(());
        };
        let digest = || async { anyhow::Ok(console.plan_view(plan_id).await?.digest) };
        match wants {
            "approve" => drop(
                console
                    .approve(plan_id, &digest().await?, None, &Yes)
                    .await?,
            ),
            "reject" => drop(
                console
                    .reject(plan_id, &digest().await?, REASON.into())
                    .await?,
            ),
            "expire" => gateway.expire(plan_id).await?,
            _ => {}
        }
        Ok(())
    })
    .await
}

fn called<'a>(events: &'a [Value], key: &str, value: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["event"] == "called" && e[key] == value)
        .unwrap_or_else(|| panic!("no call with {key} {value} in {events:#?}"))
}

fn task_end<'a>(events: &'a [Value], task_id: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["event"] == "task_end" && e["task_id"] == task_id)
        .unwrap_or_else(|| panic!("task {task_id} never ended in {events:#?}"))
}

/// What both transports show; `back_channel`: whether a 2025-11-25 session can be sent an
/// elicitation (stdio) or not (stateless HTTP).
async fn assert_waits(gateway: &TestGateway, events: &[Value], back_channel: bool) {
    let tasks: Vec<&Value> = events.iter().filter(|e| e["event"] == "task").collect();
    assert_eq!(tasks.len(), 4, "{events:#?}");
    let elicited: Vec<&Value> = events.iter().filter(|e| e["event"] == "elicited").collect();
    assert_eq!(elicited.len(), 4 + usize::from(back_channel), "{events:#?}");
    for (task, elicited) in tasks.iter().zip(&elicited) {
        // One elicitation per plan, before its task: the plan's link and its consequence.
        let task_id = task["task_id"].as_str().unwrap();
        assert!(task_id.starts_with("plan_"), "{task}");
        assert_eq!(elicited["mode"], "url");
        assert_eq!(elicited["url"], format!("countersign://plan/{task_id}"));
        let message = elicited["message"].as_str().unwrap();
        assert!(message.contains("Change retention_days from"), "{message}");
        assert!(message.contains(task_id), "{message}");
        assert_eq!(task["status"], "working");
        let waits = task["message"].as_str().unwrap();
        assert!(
            waits.starts_with(&format!("Plan {task_id} waits on 1 approver;")),
            "{waits}"
        );
    }
    assert_eq!(event(events, "connected")["protocol_version"], "2026-07-28");

    // Approved: the task ran the plan, and completed with seed 002's envelope.
    let approved = called(events, "wants", "approve");
    assert_eq!(approved["is_error"], false, "{approved}");
    assert_eq!(
        approved["elicited"], 1,
        "declining the link changed nothing"
    );
    let envelope = &approved["structured"];
    assert_eq!(envelope["success"], true, "{approved}");
    assert_eq!(envelope["metadata"]["plan_id"], tasks[0]["task_id"]);
    assert_eq!(gateway.retention_days("prj_184").await.unwrap(), 14);
    assert_eq!(
        task_end(events, tasks[0]["task_id"].as_str().unwrap())["status"],
        "completed"
    );

    // Rejected: the approver's name and reason, and nothing ran.
    let rejected = called(events, "wants", "reject");
    assert_eq!(rejected["is_error"], true, "{rejected}");
    let error = &rejected["structured"]["error"];
    assert_eq!(error["code"], "plan_not_pending", "{rejected}");
    let text = error["message"].as_str().unwrap();
    assert!(
        text.contains("rejected by Dana") && text.contains(REASON),
        "{text}"
    );
    assert_eq!(error["details"]["rejections"][0]["reason"], REASON);

    // Expired while it waited: what to do next.
    let expired = called(events, "wants", "expire");
    assert_eq!(
        expired["structured"]["error"]["code"], "plan_expired",
        "{expired}"
    );
    assert_eq!(gateway.retention_days("prj_184").await.unwrap(), 14);

    // Cancelled: the task ended, its plan did not; Dana approved it afterwards.
    let cancelled_id = tasks[3]["task_id"].as_str().unwrap();
    let cancelled = task_end(events, cancelled_id);
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    let said = cancelled["messages"].as_array().unwrap().last().unwrap();
    let said = said.as_str().unwrap();
    assert!(
        said.contains(&format!("did not cancel plan {cancelled_id}"))
            && said.contains("a person may still decide it"),
        "{said}"
    );
    let after = event(events, "after_cancel");
    assert_eq!(after["structured"]["status"], "approved", "{after}");

    // Clients that declare neither: today's answer, a plan waiting and how to wait for it.
    let plain = called(events, "client", "auto");
    assert_eq!(plain["structured"]["status"], "pending_approval", "{plain}");
    let legacy = events
        .iter()
        .find(|e| e["event"] == "connected" && e["client"] == "legacy")
        .unwrap();
    assert_eq!(legacy["protocol_version"], "2025-11-25");
    let legacy = called(events, "client", "legacy");
    assert_eq!(
        legacy["structured"]["status"], "pending_approval",
        "{legacy}"
    );
    // Tasks are 2026-07-28's: a 2025-11-25 session declaring them gets today's answer, and its
    // user the plan's link where the session has a channel back (stdio).
    let both = called(events, "client", "legacy_declaring_both");
    assert_eq!(both["structured"]["status"], "pending_approval", "{both}");
    assert_eq!(both["elicited"], u32::from(back_channel), "{both}");
    event(events, "done");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_task_completes_when_a_person_decides_over_streamable_http() -> anyhow::Result<()> {
    let gateway = TestGateway::start().await?;
    let (token, console) = agent_and_console(&gateway).await?;
    let url = format!("{}/mcp", gateway.url);
    let events = tokio::time::timeout(
        Duration::from_secs(240),
        run(&gateway, &console, &["http", &url, &token]),
    )
    .await??;
    assert_waits(&gateway, &events, false).await;
    Signer::forget(&gateway.state.gateway_id)?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_task_completes_when_a_person_decides_over_stdio() -> anyhow::Result<()> {
    let gateway = TestGateway::start().await?;
    let (token, console) = agent_and_console(&gateway).await?;
    let binary = countersign_e2e::gateway_binary();
    let events = tokio::time::timeout(
        Duration::from_secs(240),
        run(
            &gateway,
            &console,
            &["stdio", binary.to_str().unwrap(), &gateway.database, &token],
        ),
    )
    .await??;
    assert_waits(&gateway, &events, true).await;
    Signer::forget(&gateway.state.gateway_id)?;
    Ok(())
}
