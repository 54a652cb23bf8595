//! Countersign in front of a published MCP server (docs/mcp-proxy.md): the filesystem server
//! from npm, pinned by `make mcp-servers`, is the upstream; no stand-in replaces it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use countersign_engine::{Limits, Registry};
use countersign_mcp_proxy::{Spec, Upstream};
use countersign_proto::digest::sha256;
use countersign_proto::plan::Preview;
use countersign_proto::risk::{default_high_cost_threshold, risk_flags};
use serde_json::{json, Value};
use tempfile::TempDir;

use crate::common::{approve_by, assert_error, Gateway, Reply};

/// A server `make mcp-servers` installs under `target/mcp-servers`; a test without it fails and
/// says so.
fn installed(path: &str) -> PathBuf {
    let server = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/mcp-servers")
        .join(path);
    assert!(
        server.exists(),
        "{} is missing: run `make mcp-servers`",
        server.display()
    );
    server
}

fn filesystem_server() -> PathBuf {
    installed("npm/node_modules/.bin/mcp-server-filesystem")
}

/// A directory a published server serves as an upstream, and a gateway in front.
struct Served {
    root: TempDir,
    gw: Gateway,
    upstream: &'static str,
}

impl Served {
    /// The filesystem server over a new directory, as `files`.
    async fn new() -> Served {
        Served::running(&filesystem_server()).await
    }

    /// The filesystem server started as `server` (a path the test can name the process by).
    async fn running(server: &Path) -> Served {
        let root = tempfile::tempdir().unwrap();
        let command = format!("{} {}", server.display(), root.path().display());
        Served::serving(root, "files", &command).await
    }

    /// The git server over a new repository with one commit, as `git`.
    async fn git() -> Served {
        let root = tempfile::tempdir().unwrap();
        git(root.path(), &["init", "-q", "-b", "main"]);
        for (key, value) in [("user.name", "Ana"), ("user.email", "ana@example.com")] {
            git(root.path(), &["config", key, value]);
        }
        std::fs::write(root.path().join("a.txt"), "one\n").unwrap();
        git(root.path(), &["add", "a.txt"]);
        git(root.path(), &["commit", "-q", "-m", "first"]);
        let server = installed("venv/bin/mcp-server-git");
        let command = format!(
            "{} --repository {}",
            server.display(),
            root.path().display()
        );
        Served::serving(root, "git", &command).await
    }

    async fn serving(root: TempDir, upstream: &'static str, command: &str) -> Served {
        let spec = Spec::parse(&format!("{upstream}={command}"), |_| None).unwrap();
        let connected = Upstream::connect(spec).await.unwrap();
        let gw = Gateway::serving(Limits::default(), registry(&[connected])).await;
        Served { root, gw, upstream }
    }

    /// The path of `name` in the served directory, holding `text` unless that is `None`.
    fn file(&self, name: &str, text: Option<&str>) -> PathBuf {
        let path = self.root.path().join(name);
        if let Some(text) = text {
            std::fs::write(&path, text).unwrap();
        }
        path
    }

    async fn preview(&self, tool: &str, params: Value) -> Value {
        self.gw
            .preview(&format!("{}.{tool}", self.upstream), params)
            .await
    }

    /// `plan` approved by one approver, then invoked.
    async fn approve_and_run(&self, plan: &Value) -> Reply {
        let approver = self.gw.enroll("Ana").await;
        approve_by(&self.gw, plan, &[&approver]).await;
        self.gw.execute(plan).await
    }
}

fn registry(upstreams: &[Arc<Upstream>]) -> &'static Registry {
    let none = countersign_providers::Providers::none();
    let mut packs = countersign_embedded::packs(&Default::default(), none);
    packs.push(countersign_mcp_proxy::pack(upstreams));
    Registry::new(packs).unwrap().leak()
}

