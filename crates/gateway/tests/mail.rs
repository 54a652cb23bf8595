//! Emails really leave (seed 004): an execution's messages go through a real SMTP conversation to
//! a sink started here, exactly the planned ones, once; a preview, a refused execution and a stale
//! plan send none; an address changed after the plan is not mailed but held for a person; a relay
//! that is down is retried; and `serve --smtp-relay` delivers through its own dispatcher.

use std::time::Duration;

use crate::common::smtp::{set_email, Sink};
use crate::common::{assert_error, grant, Gateway, JsonReply, GRANT};
use countersign_engine::mail::{self, Pass};
use countersign_gateway::smtp::Relay;
use serde_json::{json, Value};

const FROM: &str = "Countersign <countersign@localhost>";

fn removal() -> Value {
    json!({"group": "grp_support", "filter": {"employment": "contractor"}})
}

/// The grant whose invitation most of these tests mail.
fn admin_grant() -> Value {
    grant("prj_184", "usr_92", "admin")
}

/// The addresses of `users`, as the world holds them now, sorted.
async fn addresses(gw: &Gateway, users: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for user in users {
        let email: String = sqlx::query_scalar("SELECT email FROM users WHERE id = $1")
            .bind(user)
            .fetch_one(gw.state.store.pool())
            .await
            .unwrap();
        out.push(email);
    }
    out.sort();
    out
}

async fn outbox(gw: &Gateway) -> Vec<(String, String, i64)> {
    sqlx::query_as("SELECT user_id, state, attempts FROM email_outbox ORDER BY id")
        .fetch_all(gw.state.store.pool())
        .await
        .unwrap()
}

fn now() -> chrono::DateTime<chrono::Utc> {
    countersign_engine::ids::now()
}

#[tokio::test]
async fn an_execution_delivers_exactly_the_planned_messages_once() {
    let sink = Sink::start().await;
    let relay = Relay::new(&sink.url, FROM).unwrap();
    let gw = Gateway::new().await;
    let plan = gw.approved("groups.members.remove", removal()).await;
    let plan_id = plan["plan_id"].as_str().unwrap();
    let notify = plan["effects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "notify")
        .unwrap();
    let approver = gw.enroll("Reader").await;
    let planned = gw
        .all_subjects(
            &approver.token,
            plan_id,
            notify["id"].as_str().unwrap(),
            1000,
        )
        .await;
    assert_eq!(planned.len(), 37);
    assert_eq!(sink.connections(), 0, "nothing leaves before execution");

    let reply = gw.execute(&plan).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        sink.connections(),
        0,
        "nothing leaves inside the transaction"
    );
    let pass = mail::dispatch(&gw.state.store, gw.state.registry, &relay, now())
        .await
        .unwrap();
    assert_eq!(
        pass,
        Pass {
            sent: 37,
            ..Pass::default()
        }
    );
    assert_eq!(sink.recipients(), addresses(&gw, &planned).await);
    for message in sink.messages() {
        assert_eq!(message.to.len(), 1, "one message per person");
        assert!(message.data.contains("Subject: Your access changed"));
        assert!(message
            .data
            .contains("no longer a direct member of grp_support"));
        assert!(message.data.contains("Message-ID: <outbox-"));
    }

    let again = mail::dispatch(
        &gw.state.store,
        gw.state.registry,
        &relay,
        now() + chrono::Duration::hours(1),
    )
    .await
    .unwrap();
    assert_eq!(again, Pass::default(), "a sent message is not sent again");
    assert_eq!(sink.messages().len(), 37);
    let record = gw.record(&approver.token, plan_id).await;
    assert_eq!(
        record.body["execution"]["deliveries"],
        json!({"counts": {"sent": 37}, "attention": [], "remedies": []})
    );
}

