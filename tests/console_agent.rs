//! A coding agent's `Edit` in the real desktop binary: the agent's own hook
//! (`countersign-cli hook claude-code`, a child process fed Claude Code's `PreToolUse` JSON)
//! puts the call in the queue, the approver reads the file's change word by word (light and dark
//! to target/screenshots) and signs it in the window, and the hook then answers `allow`.

use std::io::Write as _;
use std::process::{Command, Stdio};

use countersign_e2e::webdriver::QUEUE_ROW;
use countersign_e2e::{binary, TestGateway};
use serde_json::{json, Value};

use crate::app::{answer_if_asked, serial, App, Launch};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coding_agents_edit_shows_its_diff_and_is_released_once_signed() -> anyhow::Result<()> {
    let _one = serial().await;
    let gateway = TestGateway::start().await?;
    let agent = gateway.agent("ops").await?;
    let project = tempfile::tempdir()?;
    let file = project.path().join("queue.rs");
    std::fs::write(
        &file,
        "/// The view the queue opens on.\npub fn opens_on() -> View {\n    View::All\n}\n",
    )?;
    let mut hook = Command::new(binary("countersign-cli"))
        .args(["--url", &gateway.url, "hook", "claude-code"])
        .env("COUNTERSIGN_AGENT_TOKEN", agent.token())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let call = json!({"session_id": "s1", "cwd": project.path(), "permission_mode": "default",
        "hook_event_name": "PreToolUse", "tool_name": "Edit", "tool_use_id": "toolu_01",
        "tool_input": {"file_path": file, "old_string": "    View::All",
                       "new_string": "    View::WaitingOnMe"}});
    hook.stdin
        .take()
        .expect("piped")
        .write_all(call.to_string().as_bytes())?;

    let code = gateway.invite("Dana").await?;
    let app = App::start(Launch::new(&gateway.url, &code)).await?;
    let row = app.find(QUEUE_ROW).await?;
    let plan = row
        .attr("data-plan-id")
        .await?
        .ok_or_else(|| anyhow::anyhow!("a queue row without its plan id"))?;
    app.open(&plan).await?;
    let changes = app.text("[data-testid='pane-changes']").await?;
    assert!(changes.contains("WaitingOnMe"), "{changes}");
    assert!(
        app.count("[data-testid='pane-changes'] mark.word").await? > 0,
        "the file's change is marked word by word"
    );
    app.shoot("agent-edit").await?;

    // Approved in the window; the hook, polling, releases it at once. The answer's banner shows
    // only while the plan is as answered, so a hook quicker than the window's look finds the plan
    // executed instead: either is the window's signed approval having been taken.
    app.click("[data-testid='approve']").await?;
    answer_if_asked(
        &app,
        "[data-testid='decision-state'][data-state='answered'], \
         [data-testid='plan'][data-status='executed']",
    )
    .await?;
    let output = tokio::task::spawn_blocking(move || hook.wait_with_output()).await??;
    assert!(output.status.success(), "{:?}", output.status);
    let decision: Value = serde_json::from_slice(&output.stdout)?;
    assert_eq!(
        decision["hookSpecificOutput"]["permissionDecision"], "allow",
        "{decision}"
    );
    assert_eq!(agent.plan(&plan).await?["status"], "executed");
    // Released, not run: the agent edits its own file.
    assert!(std::fs::read_to_string(&file)?.contains("View::All"));
    Ok(())
}