/// `git ARGS` in `repo`, which must succeed; its output.
fn git(repo: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// The plan's risk flags, as PROTOCOL section 3 computes them.
fn flags(plan: &Value) -> Vec<String> {
    let preview: Preview = serde_json::from_value(plan.clone()).unwrap();
    risk_flags(&preview, default_high_cost_threshold())
        .into_iter()
        .map(|f| {
            serde_json::to_value(f)
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[tokio::test]
async fn each_upstream_tool_is_a_capability_with_its_own_schema() {
    let served = Served::new().await;
    let gw = &served.gw;
    let ids = gw.capability_ids().await;
    for id in [
        "files.write_file",
        "files.edit_file",
        "files.read_text_file",
        "files.move_file",
    ] {
        assert!(ids.iter().any(|listed| listed == id), "{id} in {ids:?}");
    }
    let describe = |id: &'static str| gw.call("GET", id, Some(&gw.agent), None);
    let write = describe("/v1/capabilities/files.write_file").await;
    assert_eq!(
        write.body["input_schema"]["required"],
        json!(["path", "content"])
    );
    assert_eq!(write.body["dry_run"], "required");
    let read = describe("/v1/capabilities/files.read_text_file").await;
    assert_eq!(read.body["dry_run"], "not_applicable");
}

#[tokio::test]
async fn a_write_waits_for_a_signed_approval_then_writes_exactly_the_signed_content_once() {
    let served = Served::new().await;
    let file = served.file("notes.txt", Some("before\n"));
    let plan = served
        .preview(
            "write_file",
            json!({"path": file, "content": "after, as signed\n"}),
        )
        .await;
    assert_eq!(plan["would_require_approval"], true);
    // The server says write_file is destructive and not open-world, and the adapter previews it.
    assert_eq!(flags(&plan), ["irreversible"], "{plan}");
    let effect = &plan["effects"][0];
    let resource = format!("mcp-files/files:{}", file.display());
    assert_eq!(effect["resource"], resource.as_str());
    assert_eq!(effect["external"], false);
    assert_eq!(
        effect["changes"],
        json!([{"path": "/content", "before": "before\n", "after": "after, as signed\n"}])
    );
    let read = plan["read_revisions"].as_array().unwrap();
    assert!(read.iter().any(
        |r| r["resource"] == resource.as_str() && r["revision"] == sha256(b"before\n").as_str()
    ));
    assert_eq!(text(&file), "before\n", "a preview writes nothing");

    let early = served.gw.execute(&plan).await;
    assert_error(&early, "approval_required", 409);
    assert_eq!(text(&file), "before\n");

    let ran = served.approve_and_run(&plan).await;
    assert_eq!(ran.status, StatusCode::OK, "{}", ran.body);
    assert_eq!(ran.body["provider"], "files");
    assert_eq!(ran.body["metadata"]["upstream"], "files");
    assert_eq!(ran.body["metadata"]["tool"], "write_file");
    assert_eq!(text(&file), "after, as signed\n");

    std::fs::write(&file, "changed since\n").unwrap();
    let again = served.gw.execute(&plan).await;
    assert_error(&again, "plan_already_executed", 409);
    assert_eq!(text(&file), "changed since\n");
}

#[tokio::test]
async fn a_file_changed_after_its_preview_is_stale_for_the_approver_and_at_execution() {
    let served = Served::new().await;
    let gw = &served.gw;
    let file = served.file("notes.txt", Some("before\n"));
    let params = json!({"path": file, "content": "mine\n"});
    let approver = gw.enroll("Ana").await;

    let approved = served.preview("write_file", params.clone()).await;
    approve_by(gw, &approved, &[&approver]).await;
    std::fs::write(&file, "someone else's\n").unwrap();
    assert_error(&gw.execute(&approved).await, "plan_stale", 409);
    assert_eq!(text(&file), "someone else's\n");

    let pending = served.preview("write_file", params).await;
    std::fs::write(&file, "and again\n").unwrap();
    let statement = approver.sign(&approver.statement(gw, &pending));
    let refused = approver
        .send(gw, pending["plan_id"].as_str().unwrap(), &statement)
        .await;
    assert_error(&refused, "plan_stale", 409);
    assert_eq!(text(&file), "and again\n");
}

#[tokio::test]
async fn a_new_file_is_previewed_as_created_and_a_file_outside_the_servers_reach_is_blocked() {
    let served = Served::new().await;
    let file = served.file("new.txt", None);
    let plan = served
        .preview("write_file", json!({"path": file, "content": "fresh\n"}))
        .await;
    assert_eq!(
        plan["effects"][0]["changes"][0]["before"],
        Value::Null,
        "{plan}"
    );
    assert_eq!(plan["executable"], true);
    let outside = served
        .preview("write_file", json!({"path": "/etc/passwd", "content": "x"}))
        .await;
    assert_eq!(outside["executable"], false, "{outside}");
    assert_eq!(outside["validation"][0]["code"], "tool_preview_failed");
}

#[tokio::test]
async fn a_read_only_tool_runs_at_once_and_leaves_no_plan() {
    let served = Served::new().await;
    let gw = &served.gw;
    let file = served.file("readme.txt", Some("hello from the upstream\n"));
    let invoke = |tool: &'static str, params: Value| {
        gw.invoke_as(&gw.agent, tool, json!({ "params": params }))
    };
    let read = invoke("files.read_text_file", json!({"path": file})).await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.body);
    assert_eq!(read.body["content"], "hello from the upstream\n");
    assert_eq!(
        gw.count("SELECT COUNT(*) FROM plans WHERE $1 = $1", "")
            .await,
        0
    );
    // A write cannot take the same road.
    let write = invoke("files.write_file", json!({"path": file, "content": "x"})).await;
    assert_error(&write, "dry_run_required", 428);
    assert_eq!(text(&file), "hello from the upstream\n");
}

#[tokio::test]
async fn edit_file_is_previewed_by_the_servers_own_dry_run_and_runs_as_signed() {
    let served = Served::new().await;
    let file = served.file("config.ini", Some("mode = slow\nlevel = 1\n"));
    let edits = json!([{"oldText": "mode = slow", "newText": "mode = fast"}]);
    let plan = served
        .preview("edit_file", json!({"path": file, "edits": edits}))
        .await;
    let preview = &plan["effects"][0]["changes"][0];
    assert_eq!(preview["path"], "/tool_preview", "{plan}");
    let diff = preview["after"].as_str().unwrap();
    assert!(
        diff.contains("-mode = slow") && diff.contains("+mode = fast"),
        "{diff}"
    );
    // The tool's own preview stands for it: the plan is not flagged for want of one.
    assert_eq!(flags(&plan), ["irreversible"], "{plan}");
    assert_eq!(text(&file), "mode = slow\nlevel = 1\n");

    let ran = served.approve_and_run(&plan).await;
    assert_eq!(ran.status, StatusCode::OK, "{}", ran.body);
    assert_eq!(text(&file), "mode = fast\nlevel = 1\n");
}

#[tokio::test]
async fn an_edit_the_tool_says_it_cannot_make_is_a_blocked_plan() {
    let served = Served::new().await;
    let file = served.file("config.ini", Some("mode = slow\n"));
    let edits = json!([{"oldText": "no such line", "newText": "x"}]);
    let plan = served
        .preview("edit_file", json!({"path": file, "edits": edits}))
        .await;
    assert_eq!(plan["executable"], false, "{plan}");
    assert_eq!(plan["validation"][0]["code"], "tool_preview_failed");
    assert!(flags(&plan).contains(&"blocked".to_owned()));
}

#[tokio::test]
async fn an_upstream_that_cannot_be_reached_fails_the_call_and_the_plan_runs_once_it_is_back() {
    // The server runs under a name the test can end it by, and take away.
    let marker = std::env::temp_dir().join(format!("countersign-proxy-{}", std::process::id()));
    let _ = std::fs::remove_file(&marker);
    std::os::unix::fs::symlink(filesystem_server(), &marker).unwrap();
    let served = Served::running(&marker).await;
    let file = served.file("notes.txt", Some("before\n"));
    let plan = served
        .preview("write_file", json!({"path": file, "content": "after\n"}))
        .await;
    let approver = served.gw.enroll("Ana").await;
    approve_by(&served.gw, &plan, &[&approver]).await;

    // Gone, and it cannot be started again: the call is refused and nothing is written.
    std::fs::remove_file(&marker).unwrap();
    let pattern = marker.display().to_string();
    let signal = |command: &str, args: &[&str]| {
        std::process::Command::new(command)
            .args(args)
            .args(["-f", &pattern])
            .status()
            .unwrap()
            .success()
    };
    assert!(signal("pkill", &["-KILL"]), "the upstream was running");
    while signal("pgrep", &[]) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
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
    std::os::unix::fs::symlink(filesystem_server(), &marker).unwrap();
    let mut ran = refused;
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        ran = served.gw.execute(&plan).await;
        if ran.status == StatusCode::OK {
            break;
        }
        assert_error(&ran, "provider_unavailable", 502);
    }
    std::fs::remove_file(&marker).unwrap();
    assert_eq!(ran.status, StatusCode::OK, "{}", ran.body);
    assert_eq!(text(&file), "after\n");
    let ready = served.gw.call("GET", "/readyz", None, None).await;
    assert_eq!(ready.status, StatusCode::OK, "{}", ready.body);
    assert_eq!(part(&ready.body).unwrap()["detail"], "connected, 14 tools");
}

#[tokio::test]
async fn a_git_commit_shows_the_staged_diff_and_commits_exactly_once() {
    let served = Served::git().await;
    let repo = served.root.path();
    std::fs::write(repo.join("a.txt"), "one\ntwo\n").unwrap();
    git(repo, &["add", "a.txt"]);
    let head = git(repo, &["rev-parse", "HEAD"]).trim().to_owned();
    let params = json!({"repo_path": repo, "message": "Add the second line"});

    let plan = served.preview("git_commit", params).await;
    let effect = &plan["effects"][0];
    assert_eq!(effect["changes"][0]["path"], "/staged", "{plan}");
    let diff = effect["changes"][0]["after"].as_str().unwrap();
    assert!(diff.contains("+two") && diff.contains("a/a.txt"), "{diff}");
    let description = effect["description"].as_str().unwrap();
    assert!(
        description.contains("on branch main") && description.contains(&head),
        "{description}"
    );
    let read = plan["read_revisions"].as_array().unwrap();
    let head_read = format!("mcp-git/git:{}#head", repo.display());
    assert!(
        read.iter()
            .any(|r| r["resource"] == head_read.as_str() && r["revision"] == head.as_str()),
        "{plan}"
    );
    // The server calls git_commit neither destructive nor open-world: it waits all the same.
    assert_eq!(plan["would_require_approval"], true);
    assert!(flags(&plan).is_empty(), "{plan}");
    assert_eq!(
        git(repo, &["rev-list", "--count", "HEAD"]).trim(),
        "1",
        "a preview commits nothing"
    );

    let ran = served.approve_and_run(&plan).await;
    assert_eq!(ran.status, StatusCode::OK, "{}", ran.body);
    assert_eq!(git(repo, &["rev-list", "--count", "HEAD"]).trim(), "2");
    assert_eq!(
        git(repo, &["log", "-1", "--format=%s"]).trim(),
        "Add the second line"
    );
    assert_error(
        &served.gw.execute(&plan).await,
        "plan_already_executed",
        409,
    );
    assert_eq!(git(repo, &["rev-list", "--count", "HEAD"]).trim(), "2");
}

#[tokio::test]
async fn a_commit_whose_staged_changes_moved_is_stale_and_an_empty_one_is_blocked() {
    let served = Served::git().await;
    let repo = served.root.path();
    let params = json!({"repo_path": repo, "message": "Nothing"});
    let empty = served.preview("git_commit", params.clone()).await;
    assert_eq!(empty["executable"], false, "{empty}");
    assert_eq!(empty["validation"][0]["code"], "tool_preview_failed");

    std::fs::write(repo.join("a.txt"), "one\ntwo\n").unwrap();
    git(repo, &["add", "a.txt"]);
    let plan = served.preview("git_commit", params).await;
    let approver = served.gw.enroll("Ana").await;
    approve_by(&served.gw, &plan, &[&approver]).await;
    std::fs::write(repo.join("b.txt"), "slipped in\n").unwrap();
    git(repo, &["add", "b.txt"]);
    assert_error(&served.gw.execute(&plan).await, "plan_stale", 409);
    assert_eq!(git(repo, &["rev-list", "--count", "HEAD"]).trim(), "1");
}

/// The Python of the venv holding the official MCP SDK (`make mcp-venv`).
fn sdk_python() -> PathBuf {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `make mcp-venv`",
        python.display()
    );
    python
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
