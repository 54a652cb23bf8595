//! The built `countersign-cli` against a real gateway on a loopback port: enroll, pending, show,
//! approve, and the exit codes. Its key goes to the Secret Service: run under
//! `tests/with-keyring.sh` (make test does).

use std::sync::Arc;

#[path = "flow/hook.rs"]
mod hook;
#[path = "flow/mail.rs"]
mod mail;
#[path = "flow/standing.rs"]
mod standing;

use assert_cmd::Command;
use countersign_api::AppState;
use countersign_embedded::Embedded;
use countersign_engine::accounts;
use serde_json::{json, Value};

struct World {
    runtime: tokio::runtime::Runtime,
    gateway: Option<Embedded>,
    state: Arc<AppState>,
    url: String,
    agent: String,
    data: tempfile::TempDir,
    _db: tempfile::TempDir,
}

impl World {
    fn start() -> World {
        World::under(countersign_policy::Policy::builtin())
    }

    /// A world whose gateway evaluates `policy`.
    fn under(policy: countersign_policy::Policy) -> World {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let db = tempfile::tempdir().unwrap();
        let (gateway, agent) = runtime.block_on(async {
            let url = format!("sqlite://{}", db.path().join("gw.db").display());
            let gateway = Embedded::start_under(&url, None, None, policy)
                .await
                .unwrap();
            let (_, agent) =
                accounts::rotate_agent_token(&gateway.state.store, "ops", Some("usr_lead"))
                    .await
                    .unwrap();
            (gateway, agent)
        });
        let (state, url) = (gateway.state.clone(), gateway.url.clone());
        World {
            runtime,
            gateway: Some(gateway),
            state,
            url,
            agent,
            data: tempfile::tempdir().unwrap(),
            _db: db,
        }
    }

    /// A world with an enrollment code for `name`; the key will go to the Secret Service.
    fn invited(name: &str) -> (World, String) {
        assert!(
            std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some(),
            "no D-Bus session: run through tests/with-keyring.sh (make test does)"
        );
        let world = World::start();
        let code = world
            .runtime
            .block_on(accounts::invite_approver(&world.state.store, name, None))
            .unwrap();
        (world, code)
    }

    fn cli(&self) -> Command {
        let mut command = Command::cargo_bin("countersign-cli").unwrap();
        command
            // Not there yet: enrolling must create it before it spends the code.
            .env("COUNTERSIGN_DATA_DIR", self.data.path().join("home"))
            .env_remove("COUNTERSIGN_GATEWAY_URL")
            .env("NO_COLOR", "1");
        command
    }

    fn json(&self, args: &[&str]) -> Value {
        let output = self.cli().arg("--json").args(args).output().unwrap();
        assert!(
            output.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stdout)
        );
        serde_json::from_slice(&output.stdout).unwrap()
    }

    fn dry_run(&self, capability: &str, params: Value) -> String {
        let body: Value = self.runtime.block_on(async {
            reqwest::Client::new()
                .post(format!("{}/v1/capabilities/{capability}/dry_run", self.url))
                .bearer_auth(&self.agent)
                .json(&json!({ "params": params }))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap()
        });
        body["plan_id"]
            .as_str()
            .unwrap_or_else(|| panic!("no plan: {body}"))
            .to_owned()
    }

    fn invoke(&self, capability: &str, plan_id: &str) {
        let status = self.runtime.block_on(async {
            reqwest::Client::new()
                .post(format!("{}/v1/capabilities/{capability}/invoke", self.url))
                .bearer_auth(&self.agent)
                .json(&json!({ "plan_id": plan_id }))
                .send()
                .await
                .unwrap()
                .status()
        });
        assert!(status.is_success(), "invoke answered {status}");
    }

    fn status(&self, plan_id: &str) -> String {
        self.runtime.block_on(async {
            sqlx::query_scalar("SELECT status FROM plans WHERE id = $1")
                .bind(plan_id)
                .fetch_one(self.state.store.pool())
                .await
                .unwrap()
        })
    }
}

