//! The `countersign-gateway` binary: admin commands print their secret last, serve answers.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use crate::common::JsonReply;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_countersign-gateway");

/// `serve` started with `args` and `env`, and the line it printed once it listened, naming its
/// address.
pub(crate) fn serving(args: &[&str], env: &[(&str, &str)]) -> (std::process::Child, String) {
    serving_logged(args, env, Stdio::null())
}

/// [`serving`], its standard error going to `log`.
pub(crate) fn serving_logged(
    args: &[&str],
    env: &[(&str, &str)],
    log: Stdio,
) -> (std::process::Child, String) {
    let mut server = Command::new(BIN)
        .arg("serve")
        .args(args)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (server, line)
}

pub(crate) fn last_line(args: &[&str]) -> String {
    let output = Command::new(BIN).args(args).output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    stdout.lines().last().unwrap_or_default().to_owned()
}

#[test]
fn admin_commands_print_secrets_and_serve_accepts_them() {
    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("gw.db").display());
    let code = last_line(&[
        "approvers",
        "invite",
        "--database",
        &database,
        "--name",
        "Dana",
    ]);
    assert!(code.starts_with("cse_") && code.len() > 40, "{code}");
    let token = last_line(&["agents", "add", "--database", &database, "--name", "ops"]);
    assert!(token.starts_with("csa_") && token.len() > 40, "{token}");
    let refused = Command::new(BIN)
        .args(["agents", "add", "--database", &database, "--name", "ops"])
        .output()
        .unwrap();
    assert!(!refused.status.success(), "a second agent named ops");

    let (mut server, line) = serving(
        &[
            "--addr",
            "127.0.0.1:0",
            "--database",
            &database,
            "--demo",
            "--rate-limit",
            "50/100",
            "--approver-rate-limit",
            "off",
            "--max-pending-plans",
            "100",
            "--max-subject-rows",
            "2000000",
        ],
        &[],
    );
    let url = line.trim().rsplit(' ').next().unwrap().to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{line}");

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let info: serde_json::Value = runtime.block_on(async {
        reqwest::Client::new()
            .get(format!("{url}/v1/gateway"))
            .bearer_auth(&token)
            .json_reply()
            .await
    });
    server.kill().unwrap();
    server.wait().unwrap();
    assert!(info["gateway_id"].as_str().unwrap().starts_with("gw_"));
    assert_eq!(info["interface_version"], "1.0");
}

/// Runs the binary; its exit status and standard error.
fn run(args: &[&str]) -> (bool, String) {
    let output = Command::new(BIN).args(args).output().unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn plain_http_off_loopback_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("gw.db").display());
    for addr in ["0.0.0.0:0", "[::]:0"] {
        let (ok, stderr) = run(&["serve", "--addr", addr, "--database", &database]);
        assert!(!ok, "plain HTTP served on {addr}");
        assert!(
            stderr.contains("refusing to serve plain HTTP") && stderr.contains("--tls-cert"),
            "{stderr}"
        );
    }
    let (ok, stderr) = run(&[
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--database",
        &database,
        "--tls-cert",
        "/nonexistent.pem",
    ]);
    assert!(!ok && stderr.contains("--tls-key"), "{stderr}");
}

#[test]
fn serve_with_a_certificate_answers_over_https_only() {
    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("gw.db").display());
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.key_pair.serialize_pem()).unwrap();
    let token = last_line(&["agents", "add", "--database", &database, "--name", "ops"]);
    let (mut server, line) = serving(
        &[
            "--addr",
            "0.0.0.0:0",
            "--database",
            &database,
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
        &[],
    );
    let port = line.trim().rsplit(':').next().unwrap().to_owned();
    assert!(line.contains("https://"), "{line}");

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (secure, plain) = runtime.block_on(async {
        let root = reqwest::Certificate::from_pem(certified.cert.pem().as_bytes()).unwrap();
        let client = reqwest::Client::builder()
            .add_root_certificate(root)
            .build()
            .unwrap();
        let secure: serde_json::Value = client
            .get(format!("https://localhost:{port}/v1/gateway"))
            .bearer_auth(&token)
            .json_reply()
            .await;
        let plain = reqwest::Client::new()
            .get(format!("http://127.0.0.1:{port}/v1/gateway"))
            .bearer_auth(&token)
            .send()
            .await;
        (secure, plain)
    });
    server.kill().unwrap();
    server.wait().unwrap();
    assert!(secure["gateway_id"].as_str().unwrap().starts_with("gw_"));
    assert!(
        !plain.is_ok_and(|r| r.status().is_success()),
        "plain HTTP answered on the TLS port"
    );
}