#[tokio::test]
async fn previews_refusals_and_stale_plans_send_nothing() {
    let sink = Sink::start().await;
    let gw = Gateway::new().await;
    countersign_gateway::smtp::spawn(&gw.state, Relay::new(&sink.url, FROM).unwrap());

    for (capability, params) in [("groups.members.remove", removal()), (GRANT, admin_grant())] {
        gw.preview(capability, params).await;
    }
    let unapproved = gw.preview(GRANT, admin_grant()).await;
    let refused = gw.execute(&unapproved).await;
    assert_error(&refused, "approval_required", 409);

    let stale = gw.approved("groups.members.remove", removal()).await;
    set_email(&gw, "usr_01", "someone.else@example.com").await;
    assert_error(&gw.execute(&stale).await, "plan_stale", 409);

    let pass = mail::dispatch(
        &gw.state.store,
        gw.state.registry,
        &Relay::new(&sink.url, FROM).unwrap(),
        now(),
    )
    .await
    .unwrap();
    assert_eq!(pass, Pass::default());
    assert!(outbox(&gw).await.is_empty());
    // A message that must go, last: once the spawned dispatcher delivers it, it has passed every
    // commit above (the outbox goes in order), and it is the only message the relay ever got.
    let marker = gw.approved(GRANT, other_grant()).await;
    assert_eq!(gw.execute(&marker).await.status, 200);
    let received = sink.received(1).await;
    assert_eq!(received.len(), 1, "{received:?}");
    assert!(received[0].data.contains("prj_421"), "{}", received[0].data);
    assert_eq!(outbox(&gw).await.len(), 1);
}

/// A grant on another project, to another person: its invitation marks what was sent before.
fn other_grant() -> Value {
    grant("prj_421", "usr_38", "editor")
}

#[tokio::test]
async fn an_address_changed_after_the_preview_makes_the_plan_stale_naming_the_person() {
    let gw = Gateway::new().await;
    let plan = gw.approved(GRANT, admin_grant()).await;
    set_email(&gw, "usr_92", "sam@elsewhere.example").await;
    // The approvers see it at once: the person's revision moved (migration 0014).
    let reader = gw.enroll("Reader").await;
    let record = gw
        .record(&reader.token, plan["plan_id"].as_str().unwrap())
        .await;
    assert_eq!(record.body["status"], "stale", "{}", record.body);
    assert_eq!(
        record.body["stale"]["moved"][0]["resource"], "users/usr_92",
        "{}",
        record.body
    );
    let reply = gw.execute(&plan).await;
    assert_error(&reply, "plan_stale", 409);
    let moved = &reply.body["error"]["details"]["moved"];
    assert_eq!(moved[0]["resource"], "users/usr_92", "{moved}");
    assert!(outbox(&gw).await.is_empty());
}

#[tokio::test]
async fn an_address_changed_after_execution_is_held_for_a_person() {
    let sink = Sink::start().await;
    let relay = Relay::new(&sink.url, FROM).unwrap();
    let gw = Gateway::new().await;
    let plan = gw.approved(GRANT, admin_grant()).await;
    assert_eq!(gw.execute(&plan).await.status, 200);
    set_email(&gw, "usr_92", "sam@elsewhere.example").await;

    let pass = mail::dispatch(&gw.state.store, gw.state.registry, &relay, now())
        .await
        .unwrap();
    assert_eq!(
        pass,
        Pass {
            held: 1,
            ..Pass::default()
        }
    );
    assert_eq!(sink.connections(), 0);
    let approver = gw.enroll("Reader").await;
    let record = gw
        .record(&approver.token, plan["plan_id"].as_str().unwrap())
        .await;
    let deliveries = &record.body["execution"]["deliveries"];
    assert_eq!(deliveries["counts"], json!({"held": 1}));
    assert_eq!(deliveries["attention"][0]["user_id"], "usr_92");
    let why = deliveries["attention"][0]["reason"].as_str().unwrap();
    assert!(why.starts_with("recipient_changed"), "{why}");
    assert!(why.contains("sam@elsewhere.example"), "{why}");
    let later = mail::dispatch(
        &gw.state.store,
        gw.state.registry,
        &relay,
        now() + chrono::Duration::hours(1),
    )
    .await
    .unwrap();
    assert_eq!(later, Pass::default(), "a held message waits for a person");
}