#[test]
fn enroll_review_and_approve_from_the_terminal() {
    let (world, code) = World::invited("Dana");

    let enrolled = world.json(&[
        "--url", &world.url, "enroll", "--code", &code, "--name", "Dana",
    ]);
    assert_eq!(enrolled["gateway_id"], world.state.gateway_id.as_str());
    let plan = world.dry_run(
        "projects.settings.update",
        json!({"project": "prj_184", "retention_days": 14}),
    );

    let pending = world.json(&["pending"]);
    let row = pending["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["plan_id"] == plan.as_str())
        .expect("the plan is listed");
    assert_eq!(row["title"], "Update project settings");
    let table = world.cli().arg("pending").output().unwrap();
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(
        table.contains(&plan) && table.contains("agt_ops for usr_lead"),
        "{table}"
    );

    let shown = world.cli().args(["show", &plan]).output().unwrap();
    let text = String::from_utf8(shown.stdout).unwrap();
    assert!(
        text.starts_with(
            "projects.settings.update 1.0.0  \"Update project settings\" (the gateway's label, not signed)"
        ),
        "the capability the plan signs, then the gateway's label, marked: {text}"
    );
    let link = format!("countersign://plan/{plan}");
    assert!(text.contains(&format!("open {link}\n")), "{text}");
    assert!(text.contains("/retention_days: 30 → 14"), "{text}");
    assert!(
        text.contains("\nRequest as signed\n"),
        "params shown even without a provider: {text}"
    );
    assert!(text.contains("└ eff_2"), "derived under its cause: {text}");
    assert!(text.contains("legal_hold_items_skipped"));
    assert!(text.contains("Approvable."));
    let view = world.json(&["show", &plan]);
    assert_eq!(view["plan"]["digest_matches"], true);
    assert_eq!(view["plan"]["label"], "Update project settings");
    assert_eq!(view["link"], link.as_str());
    assert!(view["budget"].as_str().unwrap().contains("50.00"));

    let decided = world.json(&["approve", &plan, "--reason", "Two weeks is enough."]);
    assert_eq!(decided["status"], "approved");
    assert_eq!(world.status(&plan), "approved");

    let history = world.json(&["history"]);
    assert_eq!(history[0]["entry"]["plan_id"], plan.as_str());
    assert_eq!(history[0]["entry"]["state"], "answered");
    assert_eq!(history[0]["verified"], true);
    let export = world.data.path().join("history.jsonl");
    assert!(world.data.path().join("home/journal.db").exists());
    world
        .cli()
        .args(["history", "--export", export.to_str().unwrap()])
        .assert()
        .success();
    let lines = std::fs::read_to_string(&export).unwrap();
    let first: Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
    assert_eq!(first["decision"], "approve");

    // Refused by the gateway: 1, with its code.
    let again = world
        .cli()
        .args(["--json", "approve", &plan])
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1));
    let error: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(error["error"]["code"], "not_approvable");
    let missing = world
        .cli()
        .args(["--json", "show", "plan_missing"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
    let error: Value = serde_json::from_slice(&missing.stdout).unwrap();
    assert_eq!(error["error"]["code"], "not_found");

    // A risky plan is not approved without a prompt or --yes.
    let bulk = world.dry_run(
        "groups.members.remove",
        json!({"group": "grp_support", "filter": {"employment": "contractor"}}),
    );
    let pending = world.json(&["pending"]);
    let row = pending["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["plan_id"] == bulk.as_str())
        .expect("the bulk plan is listed");
    assert_eq!(row["subjects_total"], 37, "distinct subjects, not 84");
    world.cli().args(["approve", &bulk]).assert().code(2);
    assert_eq!(world.status(&bulk), "pending_approval");
    let decided = world.json(&["approve", &bulk, "--yes"]);
    assert_eq!(
        decided["status"], "pending_approval",
        "one of two approvals"
    );

    // Every subject of the bulk removal, checked against its digest.
    let check = world.json(&["subjects", &bulk, "eff_1", "--verify"]);
    assert_eq!(check["matches"], true);
    assert_eq!(check["received"], 37);
    let ids = world.json(&["subjects", &bulk, "eff_3"]);
    assert_eq!(ids.as_array().unwrap().len(), 6);

    // The approved plan runs; another plan on the same project goes stale; a refresh says what moved.
    let other = world.dry_run(
        "projects.settings.update",
        json!({"project": "prj_184", "retention_days": 60}),
    );
    world.invoke("projects.settings.update", &plan);
    let executed = world.json(&["show", &plan]);
    assert_eq!(executed["plan"]["status"], "executed");
    assert_eq!(
        executed["plan"]["label"], "Update project settings",
        "labelled out of the queue too"
    );
    // A plan that changes nothing (the retention is 14 now) needs nobody's approval, and says so.
    let unchanged = world.dry_run(
        "projects.settings.update",
        json!({"project": "prj_184", "retention_days": 14}),
    );
    let shown = world.cli().args(["show", &unchanged]).output().unwrap();
    let text = String::from_utf8(shown.stdout).unwrap();
    assert!(text.contains("approvals none needed"), "{text}");
    let refreshed = world.json(&["refresh", &other]);
    assert_eq!(refreshed["changed"]["from_plan"], other.as_str());
    assert_eq!(
        refreshed["changed"]["moved"][0]["resource"],
        "projects/prj_184"
    );
    assert_eq!(refreshed["plan"]["status"], "pending_approval");
    assert_eq!(world.status(&other), "superseded");

    // Usage: 2. Not enrolled there: 2. Unreachable: 3.
    world.cli().arg("approve").assert().code(2);
    world.cli().args(["reject", &bulk]).assert().code(2);
    world
        .cli()
        .args(["--url", "http://127.0.0.1:9", "pending"])
        .assert()
        .code(2);
    let mut world = world;
    drop(world.gateway.take());
    world.cli().arg("pending").assert().code(3);
    countersign_console::signing::signer::Signer::forget(&world.state.gateway_id).unwrap();
}

/// An agent's file name full of terminal tricks reaches the approver's screen and `--json` inert;
/// what the CLI keeps on disk is readable by its user only.
#[test]
fn agent_text_stays_inert_and_the_data_dir_stays_private() {
    use std::os::unix::fs::PermissionsExt as _;
    let (world, code) = World::invited("Dana");
    world.json(&[
        "--url", &world.url, "enroll", "--code", &code, "--name", "Dana",
    ]);
    let hostile =
        "cv\u{202e}fdp.exe\u{1b}]0;pwned\u{7}\u{85}\u{9b}2J\u{2028}\u{2066}\u{e0041}\u{ad}.txt";
    let plan = world.dry_run(
        "documents.document.upload",
        json!({"project": "prj_184", "filename": hostile, "mime_type": "text/plain", "size_bytes": 10}),
    );
    let is_trick = |c: char| {
        c.is_control() && c != '\n' || "\u{202e}\u{2028}\u{2066}\u{e0041}\u{ad}".contains(c)
    };
    for args in [vec!["--json", "show", &plan], vec!["show", &plan]] {
        let out = world.cli().args(&args).output().unwrap();
        assert!(out.status.success(), "{args:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("cv"), "{args:?}: {text}");
        assert!(
            !text.chars().any(is_trick),
            "{args:?} let a trick through: {text:?}"
        );
    }
    let view = world.json(&["show", &plan]);
    assert!(
        view.to_string()
            .contains(&serde_json::to_string(hostile).unwrap()),
        "--json still carries the file name, escaped: {view}"
    );

    let home = world.data.path().join("home");
    let mode = |name: &str| {
        std::fs::metadata(home.join(name))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode(""), 0o700);
    for file in std::fs::read_dir(&home).unwrap() {
        let name = file.unwrap().file_name().into_string().unwrap();
        assert_eq!(mode(&name), 0o600, "{name}");
    }
    assert!(home.join("journal.db").exists());
}

/// The invite's code, so it need not appear in the process list: `--code -` reads standard input.
#[test]
fn enroll_reads_the_code_from_standard_input() {
    let (world, code) = World::invited("Dana");
    let output = world
        .cli()
        .args(["--json", "--url", &world.url, "enroll", "--code", "-"])
        .write_stdin(format!("{code}\n"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let enrolled: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(enrolled["gateway_id"], world.state.gateway_id.as_str());
    countersign_console::signing::signer::Signer::forget(&world.state.gateway_id).unwrap();
}

#[test]
fn enroll_reads_the_code_from_the_environment() {
    let (world, code) = World::invited("Dana");
    // Nothing to read: a usage error, nothing spent.
    world
        .cli()
        .args(["--url", &world.url, "enroll"])
        .env_remove("COUNTERSIGN_ENROLLMENT_CODE")
        .assert()
        .code(2);
    world
        .cli()
        .args(["--url", &world.url, "enroll", "--code", "-"])
        .write_stdin("\n")
        .assert()
        .code(2);
    // Plain HTTP to another machine is refused before anything is sent.
    let refused = world
        .cli()
        .args(["--json", "--url", "http://192.0.2.1:7780", "enroll"])
        .env("COUNTERSIGN_ENROLLMENT_CODE", &code)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let error: Value = serde_json::from_slice(&refused.stdout).unwrap();
    assert_eq!(error["error"]["code"], "insecure_transport");

    let enrolled = world
        .cli()
        .args(["--json", "--url", &world.url, "enroll"])
        .env("COUNTERSIGN_ENROLLMENT_CODE", &code)
        .output()
        .unwrap();
    assert!(
        enrolled.status.success(),
        "{}",
        String::from_utf8_lossy(&enrolled.stdout)
    );
    let enrolled: Value = serde_json::from_slice(&enrolled.stdout).unwrap();
    assert_eq!(
        enrolled["approver_id"].as_str().map(|a| &a[..4]),
        Some("apr_")
    );
    countersign_console::signing::signer::Signer::forget(&world.state.gateway_id).unwrap();
}

#[test]
fn an_executed_provider_call_reads_from_its_envelope() {
    let (world, code) = World::invited("Dana");
    world.json(&[
        "--url", &world.url, "enroll", "--code", &code, "--name", "Dana",
    ]);
    let plan = world.dry_run(
        "text.generate",
        json!({"model": "gpt-4o", "max_tokens": 2048,
               "messages": [{"role": "user", "content": "Summarize this week."}]}),
    );
    // The prompt that will leave for the provider is on screen before anyone signs it.
    let before = world.cli().args(["show", &plan]).output().unwrap();
    let before = String::from_utf8(before.stdout).unwrap();
    assert!(
        before.contains(
            "Request as signed (sent to an outside service if this plan runs)\n  /max_tokens: 2048\n  /messages/0/content: Summarize this week.\n"
        ),
        "{before}"
    );
    let decided = world.json(&["approve", &plan, "--yes"]);
    assert_eq!(decided["status"], "approved");
    world.invoke("text.generate", &plan);

    let shown = world.cli().args(["show", &plan]).output().unwrap();
    let text = String::from_utf8(shown.stdout).unwrap();
    assert!(text.contains("Execution: succeeded · openai"), "{text}");
    assert!(text.contains("  Demo answer from gpt-4o."), "{text}");
    // 27 tokens in at most (20 bytes + framing) at 0.25 per 1,000, 2,048 out at 1.00 per 1,000.
    assert!(
        text.contains("Credits: estimated 0.00–2.06 credits, charged 0.0"),
        "{text}"
    );
    assert!(text.contains("input tokens ·"), "{text}");
    let view = world.json(&["show", &plan]);
    let execution = &view["plan"]["execution"];
    assert_eq!(execution["provider"], "openai");
    assert_eq!(execution["estimated"], "0.00–2.06 credits");
}

#[test]
fn pending_mine_lists_what_waits_on_me_and_show_names_the_rules() {
    let text = r#"package countersign.approval
import rego.v1
rules contains {"id": "finance_signs_retention", "description": "Finance signs retention changes.",
    "count": 1, "teams": ["finance"]} if input.capability.id == "projects.settings.update"
rules contains {"id": "a_lead_grants", "description": "A lead signs every grant.",
    "count": 1, "teams": ["leads"]} if input.capability.id == "memberships.grant"
"#;
    let policy = countersign_policy::Policy::from_sources(
        countersign_policy::Sources {
            modules: vec![("team.rego".to_owned(), text.to_owned())],
            data: None,
        },
        "test",
    )
    .unwrap();
    let world = World::under(policy);
    // Sam is usr_92, a lead in the demo's directory.
    let code = world
        .runtime
        .block_on(accounts::invite_approver(
            &world.state.store,
            "Sam",
            Some("usr_92"),
        ))
        .unwrap();
    world.json(&[
        "--url", &world.url, "enroll", "--code", &code, "--name", "Sam",
    ]);
    let retention = world.dry_run(
        "projects.settings.update",
        json!({"project": "prj_184", "retention_days": 14}),
    );
    let grant = world.dry_run(
        "memberships.grant",
        json!({"project": "prj_200", "subject": "usr_41", "role": "editor"}),
    );

    let all = world.json(&["pending"]);
    let turns: Vec<(&str, &str)> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["plan_id"].as_str().unwrap(), i["turn"].as_str().unwrap()))
        .collect();
    assert!(turns.contains(&(retention.as_str(), "others")), "{turns:?}");
    assert!(turns.contains(&(grant.as_str(), "me")), "{turns:?}");
    let mine = world.json(&["pending", "--mine"]);
    let ids: Vec<&str> = mine["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["plan_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [grant.as_str()]);

    let shown = world.cli().args(["show", &retention]).output().unwrap();
    let text = String::from_utf8(shown.stdout).unwrap();
    assert!(
        text.contains(
            "who must approve (the gateway's approval policy, not part of the signed plan):"
        ) && text
            .contains("Needs 1 of finance — 0 received — finance_signs_retention [team.rego:3]"),
        "{text}"
    );
    let json = world.json(&["show", &retention]);
    assert_eq!(json["plan"]["rules"][0]["id"], "finance_signs_retention");
    assert_eq!(json["plan"]["rules"][0]["asks_me"], false);
    assert_eq!(json["plan"]["turn"], "others");
    let refused = world
        .cli()
        .args(["approve", &retention, "--yes"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(why.contains("finance_signs_retention"), "{why}");
}