#[test]
fn invites_are_bound_and_expire_and_revocations_take_effect() {
    use countersign_engine::{accounts, Store};
    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("gw.db").display());
    let (ok, stderr) = run(&[
        "approvers",
        "invite",
        "--database",
        &database,
        "--name",
        "Dana",
        "--expires-in-hours",
        "0",
    ]);
    assert!(!ok, "a code that is expired when made");
    assert!(stderr.contains("expires-in-hours"), "{stderr}");
    let (ok, stderr) = run(&[
        "approvers",
        "invite",
        "--database",
        &database,
        "--name",
        "Dana\u{202E}",
    ]);
    assert!(!ok && stderr.contains("printable"), "{stderr}");
    let invite = last_line(&[
        "approvers",
        "invite",
        "--database",
        &database,
        "--name",
        "Dana",
        "--expires-in-hours",
        "5",
    ]);
    assert!(
        countersign_proto::enrollment::Invite::parse(&invite).is_some(),
        "{invite}"
    );
    let agent = last_line(&["agents", "add", "--database", &database, "--name", "ops"]);

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = runtime.block_on(Store::open(&database)).unwrap();
    let hours: i64 = runtime
        .block_on(
            sqlx::query_scalar(
                "SELECT (julianday(expires_at) - julianday(created_at)) * 24 FROM enrollment_codes",
            )
            .fetch_one(store.pool()),
        )
        .map(|h: f64| h.round() as i64)
        .unwrap();
    assert_eq!(hours, 5);
    let key = ed25519_dalek::SigningKey::from_bytes(&[9; 32]);
    let request = countersign_proto::approvals::EnrollRequest {
        enrollment_code: invite,
        display_name: None,
        public_key: countersign_proto::dsse::encode_public_key(&key.verifying_key()),
    };
    let dana = runtime
        .block_on(accounts::enroll(&store, "gw_test", &request))
        .unwrap();
    let holds = |token: &str| {
        runtime
            .block_on(accounts::by_token(store.pool(), token))
            .unwrap()
            .is_some()
    };
    assert!(holds(&agent) && holds(&dana.token));

    let (ok, _) = run(&["revoke-key", "--database", &database, "--key", &dana.key_id]);
    assert!(ok);
    let active = runtime
        .block_on(accounts::active_key(
            store.pool(),
            &dana.approver_id,
            &dana.key_id,
        ))
        .unwrap();
    assert!(active.is_none(), "a revoked key signs nothing");
    assert!(holds(&dana.token), "revoking a key leaves the token");

    let (ok, _) = run(&[
        "revoke-approver",
        "--database",
        &database,
        "--approver",
        &dana.approver_id,
    ]);
    assert!(ok);
    assert!(!holds(&dana.token));
    let (ok, _) = run(&[
        "revoke-agent",
        "--database",
        &database,
        "--agent",
        "agt_ops",
    ]);
    assert!(ok);
    assert!(!holds(&agent));
    let (ok, stderr) = run(&[
        "revoke-agent",
        "--database",
        &database,
        "--agent",
        "agt_nobody",
    ]);
    assert!(!ok && stderr.contains("agt_nobody"), "{stderr}");
}

/// An MCP stdio session checks its agent's token on every call: revoked mid-session, refused.
#[test]
fn a_stdio_mcp_session_ends_with_its_revoked_token() {
    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("gw.db").display());
    let token = last_line(&["agents", "add", "--database", &database, "--name", "ops"]);
    let token_file = dir.path().join("agent-token");
    std::fs::write(&token_file, format!("{token}\n")).unwrap();
    let token_file = token_file.display().to_string();
    let mut session = McpStdio::start(&["--database", &database, "--token-file", &token_file], &[]);
    let check = |id: u32| {
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "wallet.agent_budget.guard.check",
            "arguments": {"estimated_cost_credits": 1}}})
    };
    let before = session.ask(check(2));
    assert_ne!(before["result"]["isError"], true, "{before}");

    let (ok, _) = run(&[
        "revoke-agent",
        "--database",
        &database,
        "--agent",
        "agt_ops",
    ]);
    assert!(ok);
    let after = session.ask(check(3));
    session.finish();
    assert_eq!(after["result"]["isError"], true, "{after}");
    assert_eq!(
        after["result"]["structuredContent"]["error"]["code"], "unauthenticated",
        "{after}"
    );
}

