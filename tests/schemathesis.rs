//! Schema-driven tests of the gateway's HTTP API: schemathesis (in the throw-away venv `make
//! schema-venv` makes) reads `GET /v1/openapi.json` from a live gateway and sends what it
//! generates from it, once with an agent's token and once with an approver's, with all its checks:
//! every answer must match the description, none may be a 5xx or hang, a request the description
//! allows must be accepted and one it forbids refused. The stateful phase follows the
//! description's links (a preview's or the queue's `plan_id` into the plan reads, decisions,
//! refresh, subjects), so the run reaches plans, not only 404s: the test counts, from the run's
//! HAR report, the requests answered 2xx per operation and fails when an operation that should be
//! reached never was.
//! A pending plan exists, so the queue, plan and wallet routes have something to answer about.
//! What no generator can make (a signed decision, a signed standing approval, an amendment of a
//! plan that exists) is seeded: real ones, made before the run, are the examples of those
//! operations in the description the run reads, so that it reaches them too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use countersign_e2e::{enroll, retention, TestGateway};
use countersign_proto::decision::new_nonce;
use countersign_proto::standing::{new_standing_id, StandingStatement, STANDING_STATEMENT_TYPE};
use countersign_proto::statement::Signed as _;
use countersign_proto::Credits;
use serde_json::{json, Value};

fn schemathesis() -> PathBuf {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/schema-venv/bin/schemathesis");
    assert!(
        path.exists(),
        "{} is missing: make schema-venv makes it (make test does)",
        path.display()
    );
    path
}

/// Where schemathesis's checks meet what no schema can say.
///
/// A request the description forbids may be refused for its size before it is read
/// (`payload_too_large`, 413): the description bounds every string and array, not the bytes.
/// A dry run answers params that do not fit its capability with seed 000's `valid: false` and
/// what to fix (200), not with a refusal, so refusing them is not asked of it. Some requests of
/// the right shape meet the world: a direct invoke may name a project or quota that does not
/// exist (seed 000's blocking validation, `validation_error` 422) or cost more than the wallet
/// holds (`budget_exceeded`, 402); a plan id is one capability's, refused on another's path
/// (422); a subject cursor is opaque, and one made up is refused (422); a signed decision or
/// standing approval is refused when what it signs does not fit the request (401, 409, 422).
///
/// Real plans are reached through the links the description states (from a dry run's, the
/// queue's and a plan record's ids); the stateful phase follows those, not schemathesis's guesses
/// (which lead a capability's id into a preview it does not have).
const CONFIG: &str = r#"
# Every check; an operation's own settings below come before these (and would not before a
# command-line --checks).
[checks]
enabled = true
[checks.negative_data_rejection]
expected-statuses = [400, 401, 403, 404, 405, 406, 409, 413, 415, 422, 428, 429]

[phases.stateful]
inference.algorithms = ["location-headers"]

[[operations]]
include-operation-id-regex = "^dry_run_"
checks.negative_data_rejection.enabled = false

[[operations]]
include-operation-id-regex = "^invoke_"
checks.positive_data_acceptance.expected-statuses = ["2xx", 401, 402, 403, 404, 409, 422, 429]

[[operations]]
include-operation-id = "invoke"
checks.positive_data_acceptance.expected-statuses = ["2xx", 401, 403, 404, 409, 422, 429]

[[operations]]
include-operation-id = "subjects"
checks.positive_data_acceptance.expected-statuses = ["2xx", 401, 403, 404, 409, 422, 429]