#[tokio::test]
async fn a_relay_that_is_down_is_retried_until_it_takes_the_message() {
    let sink = Sink::failing_first(2).await;
    let relay = Relay::new(&sink.url, FROM).unwrap();
    let gw = Gateway::new().await;
    let plan = gw.approved(GRANT, admin_grant()).await;
    assert_eq!(gw.execute(&plan).await.status, 200);

    let start = now();
    let retrying = Pass {
        retrying: 1,
        ..Pass::default()
    };
    assert_eq!(
        mail::dispatch(&gw.state.store, gw.state.registry, &relay, start)
            .await
            .unwrap(),
        retrying
    );
    assert_eq!(
        mail::dispatch(&gw.state.store, gw.state.registry, &relay, start)
            .await
            .unwrap(),
        Pass::default(),
        "not again before its retry is due"
    );
    let later = |s| start + chrono::Duration::seconds(s);
    assert_eq!(
        mail::dispatch(&gw.state.store, gw.state.registry, &relay, later(3))
            .await
            .unwrap(),
        retrying
    );
    assert_eq!(
        mail::dispatch(&gw.state.store, gw.state.registry, &relay, later(30))
            .await
            .unwrap(),
        Pass {
            sent: 1,
            ..Pass::default()
        }
    );
    assert_eq!(sink.messages().len(), 1);
    assert_eq!(
        outbox(&gw).await,
        [("usr_92".to_owned(), "sent".to_owned(), 3)]
    );
}

#[tokio::test]
async fn a_relay_that_never_answers_is_given_up_after_the_last_attempt() {
    // A port nobody listens on: every attempt fails to connect.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let relay = Relay::new(&format!("smtp://127.0.0.1:{port}"), FROM).unwrap();
    let gw = Gateway::new().await;
    let plan = gw.approved(GRANT, admin_grant()).await;
    assert_eq!(gw.execute(&plan).await.status, 200);
    let mut at = now();
    for _ in 1..mail::MAX_ATTEMPTS {
        let pass = mail::dispatch(&gw.state.store, gw.state.registry, &relay, at)
            .await
            .unwrap();
        assert_eq!(
            pass,
            Pass {
                retrying: 1,
                ..Pass::default()
            }
        );
        at += chrono::Duration::hours(2);
    }
    let last = mail::dispatch(&gw.state.store, gw.state.registry, &relay, at)
        .await
        .unwrap();
    assert_eq!(
        last,
        Pass {
            failed: 1,
            ..Pass::default()
        }
    );
    let (_, state, attempts) = outbox(&gw).await.remove(0);
    assert_eq!((state.as_str(), attempts), ("failed", mail::MAX_ATTEMPTS));
}

#[tokio::test]
async fn a_relay_that_accepts_and_says_nothing_holds_up_nothing_and_its_lease_keeps_others_off() {
    // A relay that takes the connection and never speaks.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("smtp://{}", silent.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = silent.accept().await {
            held.push(stream);
        }
    });
    let stalled = Relay::new(&url, FROM)
        .unwrap()
        .with_send_timeout(Duration::from_secs(2));
    let sink = Sink::start().await;
    let good = Relay::new(&sink.url, FROM).unwrap();
    let gw = Gateway::new().await;
    let plan = gw.approved(GRANT, admin_grant()).await;
    assert_eq!(gw.execute(&plan).await.status, 200);

    let store = &gw.state.store;
    let (first, second) = tokio::join!(
        mail::dispatch(store, gw.state.registry, &stalled, now()),
        async {
            // Once the first has claimed the message, a second dispatcher must leave it alone.
            tokio::time::sleep(Duration::from_millis(500)).await;
            mail::dispatch(store, gw.state.registry, &good, now()).await
        }
    );
    assert_eq!(
        first.unwrap(),
        Pass {
            retrying: 1,
            ..Pass::default()
        }
    );
    assert_eq!(
        second.unwrap(),
        Pass::default(),
        "sent under another's lease"
    );
    assert_eq!(sink.connections(), 0);
    let later = now() + chrono::Duration::minutes(1);
    assert_eq!(
        mail::dispatch(store, gw.state.registry, &good, later)
            .await
            .unwrap(),
        Pass {
            sent: 1,
            ..Pass::default()
        }
    );
    assert_eq!(
        outbox(&gw).await,
        [("usr_92".to_owned(), "sent".to_owned(), 2)]
    );
}

/// The gateway binary, as an operator runs it.
const BIN: &str = env!("CARGO_BIN_EXE_countersign-gateway");

/// Runs an admin command of the binary; the last line it prints.
fn admin(args: &[&str]) -> String {
    let output = std::process::Command::new(BIN).args(args).output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    stdout.lines().last().unwrap().trim().to_owned()
}