/// Secrets stay off command lines, where every user of the machine can read them, and out of
/// error messages: an agent token is refused as a flag, and URLs' passwords are not repeated.
#[test]
fn secrets_stay_off_command_lines_and_out_of_errors() {
    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("gw.db").display());
    let url = "http://127.0.0.1:1";
    for (command, flag, value) in [
        ("mcp", "--database", &*database),
        ("agent-sim", "--url", url),
    ] {
        let (ok, stderr) = run(&[command, flag, value, "--token", "csa_visible"]);
        assert!(!ok && stderr.contains("--token"), "{command}: {stderr}");
        let without = Command::new(BIN)
            .args([command, flag, value])
            .env_remove("COUNTERSIGN_AGENT_TOKEN")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&without.stderr);
        assert!(
            !without.status.success() && stderr.contains("COUNTERSIGN_AGENT_TOKEN"),
            "{command}: {stderr}"
        );
    }
    // A setting PostgreSQL does not know: refused before any connection is tried.
    let unreachable = "postgres://countersign:hunter2@127.0.0.1:1/countersign?sslmode=sometimes";
    let (ok, stderr) = run(&["serve", "--database", unreachable, "--addr", "127.0.0.1:0"]);
    assert!(!ok, "{stderr}");
    assert!(stderr.contains("countersign:***@127.0.0.1"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
    let relay = "smtp://mail:hunter2@relay.example?tls=sometimes";
    let (ok, stderr) = run(&[
        "serve",
        "--database",
        &database,
        "--addr",
        "127.0.0.1:0",
        "--smtp-relay",
        relay,
    ]);
    assert!(!ok, "{stderr}");
    assert!(stderr.contains("mail:***@relay.example"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
}

#[test]
fn agents_add_records_scopes_and_warns_when_there_are_none() {
    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("gw.db").display());
    let add = |name: &str, scopes: &[&str]| {
        let mut command = Command::new(BIN);
        command.args(["agents", "add", "--database", &database, "--name", name]);
        for scope in scopes {
            command.args(["--scope", scope]);
        }
        command.output().unwrap()
    };
    let open = add("open", &[]);
    assert!(open.status.success());
    let warning = String::from_utf8_lossy(&open.stderr);
    assert!(
        warning.contains("warning") && warning.contains("every capability"),
        "{warning}"
    );
    let narrow = add(
        "narrow",
        &["projects.settings.update:prj_184", "storage.quota.update"],
    );
    assert!(narrow.status.success());
    assert!(!String::from_utf8_lossy(&narrow.stderr).contains("warning"));
    let bad = add("bad", &["groups.members.remove:prj_184"]);
    assert!(
        !bad.status.success(),
        "a group capability scoped to a project"
    );

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let scopes: Vec<String> = runtime.block_on(async {
        let store = countersign_engine::Store::open(&database).await.unwrap();
        let mut conn = store.pool().acquire().await.unwrap();
        countersign_engine::accounts::scopes::of(
            &mut conn,
            countersign_embedded::default_registry(),
            "agt_narrow",
        )
        .await
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect()
    });
    assert_eq!(
        scopes,
        ["projects.settings.update:prj_184", "storage.quota.update"]
    );
}

/// `mcp` takes `serve`'s provider flags: its provider tools call the configured endpoint with the
/// key from the environment, and its approval threshold is the one given.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_mcp_session_calls_the_configured_provider() {
    let local = countersign_providers::local::LocalProviders::start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("gw.db").display());
    let token = last_line(&["agents", "add", "--database", &database, "--name", "ops"]);
    let (url, key) = (local.url.clone(), local.key().to_owned());
    let answer = tokio::task::spawn_blocking(move || {
        let flags = [
            "--openai-url",
            &url,
            "--approve-provider-calls-above",
            "5.00",
        ];
        let mut session = McpStdio::start(
            &[&["--database", &database][..], &flags[..]].concat(),
            &[
                ("COUNTERSIGN_OPENAI_API_KEY", &key),
                ("COUNTERSIGN_AGENT_TOKEN", &token),
            ],
        );
        // At most 2.06 credits: over the default threshold of 1.00, under the 5.00 given, so
        // it needs nobody; the tool previews and stops, and nothing is sent yet.
        let preview = session.ask(serde_json::json!({"jsonrpc": "2.0", "id": 2,
            "method": "tools/call", "params": {"name": "text.generate", "arguments": {
                "model": "gpt-4o", "max_tokens": 2048,
                "messages": [{"role": "user", "content": "Summarize this week."}]}}}));
        let previewed = &preview["result"]["structuredContent"];
        assert_eq!(previewed["status"], "approved", "{preview}");
        let answer = session.ask(serde_json::json!({"jsonrpc": "2.0", "id": 3,
            "method": "tools/call", "params": {"name": "countersign_execute",
                "arguments": {"plan_id": previewed["plan_id"]}}}));
        session.finish();
        answer
    })
    .await
    .unwrap();
    assert_ne!(answer["result"]["isError"], true, "{answer}");
    let envelope = &answer["result"]["structuredContent"];
    assert_eq!(envelope["provider"], "openai", "{answer}");
    assert!(envelope["content"]
        .as_str()
        .unwrap()
        .starts_with("Demo answer from gpt-4o"));
    assert_eq!(local.requests(), 1);
}

