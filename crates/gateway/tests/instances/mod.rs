//! Two gateway instances on one PostgreSQL database: each with its own pools and listener, as
//! two processes behind a load balancer would be, and then as two real processes, one killed.
//! These run in `make test`'s PostgreSQL pass (`COUNTERSIGN_TEST_POSTGRES`); without a server
//! they fail and say why, never pass having tested nothing.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use crate::common::sse::{beating, Events};
use crate::common::{approve_by, at_once, retention, Gateway, JsonReply, RETENTION};
use axum::http::StatusCode;
use countersign_embedded::default_registry;
use countersign_engine::{Limits, Store};
use serde_json::{json, Value};

const REMOVE: &str = "groups.members.remove";

/// A new database on the test server. These tests run in `make test`'s PostgreSQL pass only
/// (the SQLite pass leaves this binary out); without a server they fail, and say why.
pub(crate) async fn shared_database() -> crate::common::TestDatabase {
    assert!(
        std::env::var("COUNTERSIGN_TEST_POSTGRES").is_ok(),
        "two gateway instances need a PostgreSQL server: run `make postgres-test` \
         (COUNTERSIGN_TEST_POSTGRES names one)"
    );
    crate::common::demo_database("unused").await
}

/// Another instance on the database `first` uses, acting as the same agent; no rate limit, so
/// that a storm of requests is decided by the store, not refused at the door.
async fn second(url: &str, first: &Gateway) -> Gateway {
    let store = Store::open(url).await.unwrap();
    Gateway::acting_as(
        crate::common::state_with(store, unlimited(), default_registry()).await,
        first.agent.clone(),
    )
}

pub(crate) fn unlimited() -> Limits {
    Limits {
        rate: None,
        ..Limits::default()
    }
}

async fn first(url: &str) -> Gateway {
    let store = Store::open(url).await.unwrap();
    countersign_embedded::seed_demo(&store).await.unwrap();
    Gateway::from_state(crate::common::state_with(store, unlimited(), default_registry()).await)
        .await
}

/// A server that ends the gateway's connections (a restart, a failover, an operator) costs at
/// most the requests already under way on them, each answered `storage_unavailable` (503,
/// retryable), never `internal`; once the pool's connections sat idle past the alive-bypass
/// window, it tests them before use, and no request fails.
#[tokio::test]
async fn connections_the_server_ended_fail_as_storage_unavailable_then_are_replaced() {
    use sqlx::Connection as _;
    let db = shared_database().await;
    let gw = first(&db.url).await;
    let mut admin = sqlx::PgConnection::connect(&db.url).await.unwrap();
    let end_all = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                   WHERE datname = current_database() AND pid <> pg_backend_pid()";
    let status = |r: &crate::common::Reply| (r.status, r.body["error"]["code"].clone());
    // A plan's record is read from the store on every request (a caller may be served again).
    let plan = gw
        .dry_run(json!({"project": "prj_184", "retention_days": 30}))
        .await;
    let uri = format!("/v1/plans/{}", plan["plan_id"].as_str().unwrap());
    let list = || gw.call("GET", &uri, Some(&gw.agent), None);
    assert_eq!(list().await.status, StatusCode::OK);

    // Ended while just used: some requests fail, but only as the store being unreachable. Every
    // read connection is used at once first, so none is idle long enough to be tested before its
    // next use, and the server ends them all before the first request meets one.
    let together: Vec<_> = (0..16).map(|_| list()).collect();
    for answer in futures_util::future::join_all(together).await {
        assert_eq!(answer.status, StatusCode::OK);
    }
    let ended: Vec<i32> = sqlx::query_scalar(
        "SELECT pid FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid()",
    )
    .fetch_all(&mut admin)
    .await
    .unwrap();
    sqlx::query("SELECT pg_terminate_backend(p) FROM unnest($1::int4[]) AS p")
        .bind(&ended)
        .execute(&mut admin)
        .await
        .unwrap();
    let alive = "SELECT COUNT(*) FROM pg_stat_activity WHERE pid = ANY($1)";
    while sqlx::query_scalar::<_, i64>(alive)
        .bind(&ended)
        .fetch_one(&mut admin)
        .await
        .unwrap()
        > 0
    {
        tokio::task::yield_now().await;
    }
    let mut failed = 0;
    for _ in 0..20 {
        let answer = list().await;
        if answer.status != StatusCode::OK {
            assert_eq!(
                status(&answer),
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    json!("storage_unavailable")
                ),
                "{}",
                answer.body
            );
            failed += 1;
        }
    }
    assert!(
        (1..=8).contains(&failed),
        "{failed} of 20 requests failed after the connections ended: at least the first one \
         on a dead connection must, as storage_unavailable"
    );
    assert_eq!(list().await.status, StatusCode::OK, "the pool recovered");

    // Ended, then idle past the window: every connection is tested first, and nothing fails.
    sqlx::query(end_all).execute(&mut admin).await.unwrap();
    tokio::time::sleep(countersign_engine::store::PING_AFTER_IDLE * 2).await;
    for _ in 0..20 {
        let answer = list().await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    }
}

