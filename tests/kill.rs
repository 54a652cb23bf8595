//! The gateway as its own process, killed with `SIGKILL` while decisions and invokes are in flight,
//! then restarted on the same database, over many kill points. After each restart: no decision
//! the gateway accepted is lost, no plan ran twice, no execution is half applied, the store is
//! intact, and the console's outbox drains. The kill points come from a seed, printed, and
//! `COUNTERSIGN_KILL_SEED` replays them; `COUNTERSIGN_KILL_ROUNDS` sets how many (default 12).

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use countersign_console::client::GatewayClient;
use countersign_console::signing::journal::Journal;
use countersign_e2e::{enroll, gateway_binary, get, post, Approver};
use countersign_engine::{accounts, Store};
use countersign_proto::decision::Decision;
use countersign_proto::dsse::encode_public_key;
use countersign_proto::statement::Signed as _;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

const PROJECTS: [&str; 5] = ["prj_184", "prj_311", "prj_420", "prj_421", "prj_200"];

/// The kill lands within this many milliseconds of the invoker's first answers, while decisions
/// and invokes are still going: the time they take here, so that most kills cut them rather than
/// follow them.
const KILL_WITHIN_MS: u64 = 40;

/// The share of rounds whose kill must cut a request mid-flight (sent, and never answered, as the
/// agent saw it): a harness whose kills all came before, after or between the requests would test
/// nothing.
const MID_FLIGHT_SHARE: f64 = 0.4;

struct Gateway {
    child: Child,
    url: String,
}