# What is signed is opaque to a schema (a payload in base64, a signature), and so is whether an
# amendment changes its plan's request: a signed statement for another plan, under another key, or
# an amendment to the same params is refused as a request of the right shape can be; so is a
# remedy for an email (a statement over a message's digest).
[[operations]]
include-operation-id-regex = "^(decide|amend|create|remedy)$"
checks.positive_data_acceptance.expected-statuses = ["2xx", 401, 403, 404, 409, 422, 429]
"#;
/// Requests and 2xx answers per operation (`GET /v1/plans/{id}`), read from a HAR report.
fn reached(har: &Path, templates: &[(String, String)]) -> BTreeMap<String, (usize, usize)> {
    let har: Value = serde_json::from_slice(&std::fs::read(har).unwrap()).unwrap();
    let mut counts: BTreeMap<String, (usize, usize)> = templates
        .iter()
        .map(|(method, path)| (format!("{method} {path}"), (0, 0)))
        .collect();
    for entry in har["log"]["entries"].as_array().unwrap() {
        let method = entry["request"]["method"].as_str().unwrap();
        let url = entry["request"]["url"].as_str().unwrap();
        let path = url.split("://").nth(1).unwrap_or(url);
        let path = &path[path.find('/').unwrap_or(path.len())..];
        let path = path.split('?').next().unwrap();
        let status = entry["response"]["status"].as_u64().unwrap_or(0);
        let Some((m, template)) = templates
            .iter()
            .find(|(m, t)| m.eq_ignore_ascii_case(method) && matches(t, path))
        else {
            continue;
        };
        let count = counts.get_mut(&format!("{m} {template}")).unwrap();
        count.0 += 1;
        count.1 += usize::from((200..300).contains(&status));
    }
    counts
}

/// Whether `path` is an instance of `template` (`{x}` stands for one segment).
fn matches(template: &str, path: &str) -> bool {
    let (t, p): (Vec<&str>, Vec<&str>) = (template.split('/').collect(), path.split('/').collect());
    t.len() == p.len()
        && t.iter()
            .zip(&p)
            .all(|(t, p)| (t.starts_with('{') && !p.is_empty()) || t == p)
}

/// Every operation of the description, as (method, path template).
fn operations(description: &Value) -> Vec<(String, String)> {
    let mut all = Vec::new();
    for (path, item) in description["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            all.push((method.to_uppercase(), path.clone()));
        }
    }
    all
}

#[derive(Clone, Copy)]
struct Run<'a> {
    url: &'a str,
    token: &'a str,
    who: &'a str,
    description: &'a Value,
    config: &'a str,
}

