//! `countersign-cli hook claude-code` driven as Claude Code drives it: a child process with the
//! `PreToolUse` JSON on standard input, its decision parsed from standard output, its exit status
//! checked; the approver's side is the same CLI, signing with its key (docs/agent-hook.md).

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command as Process, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::World;

/// A hook waiting on the gateway, fed `payload`.
fn spawn(world: &World, url: &str, payload: &Value, extra: &[&str]) -> Child {
    let mut child = Process::new(assert_cmd::cargo::cargo_bin("countersign-cli"))
        .args(["--url", url, "hook", "claude-code"])
        .args(extra)
        .env("COUNTERSIGN_AGENT_TOKEN", &world.agent)
        .env("COUNTERSIGN_DATA_DIR", world.data.path().join("agent"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(payload.to_string().as_bytes()).unwrap();
    drop(stdin);
    child
}

/// A hook waiting on the world's gateway for a call of `tool_name` made in `dir`.
fn hook(world: &World, dir: &Path, tool_name: &str, tool_input: Value) -> Child {
    spawn(world, &world.url, &payload(dir, tool_name, tool_input), &[])
}

/// The decision the hook printed: `(permissionDecision, permissionDecisionReason)`; it must
/// have exited 0 with exactly one JSON document.
fn answer(child: Child) -> (String, String) {
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        output.status.success(),
        "{:?}: {stdout} {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let decision: Value = serde_json::from_str(&stdout).unwrap();
    let out = &decision["hookSpecificOutput"];
    assert_eq!(out["hookEventName"], "PreToolUse", "{decision}");
    (
        out["permissionDecision"].as_str().unwrap().to_owned(),
        out["permissionDecisionReason"].as_str().unwrap().to_owned(),
    )
}

fn payload(cwd: &Path, tool_name: &str, tool_input: Value) -> Value {
    json!({"session_id": "s1", "transcript_path": "/tmp/t.jsonl", "cwd": cwd,
           "permission_mode": "default", "hook_event_name": "PreToolUse",
           "tool_name": tool_name, "tool_input": tool_input, "tool_use_id": "toolu_01"})
}

/// The plan the hook previewed, once it is in the queue.
fn pending_call(world: &World) -> String {
    let started = Instant::now();
    loop {
        let pending = world.json(&["pending"]);
        let found = pending["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["capability_id"] == countersign_proto::agent_call::ID);
        if let Some(row) = found {
            return row["plan_id"].as_str().unwrap().to_owned();
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no plan: {pending}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn enrolled() -> World {
    let (world, code) = World::invited("Dana");
    world.json(&[
        "--url", &world.url, "enroll", "--code", &code, "--name", "Dana",
    ]);
    world
}

#[test]
fn an_edit_runs_only_after_a_signed_approval_of_the_diff_shown() {
    let world = enrolled();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lib.rs");
    std::fs::write(&file, "fn a() {}\n").unwrap();
    let hook = hook(
        &world,
        dir.path(),
        "Edit",
        json!({"file_path": file, "old_string": "fn a()",
                                            "new_string": "fn b()"}),
    );
    let plan = pending_call(&world);
    let shown = world.cli().args(["show", &plan]).output().unwrap();
    let shown = String::from_utf8(shown.stdout).unwrap();
    assert!(
        shown.contains("fn b()"),
        "the approver sees the edit: {shown}"
    );
    world.json(&["approve", &plan, "--yes"]);
    let (decision, reason) = answer(hook);
    assert_eq!(decision, "allow", "{reason}");
    assert!(
        reason.contains("approved by Dana") && reason.contains(&plan),
        "{reason}"
    );
    assert_eq!(world.status(&plan), "executed");
    // The hook releases; the agent writes. The gateway changed nothing on disk.
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "fn a() {}\n");
}

#[test]
fn a_rejection_denies_the_call_with_the_approvers_reason() {
    let world = enrolled();
    let dir = tempfile::tempdir().unwrap();
    let hook = hook(
        &world,
        dir.path(),
        "Bash",
        json!({"command": "git push --force origin main",
                                            "description": "Publish"}),
    );
    let plan = pending_call(&world);
    world.json(&[
        "reject",
        &plan,
        "--reason",
        "Not on main, open a pull request.",
    ]);
    let (decision, reason) = answer(hook);
    assert_eq!(decision, "deny");
    assert!(
        reason.contains("Dana: Not on main, open a pull request."),
        "{reason}"
    );
}

#[test]
fn no_decision_in_time_denies_the_call() {
    let world = enrolled();
    let dir = tempfile::tempdir().unwrap();
    let call = payload(
        dir.path(),
        "mcp__github__create_issue",
        json!({"title": "x"}),
    );
    let hook = spawn(&world, &world.url, &call, &["--timeout", "1"]);
    let (decision, reason) = answer(hook);
    assert_eq!(decision, "deny");
    assert!(reason.contains("no decision within 1 s"), "{reason}");
}

#[test]
fn a_file_edited_between_preview_and_approval_is_stale_and_denied() {
    let world = enrolled();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("notes.md");
    std::fs::write(&file, "old\n").unwrap();
    let hook = hook(
        &world,
        dir.path(),
        "Write",
        json!({"file_path": file, "content": "new\n"}),
    );
    let plan = pending_call(&world);
    std::fs::write(&file, "someone else's\n").unwrap();
    world.json(&["approve", &plan, "--yes"]);
    let (decision, reason) = answer(hook);
    assert_eq!(decision, "deny");
    assert!(reason.contains("stale"), "{reason}");
    assert_eq!(world.status(&plan), "stale");
}

#[test]
fn a_path_through_a_symbolic_link_out_of_the_project_is_denied() {
    let world = World::start();
    let project = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), project.path().join("docs")).unwrap();
    let file = project.path().join("docs").join("notes.md");
    let call = payload(
        project.path(),
        "Write",
        json!({"file_path": file, "content": "x"}),
    );
    let (decision, reason) = answer(spawn(&world, &world.url, &call, &[]));
    assert_eq!(decision, "deny");
    assert!(reason.contains("symbolic link"), "{reason}");
    assert!(!file.exists());
}

#[test]
fn an_unreachable_gateway_denies_unless_told_to_ask() {
    let world = World::start();
    let closed = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let dir = tempfile::tempdir().unwrap();
    let call = payload(dir.path(), "Bash", json!({"command": "ls"}));
    let (decision, _) = answer(spawn(&world, &closed, &call, &[]));
    assert_eq!(decision, "deny");
    let (decision, reason) = answer(spawn(&world, &closed, &call, &["--offline", "ask"]));
    assert_eq!(decision, "ask", "{reason}");
    // Plain HTTP to another machine never carries the token.
    let (decision, reason) = answer(spawn(&world, "http://192.0.2.1:7780", &call, &[]));
    assert_eq!(decision, "deny");
    assert!(reason.contains("not this machine"), "{reason}");
}

/// A gateway that answers the preview faithfully (it relays to the real one) and then forges
/// the release: a 200 with `release: allow` for another plan's digest.
#[test]
fn a_forged_release_for_another_digest_is_denied() {
    let world = World::under(policy_letting_bash_through());
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let forger = format!("http://{}", listener.local_addr().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let call = payload(dir.path(), "Bash", json!({"command": "git status"}));
    let (decision, reason) = std::thread::scope(|scope| {
        scope.spawn(|| {
            for _ in 0..2 {
                let (mut socket, _) = listener.accept().unwrap();
                let (head, body) = read_request(&mut socket);
                let answer = if head.contains("/dry_run") {
                    world.runtime.block_on(async {
                        reqwest::Client::new()
                            .post(format!("{}/v1/capabilities/agent.tool_call/dry_run", world.url))
                            .bearer_auth(&world.agent)
                            .header("content-type", "application/json")
                            .body(body)
                            .send()
                            .await
                            .unwrap()
                            .text()
                            .await
                            .unwrap()
                    })
                } else {
                    let sent: Value = serde_json::from_str(&body).unwrap();
                    json!({"success": true, "content": "Released", "provider": "countersign",
                           "metadata": {"release": "allow", "plan_id": sent["plan_id"],
                                        "plan_digest": format!("sha256:{}", "0".repeat(64))}})
                    .to_string()
                };
                write!(
                    socket,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                    answer.len()
                )
                .unwrap();
            }
        });
        answer(spawn(&world, &forger, &call, &[]))
    });
    assert_eq!(decision, "deny");
    assert!(reason.contains("not for the plan previewed"), "{reason}");
    // The same call through the real gateway, which the policy lets through, is allowed at once.
    let (decision, reason) = answer(spawn(&world, &world.url, &call, &[]));
    assert_eq!(decision, "allow", "{reason}");
    assert!(reason.contains("needs nobody"), "{reason}");
}

fn policy_letting_bash_through() -> countersign_policy::Policy {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/policy-coding-agent"
    );
    countersign_policy::Policy::load(Path::new(dir)).unwrap()
}

/// One HTTP/1.1 request: its head, and its body by `content-length`.
fn read_request(socket: &mut std::net::TcpStream) -> (String, String) {
    let mut buffer = Vec::new();
    let mut byte = [0u8; 1];
    while !buffer.ends_with(b"\r\n\r\n") {
        socket.read_exact(&mut byte).unwrap();
        buffer.push(byte[0]);
    }
    let head = String::from_utf8(buffer).unwrap();
    let length = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    socket.read_exact(&mut body).unwrap();
    (head, String::from_utf8(body).unwrap())
}