/// The harness itself: a pass makes hundreds of databases, and each goes with its test.
#[tokio::test]
async fn a_test_gateway_takes_its_database_with_it() {
    use sqlx::Connection as _;
    let server = std::env::var("COUNTERSIGN_TEST_POSTGRES").expect("a PostgreSQL server");
    let gw = Gateway::bare().await;
    let name: String = sqlx::query_scalar("SELECT current_database()::text")
        .fetch_one(gw.state.store.pool())
        .await
        .unwrap();
    assert!(name.starts_with("cs_scratch_"), "{name}");
    drop(gw);
    let mut admin = sqlx::PgConnection::connect(&server).await.unwrap();
    let left: Option<i32> = sqlx::query_scalar("SELECT 1 FROM pg_database WHERE datname = $1")
        .bind(&name)
        .fetch_optional(&mut admin)
        .await
        .unwrap();
    assert_eq!(left, None, "{name} outlived its gateway");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_invokes_spread_over_two_instances_execute_the_plan_once() {
    let url = shared_database().await;
    let a = Arc::new(first(&url).await);
    let b = Arc::new(second(&url, &a).await);
    let dana = a.enroll("Dana").await;
    let plan = a.preview(RETENTION, retention("prj_184", 14)).await;
    approve_by(&b, &plan, &[&dana]).await;
    let plan_id = plan["plan_id"].as_str().unwrap().to_owned();

    let replies = at_once(200, |i| {
        let gw = if i % 2 == 0 { a.clone() } else { b.clone() };
        // Half with an idempotency key each, half without: neither path may run twice.
        let body = match i % 4 < 2 {
            true => json!({"plan_id": plan_id}),
            false => json!({"plan_id": plan_id, "idempotency_key": format!("k{i}")}),
        };
        async move { gw.invoke_as(&gw.agent, RETENTION, body).await }
    })
    .await;
    // Read through B: both instances answer from one store.
    b.assert_ran_once(&replies, &plan_id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn decisions_sent_to_two_instances_count_toward_one_quorum() {
    let url = shared_database().await;
    let a = Arc::new(first(&url).await);
    let b = Arc::new(second(&url, &a).await);
    let plan = a
        .preview(
            REMOVE,
            json!({"group": "grp_support", "filter": {"employment": "contractor"}}),
        )
        .await;
    assert_eq!(plan["would_require_approval"], true);
    let plan_id = plan["plan_id"].as_str().unwrap().to_owned();
    let approvers = Arc::new([a.enroll("Dana").await, b.enroll("Eli").await]);

    let replies = at_once(2, |i| {
        let gw = [&a, &b][i].clone();
        let (plan, approvers) = (plan.clone(), approvers.clone());
        async move {
            let approver = &approvers[i];
            let envelope = approver.sign(&approver.statement(&gw, &plan));
            approver
                .send(&gw, plan["plan_id"].as_str().unwrap(), &envelope)
                .await
        }
    })
    .await;
    let mut received = Vec::new();
    for reply in replies {
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        received.push(
            reply.body["approvals"]["received"]
                .as_array()
                .unwrap()
                .len(),
        );
    }
    received.sort();
    assert_eq!(
        received,
        [1, 2],
        "each answer counts the other's approval or not, never both"
    );
    for gw in [&a, &b] {
        let record = gw.record(&approvers[0].token, &plan_id).await;
        assert_eq!(record.body["status"], "approved", "{}", record.body);
    }
    let decisions = "SELECT COUNT(*) FROM decisions WHERE plan_id = $1";
    assert_eq!(b.count(decisions, &plan_id).await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_stream_on_one_instance_sees_a_plan_created_on_the_other() {
    let url = shared_database().await;
    let a = first(&url).await;
    let store = Store::open(&url).await.unwrap();
    let heartbeat = Duration::from_secs(3);
    let b = Gateway::acting_as(beating(store, heartbeat).await, a.agent.clone());
    assert_eq!(
        a.state.gateway_id, b.state.gateway_id,
        "one gateway, two instances"
    );
    let dana = b.enroll("Dana").await;
    let mut stream = Events::open(&b, &dana.token, None).await;
    let plan = a.preview(RETENTION, retention("prj_184", 21)).await;
    let mut heartbeats = 0;
    let created = loop {
        let event = stream.next(true).await;
        match event.event {
            Some(_) => break event,
            None => heartbeats += 1,
        }
    };
    assert!(
        heartbeats <= 1,
        "the plan reached B within one heartbeat ({heartbeats} passed)"
    );
    assert_eq!(created.event.as_deref(), Some("plan.created"));
    let summary: Value = serde_json::from_str(&created.data).unwrap();
    assert_eq!(summary["plan_id"], plan["plan_id"]);
    // Revisions are one sequence for both instances: B's stream names the event as A logged it.
    let logged: i64 =
        sqlx::query_scalar("SELECT MAX(revision) FROM plan_events WHERE plan_id = $1")
            .bind(plan["plan_id"].as_str())
            .fetch_one(a.state.store.pool())
            .await
            .unwrap();
    assert_eq!(created.id, Some(logged.to_string()));
    // One queue: both instances tag its listing alike.
    let listing = "/v1/approvals?status=pending";
    let on_a = a.call("GET", listing, Some(&dana.token), None).await;
    let on_b = b.call("GET", listing, Some(&dana.token), None).await;
    assert_eq!(on_a.body, on_b.body);
    assert_eq!(on_a.headers["etag"], on_b.headers["etag"]);
}

const BIN: &str = env!("CARGO_BIN_EXE_countersign-gateway");

/// `countersign-gateway serve` on `url` and a free loopback port, with `more` arguments; the
/// process and its address.
fn serve(url: &str, more: &[&str]) -> (std::process::Child, String) {
    let mut child = Command::new(BIN)
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--database",
            url,
            "--rate-limit",
            "off",
        ])
        .args(more)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let address = line.trim().rsplit(' ').next().unwrap().to_owned();
    assert!(address.starts_with("http://127.0.0.1:"), "{line}");
    (child, address)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn killing_one_of_two_serving_processes_loses_nothing() {
    let url = shared_database().await;
    let setup = first(&url).await;
    let dana = setup.enroll("Dana").await;
    let plan = setup.preview(RETENTION, retention("prj_184", 9)).await;
    approve_by(&setup, &plan, &[&dana]).await;
    let plan_id = plan["plan_id"].as_str().unwrap().to_owned();
    let (mut a, a_url) = serve(&url, &[]);
    let (mut b, b_url) = serve(&url, &[]);

    let client = reqwest::Client::new();
    let invoke = |base: &str, i: usize| {
        client
            .post(format!("{base}/v1/capabilities/{RETENTION}/invoke"))
            .bearer_auth(&setup.agent)
            .json(&json!({"plan_id": plan_id, "idempotency_key": format!("k{i}")}))
            .send()
    };
    let mut pending = Vec::new();
    for i in 0..200 {
        let base = if i % 2 == 0 { &a_url } else { &b_url };
        pending.push(invoke(base, i));
    }
    let answered = tokio::sync::Notify::new();
    let cut = std::sync::atomic::AtomicUsize::new(0);
    let storm =
        futures_util::future::join_all(pending.into_iter().enumerate().map(|(i, request)| {
            let (invoke, b_url, answered, cut) = (&invoke, &b_url, &answered, &cut);
            async move {
                let reply = match request.await {
                    Ok(reply) => reply,
                    // What A never answered, the agent sends again, to B, with the same key.
                    Err(_) => {
                        cut.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        invoke(b_url, i).await.unwrap()
                    }
                };
                answered.notify_one();
                reply
            }
        }));
    let killer = async {
        // Once the storm is under way, A dies as a crash would: no shutdown, no goodbye.
        answered.notified().await;
        a.kill().unwrap();
    };
    let (replies, ()) = tokio::join!(storm, killer);
    a.wait().unwrap();
    // The kill must have cut requests mid-flight, or this proved nothing about a crash.
    let cut = cut.into_inner();
    assert!(
        cut > 0,
        "the kill cut no request: every one was answered first"
    );
    println!("{cut} of A's requests were cut by the kill and sent again to B");

    let mut executed = 0;
    for reply in replies {
        let status = reply.status();
        let body: Value = reply.json().await.unwrap();
        match status {
            reqwest::StatusCode::OK => executed += 1,
            reqwest::StatusCode::CONFLICT => {
                assert_eq!(body["error"]["code"], "plan_already_executed", "{body}")
            }
            other => panic!("{other}: {body}"),
        }
    }
    assert_eq!(
        executed, 1,
        "the plan ran once, and only its key answers with the result"
    );
    let runs = "SELECT COUNT(*) FROM execution_audit WHERE plan_id = $1";
    assert_eq!(setup.count(runs, &plan_id).await, 1, "exactly once");
    let status = client
        .get(format!("{b_url}/v1/plans/{plan_id}"))
        .bearer_auth(&dana.token)
        .send()
        .await
        .unwrap();
    let record: Value = status.json().await.unwrap();
    assert_eq!(record["status"], "executed", "{record}");
    b.kill().unwrap();
    b.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_call_in_flight_on_a_killed_instance_is_failed_by_the_other() {
    let url = shared_database().await;
    let setup = first(&url).await;
    // With --demo each process calls its own local provider; a `[[slow]]` prediction never ends.
    let (mut a, a_url) = serve(&url, &["--demo"]);
    let (mut b, _) = serve(&url, &["--demo"]);
    let client = reqwest::Client::new();
    let params = json!({"model": "black-forest-labs/flux-schnell", "prompt": "[[slow]] owl"});
    let plan: Value = client
        .post(format!("{a_url}/v1/capabilities/image.generate/dry_run"))
        .bearer_auth(&setup.agent)
        .json(&json!({ "params": params }))
        .json_reply()
        .await;
    let plan_id = plan["plan_id"].as_str().unwrap().to_owned();
    let call = tokio::spawn(
        client
            .post(format!("{a_url}/v1/capabilities/image.generate/invoke"))
            .bearer_auth(&setup.agent)
            .json(&json!({ "plan_id": plan_id }))
            .send(),
    );
    let row = "SELECT status, runner FROM plans WHERE id = $1";
    let runner = within(async {
        loop {
            let (status, runner): (String, Option<String>) = sqlx::query_as(row)
                .bind(&plan_id)
                .fetch_one(setup.state.store.pool())
                .await
                .unwrap();
            match runner {
                Some(runner) => return runner,
                None => assert_eq!(status, "approved", "the call is not yet in flight"),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(runner.starts_with("inst_"), "{runner}");
    a.kill().unwrap();
    a.wait().unwrap();
    assert!(call.await.unwrap().is_err(), "A never answered");
    // B's sweep finds the call's runner gone and records the call as failed, charge kept.
    let execution = within(async {
        loop {
            let (status, execution): (String, String) =
                sqlx::query_as("SELECT status, execution FROM plans WHERE id = $1")
                    .bind(&plan_id)
                    .fetch_one(setup.state.store.pool())
                    .await
                    .unwrap();
            if status == "failed" {
                return serde_json::from_str::<Value>(&execution).unwrap();
            }
            assert_eq!(status, "executed");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    assert_eq!(execution["in_flight"], false);
    assert_eq!(execution["result"]["error"]["code"], "provider_unavailable");
    b.kill().unwrap();
    b.wait().unwrap();
}

/// `wait`'s answer, or a failed test once a minute has passed: a broken sweep must not hang the
/// suite.
async fn within<T>(wait: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), wait)
        .await
        .expect("what the test waits for happens within a minute")
}

/// Two instances started with one policy evaluate it alike; an instance still serving an older
/// policy once another started with a new one refuses to store plans (`policy_error`) rather
/// than judge them by rules the others do not apply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_evaluate_the_same_policy_digest() {
    let database = shared_database().await;
    let policy = |count: u32| {
        let text = format!(
            "package countersign.approval\nimport rego.v1\nrules contains {{\"id\": \"leads\", \
             \"count\": {count}, \"teams\": [\"leads\"]}} if count(input.plan.effects) > 0\n"
        );
        countersign_policy::Policy::from_sources(
            countersign_policy::Sources {
                modules: vec![("p.rego".to_owned(), text)],
                data: None,
            },
            "test",
        )
        .unwrap()
    };
    let start = |policy: countersign_policy::Policy| {
        let url = database.url.clone();
        async move {
            let store = Store::open(&url).await.unwrap();
            countersign_embedded::seed_demo(&store).await.unwrap();
            countersign_embedded::state_with_policy(
                store,
                "Test",
                unlimited(),
                default_registry(),
                policy,
            )
            .await
            .unwrap()
        }
    };
    let one = Gateway::from_state(start(policy(1)).await).await;
    let two = Gateway::acting_as(start(policy(1)).await, one.agent.clone());
    let sam = two.enroll_as("Sam", "usr_92").await;
    let on_one = one.preview(RETENTION, retention("prj_184", 14)).await;
    let on_two = two.preview(RETENTION, retention("prj_184", 21)).await;
    let digests: Vec<String> = sqlx::query_scalar("SELECT DISTINCT policy_digest FROM plans")
        .fetch_all(one.state.store.pool())
        .await
        .unwrap();
    assert_eq!(digests, [one.state.policy.digest()]);
    assert_eq!(one.state.policy.digest(), two.state.policy.digest());
    // A plan stored by one is decided on the other under the same rule.
    let done = approve_by(&two, &on_one, &[&sam]).await;
    assert_eq!(done.body["status"], "approved");
    assert_eq!(done.body["approvals"]["rules"][0]["id"], "leads");
    drop(on_two);

    // A third instance starts with another policy: it is in force, the others refuse.
    let three = Gateway::acting_as(start(policy(2)).await, one.agent.clone());
    let refused = one
        .try_preview(
            RETENTION,
            json!({"project": "prj_184", "retention_days": 30}),
        )
        .await;
    crate::common::assert_error(&refused, "policy_error", 500);
    let fresh = three.preview(RETENTION, retention("prj_184", 60)).await;
    let record = three
        .record(&sam.token, fresh["plan_id"].as_str().unwrap())
        .await
        .body;
    assert_eq!(record["approvals"]["required"], 2);
}

mod drain;
mod standing;