/// `countersign-gateway mcp` with `args` and `env`, initialized, spoken to one line at a time.
struct McpStdio {
    session: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
}

impl McpStdio {
    fn start(args: &[&str], env: &[(&str, &str)]) -> McpStdio {
        let mut session = Command::new(BIN)
            .arg("mcp")
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = session.stdin.take().unwrap();
        let stdout = BufReader::new(session.stdout.take().unwrap());
        let mut mcp = McpStdio {
            session,
            stdin,
            stdout,
        };
        mcp.ask(
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "cli-test", "version": "1"}}}),
        );
        mcp.tell(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        mcp
    }

    fn tell(&mut self, message: serde_json::Value) {
        use std::io::Write as _;
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn ask(&mut self, message: serde_json::Value) -> serde_json::Value {
        self.tell(message);
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap()
    }

    fn finish(self) {
        let McpStdio {
            mut session, stdin, ..
        } = self;
        drop(stdin);
        session.wait().unwrap();
    }
}

fn outputs(args: &[&str]) -> (bool, String, String) {
    let output = Command::new(BIN).args(args).output().unwrap();
    (
        output.status.success(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

#[test]
fn the_example_policy_passes_its_tests_and_shows_each_demo_plans_rules() {
    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/policy");
    let (passed, report, _) = outputs(&["policy", "test", examples]);
    assert!(passed, "{report}");
    assert!(
        report.ends_with("5 tests, 5 passed, 0 failed\n"),
        "{report}"
    );

    let (checked, report, err) = outputs(&["policy", "check", examples]);
    assert!(checked, "{err}");
    assert!(
        report.contains("a retention change (projects.settings.update)\n  needs 1 approver — one_approver [approval.rego:"),
        "{report}"
    );
    assert!(
        report.contains("a video (video.generate)\n  needs 1 of finance — finance_above_threshold"),
        "{report}"
    );
    // By day two leads, at night refused: the example's quiet hours follow the clock.
    let bulk = report
        .split("\n\n")
        .find(|p| p.starts_with("a bulk removal from grp_all_staff"))
        .unwrap();
    assert!(
        bulk.contains("needs 2 of leads — leads_for_bulk_removals")
            || bulk.contains(
                "refused (policy_denied): The approval policy refuses this plan: No bulk removals"
            ),
        "{bulk}"
    );
}

#[test]
fn a_failing_policy_test_fails_the_command_and_a_bad_file_stops_serve_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("p.rego"),
        "package countersign.approval\n\nimport rego.v1\n\nrules := []\n\ntest_nothing_is_needed if count(rules) == 1\n",
    )
    .unwrap();
    let policy = dir.path().to_str().unwrap();
    let (passed, report, _) = outputs(&["policy", "test", policy]);
    assert!(!passed);
    assert!(
        report.contains("FAIL countersign.approval.test_nothing_is_needed"),
        "{report}"
    );

    std::fs::write(
        dir.path().join("broken.rego"),
        "package countersign.approval\n\nrules contains r if {\n  r :=\n}\n",
    )
    .unwrap();
    let database = format!("sqlite://{}", dir.path().join("gw.db").display());
    let (served, _, err) = outputs(&[
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--database",
        &database,
        "--policy",
        policy,
    ]);
    assert!(!served);
    assert!(err.contains("broken.rego:4:"), "{err}");
}

#[test]
fn people_are_put_in_teams_and_listed() {
    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("gw.db").display());
    let (invited, out, err) = outputs(&[
        "approvers",
        "invite",
        "--database",
        &database,
        "--name",
        "Fay",
        "--user",
        "usr_41",
        "--team",
        "finance",
        "--team",
        "oncall",
    ]);
    assert!(invited, "{err}");
    assert!(out.contains("usr_41 is in finance, oncall."), "{out}");
    let (added, _, err) = outputs(&[
        "agents",
        "add",
        "--database",
        &database,
        "--name",
        "books",
        "--team",
        "finance",
    ]);
    assert!(added, "{err}");
    let (set, _, err) = outputs(&[
        "approvers",
        "teams",
        "set",
        "--database",
        &database,
        "--person",
        "usr_92",
        "--team",
        "leads",
    ]);
    assert!(set, "{err}");
    let (_, listing, _) = outputs(&["approvers", "teams", "list", "--database", &database]);
    assert_eq!(
        listing,
        "finance: usr_41\n  agents: agt_books\nleads: usr_92\noncall: usr_41\n"
    );
    let (refused, _, err) = outputs(&[
        "approvers",
        "teams",
        "set",
        "--database",
        &database,
        "--person",
        "usr_92",
        "--team",
        "Leads!",
    ]);
    assert!(!refused);
    assert!(err.contains("a team's name is"), "{err}");
}
