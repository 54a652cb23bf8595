//! Upstreams that fail, die mid-call, change their tools or lie about them.

use std::path::Path;
use std::time::Duration;

use axum::http::StatusCode;
use countersign_mcp_proxy::{Spec, Upstream};
use serde_json::{json, Value};

use super::{approve_by, git, registry, sdk_python, text, Served};
use crate::common::{assert_error, Gateway};

#[tokio::test]
async fn an_upstream_that_cannot_be_reached_fails_the_call_and_the_plan_runs_once_it_is_back() {
    let served = Served::files_as_marker().await;
    let file = served.file("notes.txt", Some("before\n"));
    let plan = served
        .preview("write_file", json!({"path": file, "content": "after\n"}))
        .await;
    let approver = served.gw.enroll("Ana").await;
    approve_by(&served.gw, &plan, &[&approver]).await;

    // Gone, and it cannot be started again: the call is refused and nothing is written.
    served.kill_upstream().await;
    let refused = served.gw.execute(&plan).await;
    assert_error(&refused, "provider_unavailable", 502);
    assert_eq!(text(&file), "before\n");
    let ready = served.gw.call("GET", "/readyz", None, None).await;
    assert_eq!(
        ready.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        ready.body
    );
    let part = |body: &Value| {
        body["parts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["part"] == "mcp:files")
            .cloned()
    };
    assert_eq!(part(&ready.body).unwrap()["ready"], false, "{}", ready.body);

    // Back: the connection is opened again after its backoff, and the approved plan runs.
    served.restore_upstream();
    let mut ran = refused;
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        ran = served.gw.execute(&plan).await;
        if ran.status == StatusCode::OK {
            break;
        }
        assert_error(&ran, "provider_unavailable", 502);
    }
    assert_eq!(ran.status, StatusCode::OK, "{}", ran.body);
    assert_eq!(text(&file), "after\n");
    let ready = served.gw.call("GET", "/readyz", None, None).await;
    assert_eq!(ready.status, StatusCode::OK, "{}", ready.body);
    assert_eq!(part(&ready.body).unwrap()["detail"], "connected, 14 tools");
}

#[tokio::test]
async fn an_upstream_that_says_a_write_only_reads_cannot_skip_a_policy_that_names_it() {
    let root = tempfile::tempdir().unwrap();
    let liar = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_upstreams/lying_server.py");
    let command = format!(
        "liar={} {} {}",
        sdk_python().display(),
        liar.display(),
        root.path().display()
    );
    let upstream = Upstream::connect(Spec::parse(&command, |_| None).unwrap())
        .await
        .unwrap();
    // The policy reads the upstream, the tool and the annotations the upstream declared.
    let policy = crate::policy::policy(
        r#"rules contains {"id": "people_read_the_liar", "count": 1,
               "description": "A call to the liar waits for a person, whatever it says."} if {
               input.capability.mcp.upstream == "liar"
               input.capability.mcp.tool == "write_note"
               input.capability.mcp.annotations.readOnlyHint == true
           }"#,
    );
    let gw = Gateway::serving_with_policy(registry(&[upstream]), policy).await;
    let note = root.path().join("note.txt");
    let params = json!({"name": "note.txt", "text": "written"});

    let at_once = gw
        .invoke_as(&gw.agent, "liar.write_note", json!({ "params": params }))
        .await;
    assert_error(&at_once, "approval_required", 409);
    assert!(!note.exists(), "nothing ran");
    // A call its upstream calls read-only has nothing to preview: it cannot wait, so it does
    // not run at all while the policy asks people for it.
    let preview = gw.try_preview("liar.write_note", params).await;
    assert_ne!(preview.status, StatusCode::OK, "{}", preview.body);
    assert!(!note.exists());
}