/// POSTs `body` to `url` as `bearer`: the status and the JSON answer.
async fn post(url: String, bearer: Option<&str>, body: Value) -> (u16, Value) {
    let mut request = reqwest::Client::new().post(url).json(&body);
    if let Some(bearer) = bearer {
        request = request.bearer_auth(bearer);
    }
    let reply = request.send().await.unwrap();
    let status = reply.status().as_u16();
    (status, reply.json().await.unwrap())
}

/// The path a served gateway takes: `serve --smtp-relay` runs the background dispatcher, which
/// delivers an execution's message with no call from here; while it runs, a preview and an
/// approval send nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_with_an_smtp_relay_delivers_through_its_own_dispatcher() {
    let sink = Sink::start().await;
    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("gw.db").display());
    let agent = ["agents", "add", "--database", &database, "--name", "ops"];
    let token = admin(&[&agent[..], &["--on-behalf-of", "usr_lead"]].concat());
    let code = admin(&[
        "approvers",
        "invite",
        "--database",
        &database,
        "--name",
        "Dana",
    ]);
    let serve = [
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--database",
        &database,
        "--demo",
    ];
    let mut server = std::process::Command::new(BIN)
        .args([&serve[..], &["--smtp-relay", &sink.url]].concat())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let stdout = server.stdout.take().unwrap();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_owned();

    let preview = format!("{url}/v1/capabilities/memberships.grant/dry_run");
    let (status, plan) = post(
        preview.clone(),
        Some(&token),
        json!({"params": admin_grant()}),
    )
    .await;
    assert_eq!(status, 200, "{plan}");
    let key = ed25519_dalek::SigningKey::generate(&mut rand::rngs::OsRng);
    let public_key = countersign_proto::dsse::encode_public_key(&key.verifying_key());
    let enroll = json!({"enrollment_code": code, "display_name": "Dana", "public_key": public_key});
    let (status, enrolled) = post(format!("{url}/v1/approvers/enroll"), None, enroll).await;
    assert_eq!(status, 200, "{enrolled}");
    let dana = crate::common::Approver {
        id: enrolled["approver_id"].as_str().unwrap().to_owned(),
        key_id: enrolled["key_id"].as_str().unwrap().to_owned(),
        token: enrolled["token"].as_str().unwrap().to_owned(),
        key,
    };
    let gateway: Value = reqwest::Client::new()
        .get(format!("{url}/v1/gateway"))
        .bearer_auth(&token)
        .json_reply()
        .await;
    let statement = dana.statement_to(gateway["gateway_id"].as_str().unwrap(), &plan);
    let plan_id = plan["plan_id"].as_str().unwrap();
    let decisions = format!("{url}/v1/plans/{plan_id}/decisions");
    let envelope = serde_json::to_value(dana.sign(&statement)).unwrap();
    let (status, decided) = post(decisions, Some(&dana.token), envelope).await;
    assert_eq!(
        (status, &decided["status"]),
        (200, &json!("approved")),
        "{decided}"
    );
    let invoke = format!("{url}/v1/capabilities/memberships.grant/invoke");
    let (status, ran) = post(invoke.clone(), Some(&token), json!({"plan_id": plan_id})).await;
    assert_eq!(status, 200, "{ran}");
    // A second plan run after the first, as the marker: once its message is in, everything
    // queued before it is too, and a preview's, an approval's or a second copy of the first
    // message would stand before it.
    let (status, marker) = post(preview, Some(&token), json!({"params": other_grant()})).await;
    assert_eq!(status, 200, "{marker}");
    let statement = dana.statement_to(gateway["gateway_id"].as_str().unwrap(), &marker);
    let marker_id = marker["plan_id"].as_str().unwrap();
    let envelope = serde_json::to_value(dana.sign(&statement)).unwrap();
    let decided = format!("{url}/v1/plans/{marker_id}/decisions");
    assert_eq!(post(decided, Some(&dana.token), envelope).await.0, 200);
    let (status, ran) = post(invoke, Some(&token), json!({"plan_id": marker_id})).await;
    assert_eq!(status, 200, "{ran}");
    let messages = sink.received(2).await;
    server.kill().unwrap();
    server.wait().unwrap();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[0].to.len(), 1);
    assert!(messages[0].data.contains("prj_184"), "{}", messages[0].data);
    assert!(messages[1].data.contains("prj_421"), "{}", messages[1].data);
}