impl Gateway {
    async fn start(database: &str) -> Gateway {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(gateway_binary())
            .args([
                "serve",
                "--demo",
                "--rate-limit",
                "off",
                "--database",
                database,
            ])
            .args(["--addr", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Owned at once, so that a gateway that never answers is killed as this panics.
        let gateway = Gateway {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        for _ in 0..300 {
            if reqwest::get(format!("{}/v1/gateway", gateway.url))
                .await
                .is_ok()
            {
                return gateway;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the gateway did not start on {}", gateway.url);
    }

    /// `SIGKILL`, as a crash or the OOM killer would: no handler runs, nothing is flushed.
    fn kill(self) {
        drop(self);
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        // std's kill sends SIGKILL on Unix.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Records an approval of `plan` in the console's outbox, signed, before anything is sent.
async fn record_approval(journal: &Journal, approver: &Approver, gateway_id: &str, plan: &Value) {
    let statement = approver.statement(gateway_id, plan);
    let envelope = statement.sign(&approver.key).unwrap();
    let public_key = encode_public_key(&approver.key.verifying_key());
    journal
        .record(
            gateway_id,
            &statement.plan_id,
            Decision::Approve,
            &envelope,
            &public_key,
        )
        .await
        .unwrap();
}

/// What the store holds of one round's plans, read straight from the file.
async fn stored(database: &str, plans: &[(String, i64)]) -> Vec<(String, i64, i64)> {
    let pool = sqlx::SqlitePool::connect(&format!("{database}?mode=ro"))
        .await
        .unwrap();
    let integrity: String = sqlx::query_scalar("PRAGMA integrity_check")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(integrity, "ok");
    let mut out = Vec::new();
    for (project, (plan_id, _)) in PROJECTS.iter().zip(plans) {
        let row: (String, i64, i64) = sqlx::query_as(
            "SELECT status,
                    (SELECT COUNT(*) FROM execution_audit WHERE plan_id = $1),
                    (SELECT retention_days FROM projects WHERE id = $2)
             FROM plans WHERE id = $1",
        )
        .bind(plan_id)
        .bind(project)
        .fetch_one(&pool)
        .await
        .unwrap();
        out.push(row);
    }
    pool.close().await;
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn killed_mid_flight_the_gateway_loses_nothing_and_runs_nothing_twice() {
    let seed: u64 = std::env::var("COUNTERSIGN_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    let rounds: usize = std::env::var("COUNTERSIGN_KILL_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(12);
    println!("kill harness: COUNTERSIGN_KILL_SEED={seed} COUNTERSIGN_KILL_ROUNDS={rounds}");
    let mut dice = StdRng::seed_from_u64(seed);

    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("gateway.db").display());
    let (agent, code) = {
        let store = Store::open(&database).await.unwrap();
        countersign_embedded::seed_demo(&store).await.unwrap();
        let (_, agent) = accounts::add_agent(&store, "ops-agent", Some("usr_lead"))
            .await
            .unwrap();
        let code = accounts::invite_approver(&store, "Kim", None)
            .await
            .unwrap();
        (agent, code)
    };
    let journal = Journal::open(&dir.path().join("console-journal.db"))
        .await
        .unwrap();
    let mut gateway = Gateway::start(&database).await;
    let approver = enroll(&gateway.url, &code).await;
    let gateway_id = get(&format!("{}/v1/gateway", gateway.url), &agent).await["gateway_id"]
        .as_str()
        .unwrap()
        .to_owned();

    let mut mid_flight = 0;
    for round in 0..rounds {
        // Each round plans a retention no earlier round used, one plan per project.
        let mut plans = Vec::new();
        for (n, project) in PROJECTS.iter().enumerate() {
            let days = 40 + (round * PROJECTS.len() + n) as i64;
            let (status, plan) = post(
                &format!(
                    "{}/v1/capabilities/projects.settings.update/dry_run",
                    gateway.url
                ),
                &agent,
                json!({"params": {"project": project, "retention_days": days}}),
            )
            .await
            .unwrap();
            assert_eq!(status, 200, "{plan}");
            record_approval(&journal, &approver, &gateway_id, &plan).await;
            plans.push((plan["plan_id"].as_str().unwrap().to_owned(), days));
        }

        // Decisions (from the outbox) and invokes race; the kill lands somewhere among them.
        let client = GatewayClient::new(&gateway.url, Some(approver.token.clone())).unwrap();
        let sender = {
            let (journal, gateway_id) = (journal.clone(), gateway_id.clone());
            tokio::spawn(async move { journal.flush(&client, &gateway_id).await })
        };
        // The kill waits for the invoker's first answers: from then on its requests follow each
        // other back to back, so a kill cuts one rather than landing before the first is sent
        // (which a loaded machine made common: the harness then tested nothing).
        let answering = std::sync::Arc::new(tokio::sync::Notify::new());
        let invoker = {
            let (url, agent, plans) = (gateway.url.clone(), agent.clone(), plans.clone());
            let answering = answering.clone();
            // Every plan invoked at once, again and again until the gateway is gone, so that
            // requests are in flight whenever the kill lands.
            tokio::spawn(async move {
                let url = format!("{url}/v1/capabilities/projects.settings.update/invoke");
                let (mut executed, mut cut) = (Vec::new(), 0);
                for _ in 0..200 {
                    let sent = plans
                        .iter()
                        .map(|(plan_id, _)| post(&url, &agent, json!({"plan_id": plan_id})));
                    let mut gone = false;
                    for ((plan_id, _), answer) in
                        plans.iter().zip(futures_util::future::join_all(sent).await)
                    {
                        match answer {
                            Ok((200, _)) => executed.push(plan_id.clone()),
                            Ok(_) => {}
                            // Refused at the door: the gateway was already gone.
                            Err(e) if e.is_connect() => gone = true,
                            // Sent, and never answered: the kill cut it.
                            Err(_) => cut += 1,
                        }
                    }
                    answering.notify_one();
                    if gone {
                        break;
                    }
                }
                (executed, cut)
            })
        };
        let _ = tokio::time::timeout(Duration::from_secs(30), answering.notified()).await;
        tokio::time::sleep(Duration::from_millis(dice.gen_range(0..KILL_WITHIN_MS))).await;
        gateway.kill();
        sender.await.unwrap().unwrap();
        let (answered_ok, cut) = invoker.await.unwrap();
        let answered_decisions: Vec<String> = journal
            .entries(None)
            .await
            .unwrap()
            .into_iter()
            .filter(|e| e.state == "answered" && plans.iter().any(|(id, _)| *id == e.plan_id))
            .map(|e| e.plan_id)
            .collect();

        println!(
            "round {round}: {} decisions and {} executions answered before the kill, {cut} \
             invokes cut by it",
            answered_decisions.len(),
            answered_ok.len()
        );
        // Mid-flight: the kill cut a request the agent had sent, not a gap between two.
        mid_flight += usize::from(cut > 0);
        // Nothing half done on disk: each plan ran once with its value, or not at all.
        for ((status, runs, days), (plan_id, planned)) in
            stored(&database, &plans).await.iter().zip(&plans)
        {
            assert!(
                *runs <= 1,
                "round {round}: {plan_id} ran {runs} times (seed {seed})"
            );
            let ran = *runs == 1;
            assert_eq!(
                status == "executed",
                ran,
                "round {round}: {plan_id} is {status} (seed {seed})"
            );
            assert_eq!(
                days == planned,
                ran,
                "round {round}: {plan_id} half applied (seed {seed})"
            );
            if answered_ok.contains(plan_id) {
                assert!(
                    ran,
                    "round {round}: {plan_id} answered 200 but did not run (seed {seed})"
                );
            }
        }

        gateway = Gateway::start(&database).await;
        let client = GatewayClient::new(&gateway.url, Some(approver.token.clone())).unwrap();
        for (plan_id, _) in &plans {
            let record = get(
                &format!("{}/v1/plans/{plan_id}", gateway.url),
                &approver.token,
            )
            .await;
            if answered_decisions.contains(plan_id) {
                assert_eq!(
                    record["approvals"]["received"].as_array().map(Vec::len),
                    Some(1),
                    "round {round}: an accepted decision on {plan_id} was lost (seed {seed})"
                );
            }
        }
        // The outbox drains into the restarted gateway, each decision settled once.
        let drained = journal.flush(&client, &gateway_id).await.unwrap();
        assert_eq!(
            drained.waiting, 0,
            "round {round}: {drained:?} (seed {seed})"
        );
        assert!(journal.pending(&gateway_id).await.unwrap().is_empty());
        for (plan_id, _) in &plans {
            let url = format!(
                "{}/v1/capabilities/projects.settings.update/invoke",
                gateway.url
            );
            let (status, reply) = post(&url, &agent, json!({"plan_id": plan_id}))
                .await
                .unwrap();
            // Executed before the kill: a second invoke is refused; otherwise it runs now.
            let code = reply["error"]["code"].as_str().unwrap_or("ok").to_owned();
            assert!(
                status == 200 || code == "plan_already_executed",
                "round {round}: {plan_id} answered {status} {reply} (seed {seed})"
            );
        }
        for ((status, runs, days), (_, planned)) in
            stored(&database, &plans).await.iter().zip(&plans)
        {
            let done = (status.as_str(), *runs, days);
            assert_eq!(
                done,
                ("executed", 1, planned),
                "round {round} (seed {seed})"
            );
        }
    }
    gateway.kill();
    println!("kill harness: {mid_flight} of {rounds} kills cut a request mid-flight");
    assert!(
        mid_flight as f64 >= MID_FLIGHT_SHARE * rounds as f64,
        "only {mid_flight} of {rounds} kills cut a request (seed {seed}): the harness mostly \
         killed a gateway between requests"
    );
}