/// A file of `root` the test names, holding `text`.
fn write(root: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = root.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test]
async fn an_upstream_killed_mid_call_leaves_the_plan_failed_with_its_outcome_unknown_never_run_twice(
) {
    // The git server stages a file through a clean filter that waits to be let go: the call
    // is out, the server is in the middle of it, and the test kills the server there.
    let served = Served::git_as_marker().await;
    let repo = served.root.path();
    let hold = tempfile::tempdir().unwrap();
    let (started, release) = (hold.path().join("started"), hold.path().join("release"));
    let filter = format!(
        "#!/bin/sh\necho started >> {started}\nwhile [ ! -e {release} ]; do sleep 0.05; done\nexit 1\n",
        started = started.display(),
        release = release.display()
    );
    let script = write(hold.path(), "filter.sh", &filter);
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    git(
        repo,
        &["config", "filter.held.clean", &script.display().to_string()],
    );
    git(repo, &["config", "filter.held.required", "true"]);
    write(repo, ".gitattributes", "*.held filter=held\n");
    write(repo, "data.held", "the content\n");

    let plan = served
        .preview(
            "git_add",
            json!({"repo_path": repo, "files": ["data.held"]}),
        )
        .await;
    assert_eq!(plan["executable"], true, "{plan}");
    assert!(!started.exists(), "a preview runs no write");
    let approver = served.gw.enroll("Ana").await;
    approve_by(&served.gw, &plan, &[&approver]).await;
    let call = tokio::spawn({
        let (gw, plan) = (served.gw.clone(), plan.clone());
        async move { gw.execute(&plan).await }
    });
    while !started.exists() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    served.kill_upstream().await;
    let reply = tokio::time::timeout(Duration::from_secs(30), call)
        .await
        .expect("a call whose upstream died is answered")
        .unwrap();
    std::fs::write(&release, "").unwrap();
    assert_eq!(reply.status, StatusCode::GATEWAY_TIMEOUT, "{}", reply.body);
    assert_eq!(reply.body["error"]["code"], "provider_timeout");
    assert_eq!(
        reply.body["error"]["details"]["outcome"], "unknown",
        "{}",
        reply.body
    );
    assert_eq!(reply.body["error"]["retryable"], false);
    let status = served
        .gw
        .count(
            "SELECT COUNT(*) FROM plans WHERE id = $1 AND status = 'failed'",
            plan["plan_id"].as_str().unwrap(),
        )
        .await;
    assert_eq!(status, 1);

    // The server comes back on the next call; the plan is not run again.
    served.restore_upstream();
    let again = served.gw.execute(&plan).await;
    assert_ne!(again.status, StatusCode::OK, "{}", again.body);
    assert_eq!(again.body["error"]["retryable"], false, "{}", again.body);
    assert_eq!(
        std::fs::read_to_string(&started).unwrap().lines().count(),
        1,
        "the filter, inside the call, ran once"
    );
}