fn run(
    Run {
        url,
        token,
        who,
        description,
        config,
    }: Run,
    must_reach: &[&str],
) {
    // Its caches and reports go to a directory of their own, not into the work tree.
    let scratch = tempfile::tempdir().unwrap();
    let config_file = scratch.path().join("schemathesis.toml");
    std::fs::write(&config_file, config).unwrap();
    let har = scratch.path().join("run.har");
    let schema = scratch.path().join("openapi.json");
    std::fs::write(&schema, description.to_string()).unwrap();
    let output = Command::new(schemathesis())
        .current_dir(scratch.path())
        .arg("--config-file")
        .arg(&config_file)
        .arg("run")
        .arg(&schema)
        .args(["--url", url])
        .args(["--header", &format!("Authorization: Bearer {token}")])
        // An event stream answers for as long as it is read: a hang by design, tested elsewhere.
        .args(["--exclude-path", "/v1/events"])
        .args(["--phases", "examples,coverage,fuzzing,stateful"])
        .args(["--max-examples", "40", "--request-timeout", "20"])
        .args(["--seed", "11", "--no-color", "--report", "har"])
        .arg("--report-har-path")
        .arg(&har)
        .output()
        .expect("schemathesis runs");
    let report = String::from_utf8_lossy(&output.stdout);
    println!("{who}:\n{report}");
    assert!(
        output.status.success(),
        "schemathesis with the {who} token found failures:\n{report}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let counts = reached(&har, &operations(description));
    println!("{who}: requests answered 2xx, of all sent, per operation");
    for (operation, (sent, ok)) in &counts {
        println!("  {ok:>5} of {sent:>5}  {operation}");
    }
    for operation in must_reach {
        let (sent, ok) = counts[*operation];
        assert!(
            ok > 0,
            "with the {who} token, {operation} was never answered 2xx ({sent} requests)"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_requests_get_answers_that_match_the_description() -> anyhow::Result<()> {
    let gateway = TestGateway::start().await?;
    let agent = gateway.agent("schema-agent").await?;
    // Plans in the queue, one with subjects, for the approver's walk from the queue.
    agent
        .dry_run("projects.settings.update", retention("prj_184", 21))
        .await?;
    let removal = agent
        .dry_run(
            "groups.members.remove",
            json!({"group": "grp_all_staff", "filter": {"users": ["usr_s000010", "usr_s000020"]}}),
        )
        .await?;
    assert_eq!(removal["effects"][0]["id"], "eff_1", "{removal}");
    assert_eq!(removal["executable"], true, "{removal}");
    let approver = enroll(&gateway.url, &gateway.invite("Kim").await?).await;
    let served: Value = reqwest::get(format!("{}/v1/openapi.json", gateway.url))
        .await?
        .json()
        .await?;
    let seeded = seeded(&gateway, &agent, &approver, &removal).await?;
    let description = with_seeded_examples(served, &seeded);
    // A refresh supersedes its plan: the approver's run refreshes one the agent's did not.
    let mut for_approver = description.clone();
    let refresh = ("/v1/plans/{id}/refresh", "post");
    example(&mut for_approver, refresh, "id", &seeded.refresh.1);
    let url = gateway.url.clone();
    let agent_token = agent.token().to_owned();
    tokio::task::spawn_blocking(move || {
        let as_agent = Run {
            url: &url,
            token: &agent_token,
            who: "agent",
            description: &description,
            config: CONFIG,
        };
        run(
            as_agent,
            &[
                "GET /v1/gateway",
                "GET /v1/capabilities",
                "GET /v1/capabilities/{id}",
                "POST /v1/capabilities/projects.settings.update/dry_run",
                "POST /v1/capabilities/memberships.grant/dry_run",
                "POST /v1/capabilities/wallet.agent_budget.guard.check/invoke",
                "POST /v1/gateway/identity",
                "GET /v1/plans/{id}",
                "GET /v1/plans/{id}/effects/{effect}/subjects",
                "GET /v1/audit",
            ],
        );
        let as_approver = Run {
            token: &approver.token,
            who: "approver",
            description: &for_approver,
            ..as_agent
        };
        run(
            as_approver,
            &[
                "GET /v1/approvals",
                "GET /v1/plans/{id}",
                "GET /v1/agents/{id}/wallet",
                "GET /v1/audit",
                "GET /v1/approvers/me",
                "GET /v1/standing",
                "POST /v1/standing",
                "POST /v1/plans/{id}/amend",
                "POST /v1/plans/{id}/refresh",
                "POST /v1/plans/{id}/decisions",
            ],
        );
    })
    .await?;
    Ok(())
}

/// Requests no generator can make, made for real before the run.
struct Seeded {
    /// A pending plan, and params it does not hold: an amendment.
    amend: (String, Value),
    /// A plan, and the approval of it the gateway accepted: sent again, it is answered again.
    decide: (String, Value),
    /// A standing approval signed and not yet sent.
    standing: Value,
    /// The agent whose plans wait: its wallet is the approver's to read.
    agent_id: String,
    /// Pending plans of their own for a refresh, which supersedes its plan: the agent's, the
    /// approver's.
    refresh: (String, String),
    /// A plan whose first effect has subjects.
    subjects: String,
}

async fn seeded(
    gateway: &TestGateway,
    agent: &countersign_e2e::Agent,
    approver: &countersign_e2e::Approver,
    removal: &Value,
) -> anyhow::Result<Seeded> {
    let amended = agent
        .dry_run("projects.settings.update", retention("prj_200", 45))
        .await?;
    let decided = agent
        .dry_run("projects.settings.update", retention("prj_421", 60))
        .await?;
    let mut refreshed = Vec::new();
    for days in [30, 31] {
        let plan = agent
            .dry_run("projects.settings.update", retention("prj_184", days))
            .await?;
        refreshed.push(plan["plan_id"].as_str().unwrap().to_owned());
    }
    let gateway_id = countersign_e2e::get(&format!("{}/v1/gateway", gateway.url), &approver.token)
        .await["gateway_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let approval = approver.approval(&gateway_id, &decided);
    let uri = format!(
        "{}/v1/plans/{}/decisions",
        gateway.url,
        decided["plan_id"].as_str().unwrap()
    );
    let (status, answer) =
        countersign_e2e::post(&uri, &approver.token, serde_json::to_value(&approval)?).await?;
    anyhow::ensure!(status == 200, "the seeded approval: {answer}");
    let now = chrono::SubsecRound::trunc_subsecs(chrono::Utc::now(), 0);
    let standing = StandingStatement {
        kind: STANDING_STATEMENT_TYPE.into(),
        standing_id: new_standing_id(),
        approver_id: approver.id.clone(),
        key_id: approver.key_id.clone(),
        audience: gateway_id,
        agent_id: decided["caller"]["agent_id"].as_str().unwrap().into(),
        capability_id: "projects.settings.update".into(),
        constraints: vec![],
        resources: vec!["projects/prj_311".into()],
        risk_flags: vec![],
        max_cost_per_plan: Credits::cents(10),
        max_cost_total: Credits::cents(100),
        max_plans: 2,
        reason: "The schema run's seeded standing approval".into(),
        nonce: new_nonce(),
        issued_at: now,
        expires_at: now + chrono::Duration::days(1),
    };
    Ok(Seeded {
        amend: (
            amended["plan_id"].as_str().unwrap().to_owned(),
            json!({"params": {"project": "prj_200", "retention_days": 40}}),
        ),
        decide: (
            decided["plan_id"].as_str().unwrap().to_owned(),
            serde_json::to_value(approval)?,
        ),
        standing: serde_json::to_value(standing.sign(&approver.key)?)?,
        agent_id: decided["caller"]["agent_id"].as_str().unwrap().to_owned(),
        refresh: (refreshed.remove(0), refreshed.remove(0)),
        subjects: removal["plan_id"].as_str().unwrap().to_owned(),
    })
}

/// The served description with the seeded requests as the examples of their operations. The
/// stateful phase reaches most of them by links too, but only as its walk happens to go: an
/// example makes a 2xx there certain.
fn with_seeded_examples(mut description: Value, seeded: &Seeded) -> Value {
    let requests = [
        (
            "/v1/plans/{id}/amend",
            Some(&seeded.amend.0),
            &seeded.amend.1,
        ),
        (
            "/v1/plans/{id}/decisions",
            Some(&seeded.decide.0),
            &seeded.decide.1,
        ),
        ("/v1/standing", None, &seeded.standing),
    ];
    for (path, id, body) in requests {
        if let Some(id) = id {
            example(&mut description, (path, "post"), "id", id);
        }
        description["paths"][path]["post"]["requestBody"]["content"]["application/json"]
            ["example"] = body.clone();
    }
    let wallet = ("/v1/agents/{id}/wallet", "get");
    example(&mut description, wallet, "id", &seeded.agent_id);
    example(
        &mut description,
        ("/v1/plans/{id}/refresh", "post"),
        "id",
        &seeded.refresh.0,
    );
    let subjects = ("/v1/plans/{id}/effects/{effect}/subjects", "get");
    example(&mut description, subjects, "id", &seeded.subjects);
    example(&mut description, subjects, "effect", "eff_1");
    description
}

/// `value` as the example of the parameter `name` of the operation `(path, method)`.
fn example(description: &mut Value, (path, method): (&str, &str), name: &str, value: &str) {
    let parameters = description["paths"][path][method]
        .get_mut("parameters")
        .and_then(Value::as_array_mut);
    for parameter in parameters
        .into_iter()
        .flatten()
        .filter(|p| p["name"] == name)
    {
        parameter["example"] = json!(value);
    }
}
