//! Countersign in front of a published MCP server (docs/mcp-proxy.md): the filesystem server
//! from npm and the git server from pip, pinned by `make mcp-servers`, are the upstreams; no
//! stand-in replaces them. Here the helpers and the tools as capabilities; the filesystem
//! server's writes in [`files`], the git server's in [`repository`], upstreams that fail or
//! lie in [`upstream_faults`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use countersign_engine::{Limits, Registry};
use countersign_mcp_proxy::{Spec, Upstream};
use countersign_proto::plan::Preview;
use countersign_proto::risk::{default_high_cost_threshold, risk_flags};
use serde_json::{json, Value};
use tempfile::TempDir;

use crate::common::{approve_by, Gateway, Reply};

mod files;
mod remote;
mod repository;
mod upstream_faults;

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
    gw: Arc<Gateway>,
    upstream: &'static str,
    /// The name the server runs under, when a test ends it ([`Served::kill_upstream`]).
    marker: Option<Marker>,
}

/// A link to a server's program under a name of the test's own: the process can be found by
/// it, and the link taken away so that the server cannot start again until it is restored.
struct Marker {
    link: PathBuf,
    program: PathBuf,
}

impl Marker {
    fn new(program: PathBuf) -> Marker {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let link =
            std::env::temp_dir().join(format!("countersign-proxy-{}-{n}", std::process::id()));
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&program, &link).unwrap();
        Marker { link, program }
    }
}

impl Drop for Marker {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.link);
    }
}

impl Served {
    /// The filesystem server over a new directory, as `files`.
    async fn new() -> Served {
        let root = tempfile::tempdir().unwrap();
        let command = format!(
            "{} {}",
            filesystem_server().display(),
            root.path().display()
        );
        Served::serving(root, "files", &command).await
    }

    /// The filesystem server, under a name the test can end it by.
    async fn files_as_marker() -> Served {
        let marker = Marker::new(filesystem_server());
        let root = tempfile::tempdir().unwrap();
        let command = format!("{} {}", marker.link.display(), root.path().display());
        let mut served = Served::serving(root, "files", &command).await;
        served.marker = Some(marker);
        served
    }

    /// The git server over a new repository with one commit, as `git`.
    async fn git() -> Served {
        Served::git_running(installed("venv/bin/mcp-server-git"), None).await
    }

    /// The git server as [`Served::git`], under a name the test can end it by.
    async fn git_as_marker() -> Served {
        let marker = Marker::new(installed("venv/bin/mcp-server-git"));
        Served::git_running(marker.link.clone(), Some(marker)).await
    }

    async fn git_running(server: PathBuf, marker: Option<Marker>) -> Served {
        let root = tempfile::tempdir().unwrap();
        git(root.path(), &["init", "-q", "-b", "main"]);
        for (key, value) in [("user.name", "Ana"), ("user.email", "ana@example.com")] {
            git(root.path(), &["config", key, value]);
        }
        std::fs::write(root.path().join("a.txt"), "one\n").unwrap();
        git(root.path(), &["add", "a.txt"]);
        git(root.path(), &["commit", "-q", "-m", "first"]);
        let command = format!(
            "{} --repository {}",
            server.display(),
            root.path().display()
        );
        let mut served = Served::serving(root, "git", &command).await;
        served.marker = marker;
        served
    }

    async fn serving(root: TempDir, upstream: &'static str, command: &str) -> Served {
        let spec = Spec::parse(&format!("{upstream}={command}"), |_| None).unwrap();
        let connected = Upstream::connect(spec).await.unwrap();
        // Reads apart from the writer, as deployed: an upstream read may be out while the
        // gateway writes.
        let gw = Gateway::serving_apart(Limits::default(), registry(&[connected])).await;
        Served {
            root,
            gw: Arc::new(gw),
            upstream,
            marker: None,
        }
    }

    /// Ends the upstream's process and takes its program away, so that it cannot start again
    /// until [`Served::restore_upstream`]; returns once the process is gone.
    async fn kill_upstream(&self) {
        let marker = self
            .marker
            .as_ref()
            .expect("a server started under a marker");
        std::fs::remove_file(&marker.link).unwrap();
        let pattern = marker.link.display().to_string();
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
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    fn restore_upstream(&self) {
        let marker = self
            .marker
            .as_ref()
            .expect("a server started under a marker");
        std::os::unix::fs::symlink(&marker.program, &marker.link).unwrap();
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
    // The gateway's own MCP listing keeps the upstream's word: the read is read-only, the write
    // destructive and not open-world.
    let hints = |id: &str| {
        let capability = gw.state.engine.registry.get(id).unwrap();
        serde_json::to_value(countersign_gateway::mcp::annotations(capability)).unwrap()
    };
    let (read, write) = (hints("files.read_text_file"), hints("files.write_file"));
    assert_eq!(read["readOnlyHint"], true, "{read}");
    assert_eq!(read["openWorldHint"], false, "{read}");
    assert_eq!(write["readOnlyHint"], false, "{write}");
    assert_eq!(write["destructiveHint"], true, "{write}");
    assert_eq!(write["openWorldHint"], false, "{write}");
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

/// `reply` refuses a plan as stale because `resource` (by its end: a path, `#staged`) moved.
fn assert_moved(reply: &Reply, resource: &str) {
    crate::common::assert_error(reply, "plan_stale", 409);
    let moved = reply.body["error"]["details"]["moved"].as_array().unwrap();
    assert!(
        moved
            .iter()
            .any(|m| m["resource"].as_str().unwrap().ends_with(resource)),
        "{resource} among {moved:?}"
    );
}