#[tokio::test]
async fn a_tool_the_upstream_changes_under_a_waiting_plan_makes_it_stale_and_new_plans_blocked() {
    let root = tempfile::tempdir().unwrap();
    let server =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_upstreams/changing_server.py");
    let command = format!(
        "shifty={} {} {}",
        sdk_python().display(),
        server.display(),
        root.path().display()
    );
    let upstream = Upstream::connect(Spec::parse(&command, |_| None).unwrap())
        .await
        .unwrap();
    let gw = Gateway::serving(Default::default(), registry(&[upstream])).await;
    let level = root.path().join("level.txt");
    let plan = gw.preview("shifty.set_level", json!({"level": 3})).await;
    assert_eq!(plan["executable"], true, "{plan}");
    let approver = gw.enroll("Ana").await;
    approve_by(&gw, &plan, &[&approver]).await;

    let reshaped = gw
        .invoke_as(&gw.agent, "shifty.reshape", json!({ "params": {} }))
        .await;
    assert_eq!(reshaped.status, StatusCode::OK, "{}", reshaped.body);
    // The server said so; the gateway reads the list again when told, not on a timer.
    let mut blocked = Value::Null;
    for _ in 0..100 {
        blocked = gw.preview("shifty.set_level", json!({"level": 3})).await;
        if blocked["executable"] == false {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        blocked["validation"][0]["code"], "tool_changed",
        "{blocked}"
    );

    let stale = gw.execute(&plan).await;
    assert_error(&stale, "plan_stale", 409);
    let moved = &stale.body["error"]["details"]["moved"];
    assert!(
        moved.to_string().contains("mcp-tools/shifty.set_level"),
        "{}",
        stale.body
    );
    assert!(!level.exists(), "nothing ran");
}

#[tokio::test]
async fn an_upstream_slow_to_read_holds_no_other_write_of_the_gateway_back() {
    let served = Served::new().await;
    let (approved, pending) = (
        served.file("approved.txt", Some("before\n")),
        served.file("pending.txt", Some("before\n")),
    );
    let write = |file: &std::path::Path| json!({"path": file, "content": "after\n"});
    let ana = served.gw.enroll("Ana").await;
    let to_run = served.preview("write_file", write(&approved)).await;
    approve_by(&served.gw, &to_run, &[&ana]).await;
    let to_decide = served.preview("write_file", write(&pending)).await;

    let execution = || {
        let (gw, plan) = (served.gw.clone(), to_run.clone());
        tokio::spawn(async move { gw.execute(&plan).await })
    };
    let reply = while_a_read_is_held(&served, &approved, execution).await;
    assert_error(&reply, "plan_stale", 409);

    let statement = ana.sign(&ana.statement(&served.gw, &to_decide));
    let decision = || {
        let (gw, plan_id) = (served.gw.clone(), to_decide["plan_id"].clone());
        tokio::spawn(async move { ana.send(&gw, plan_id.as_str().unwrap(), &statement).await })
    };
    let reply = while_a_read_is_held(&served, &pending, decision).await;
    assert_error(&reply, "plan_stale", 409);

    // A preview reads the file once, before the writer, and stores what it read.
    let fresh = served.file("fresh.txt", Some("before\n"));
    let preview = || {
        let (gw, params) = (served.gw.clone(), write(&fresh));
        tokio::spawn(async move { gw.try_preview("files.write_file", params).await })
    };
    let reply = while_a_read_is_held(&served, &fresh, preview).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let change = &reply.body["effects"][0]["changes"][0];
    assert_eq!(change["before"], "someone else's\n", "{}", reply.body);
}

/// Makes `file` a pipe, then starts `slow`, whose read of it through the server waits until
/// the test writes into it; checks that the gateway writes meanwhile (another approver is
/// enrolled), then lets the read go and answers what `slow` answered.
async fn while_a_read_is_held(
    served: &Served,
    file: &std::path::Path,
    slow: impl FnOnce() -> tokio::task::JoinHandle<crate::common::Reply>,
) -> crate::common::Reply {
    std::fs::remove_file(file).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(file)
        .status()
        .unwrap();
    assert!(made.success());
    let slow = slow();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    // Opening a pipe to write without waiting succeeds once a reader has it open: the server
    // is inside its read.
    let writer = loop {
        use std::os::unix::fs::OpenOptionsExt as _;
        const O_NONBLOCK: i32 = 0o4000; // Linux's value
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(O_NONBLOCK)
            .open(file)
        {
            Ok(writer) => break writer,
            Err(_) if std::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(10)).await
            }
            Err(e) => panic!("the server never opened the pipe: {e}"),
        }
    };
    let name = format!("Ben {}", file.display());
    tokio::time::timeout(Duration::from_secs(10), served.gw.enroll(&name))
        .await
        .expect("a write while an upstream read is out");
    assert!(!slow.is_finished(), "the read was still out");
    std::io::Write::write_all(&mut &writer, b"someone else's\n").unwrap();
    drop(writer);
    tokio::time::timeout(Duration::from_secs(30), slow)
        .await
        .expect("answered once the read is")
        .unwrap()
}
