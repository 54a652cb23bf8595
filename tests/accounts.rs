//! Transport, enrollment, rotation and history across console and gateway, with a relay in the
//! middle where it matters. The keys go to the Secret Service: run under `tests/with-keyring.sh`.

use countersign_api::app;
use countersign_console::session::{Session, SessionConfig};
use countersign_console::signing::journal::Journal;
use countersign_console::signing::signer::Signer;
use countersign_console::{transport, Console, GatewayClient};
use countersign_e2e::proxy::FaultProxy;
use countersign_e2e::relay::{Relay, Tamper};
use countersign_e2e::retention;
use countersign_e2e::TestGateway;
use countersign_embedded::{default_registry, seed_demo};
use countersign_engine::{Limits, Store};
use countersign_gateway::tls;
use countersign_proto::decision::{self, Decision, Statement};
use countersign_proto::dsse::encode_public_key;
use countersign_proto::statement::Signed as _;
use ed25519_dalek::SigningKey;
use serde_json::{json, Value};

const CAPABILITY: &str = "projects.settings.update";

fn require_secret_service() {
    assert!(
        std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some(),
        "no D-Bus session: run this test through tests/with-keyring.sh (make test does)"
    );
}

/// The error an enrollment that must fail ends with.
async fn refused_enrollment(url: &str, code: &str) -> countersign_console::ConsoleError {
    match Console::enroll(url, code, "Dana").await {
        Ok(_) => panic!("enrolled through {url}"),
        Err(e) => e,
    }
}

async fn unused_codes(gateway: &TestGateway) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM enrollment_codes WHERE used_at IS NULL")
        .fetch_one(gateway.state.store.pool())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enrolled_console_syncs_over_https() -> anyhow::Result<()> {
    require_secret_service();
    let dir = tempfile::tempdir()?;
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])?;
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert, certified.cert.pem())?;
    std::fs::write(&key, certified.key_pair.serialize_pem())?;

    let store = Store::open(&format!("sqlite://{}", dir.path().join("gw.db").display())).await?;
    seed_demo(&store).await?;
    let state =
        countersign_embedded::state(store, "TLS gateway", Limits::default(), default_registry())
            .await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let listener = tls::TlsListener::new(listener, tls::server_config(&cert, &key)?)?;
    let router = app(state.clone());
    tokio::spawn(tls::serve(listener, router, std::future::pending()));
    let url = format!("https://localhost:{port}");

    // Without the certificate trusted, the console does not talk to it.
    let code = countersign_engine::accounts::invite_approver(&state.store, "Dana", None).await?;
    let untrusted = refused_enrollment(&url, &code).await;
    assert_eq!(untrusted.code(), "unreachable", "{untrusted}");

    transport::trust_ca_file(&cert)?;
    let console = Console::enroll(&url, &code, "Dana").await?;
    assert_eq!(console.signer().gateway_id(), state.gateway_id);

    let (_, agent) =
        countersign_engine::accounts::add_agent(&state.store, "ops", Some("usr_lead")).await?;
    let root = reqwest::Certificate::from_pem(certified.cert.pem().as_bytes())?;
    let plan: Value = reqwest::Client::builder()
        .add_root_certificate(root)
        .build()?
        .post(format!("{url}/v1/capabilities/{CAPABILITY}/dry_run"))
        .bearer_auth(&agent)
        .json(&json!({"params": {"project": "prj_184", "retention_days": 14}}))
        .send()
        .await?
        .json()
        .await?;
    let plan_id = plan["plan_id"].as_str().unwrap();
    console.sync().await?;
    assert!(
        console.queue().items.iter().any(|i| i.plan_id == plan_id),
        "the plan came over https"
    );
    let view = console.plan_view(plan_id).await?;
    console.approve(plan_id, &view.digest, None, &Yes).await?;
    Signer::forget(&state.gateway_id)?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_presenting_another_gateway_is_detected_and_nothing_is_stored() -> anyhow::Result<()>
{
    require_secret_service();
    let invited = TestGateway::start().await?;
    let impostor = TestGateway::start().await?;
    let code = invited.invite("Dana").await?;

    let error = refused_enrollment(&impostor.url, &code).await;
    assert_eq!(error.code(), "gateway_identity_mismatch", "{error}");
    assert!(Signer::load(&impostor.state.gateway_id)?.is_none());
    assert!(Signer::load(&invited.state.gateway_id)?.is_none());
    let approvers: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM approvers")
        .fetch_one(impostor.state.store.pool())
        .await?;
    assert_eq!(approvers, 0, "nothing reached the impostor to spend");
    assert_eq!(unused_codes(&invited).await, 1);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_that_swaps_the_public_key_is_detected_and_nothing_is_stored() -> anyhow::Result<()>
{
    require_secret_service();
    let gateway = TestGateway::start().await?;
    let code = gateway.invite("Dana").await?;
    let swap = Tamper {
        request: Some(("/v1/approvers/enroll/bound", |body| {
            let relays_own = SigningKey::generate(&mut rand::rngs::OsRng);
            body["public_key"] = json!(encode_public_key(&relays_own.verifying_key()));
        })),
        ..Tamper::default()
    };
    let relay = Relay::start(&gateway.url, swap).await?;
    let error = refused_enrollment(&relay.url, &code).await;
    assert_eq!(error.code(), "unauthenticated", "{error}");
    assert!(Signer::load(&gateway.state.gateway_id)?.is_none());
    assert_eq!(unused_codes(&gateway).await, 1, "the code is not spent");

    // The same code still enrolls the console's own key, directly.
    let console = Console::enroll(&gateway.url, &code, "Dana").await?;
    let stored: String = sqlx::query_scalar("SELECT public_key FROM approver_keys")
        .fetch_one(gateway.state.store.pool())
        .await?;
    assert_eq!(stored, console.signer().public_key());
    Signer::forget(&gateway.state.gateway_id)?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_that_rewrites_the_enrollment_answer_is_detected_and_nothing_is_stored(
) -> anyhow::Result<()> {
    require_secret_service();
    let gateway = TestGateway::start().await?;
    let code = gateway.invite("Dana").await?;
    let rename = Tamper {
        answer: Some(("/v1/approvers/enroll/bound", |body| {
            body["approver_id"] = json!("apr_relay");
        })),
        ..Tamper::default()
    };
    let relay = Relay::start(&gateway.url, rename).await?;
    let error = refused_enrollment(&relay.url, &code).await;
    assert_eq!(error.code(), "gateway_identity_mismatch", "{error}");
    assert!(Signer::load(&gateway.state.gateway_id)?.is_none());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enrolling_again_never_overwrites_the_credentials_held() -> anyhow::Result<()> {
    require_secret_service();
    let gateway = TestGateway::start().await?;
    let first = Console::enroll(&gateway.url, &gateway.invite("Dana").await?, "Dana").await?;
    let held = first.signer().key_id().to_owned();
    let second = gateway.invite("Dana").await?;

    let error = refused_enrollment(&gateway.url, &second).await;
    assert_eq!(error.code(), "already_enrolled", "{error}");
    let kept = Signer::load(&gateway.state.gateway_id)?.expect("still enrolled");
    assert_eq!(kept.key_id(), held);
    assert_eq!(kept.public_key(), first.signer().public_key());
    assert_eq!(
        unused_codes(&gateway).await,
        1,
        "the second code is not spent"
    );
    Signer::forget(&gateway.state.gateway_id)?;
    Ok(())
}

/// An error envelope as the gateway writes it.
fn envelope_of(code: &str) -> String {
    json!({"success": false, "error": {"code": code, "message": "no", "details": {}},
           "provider": "system", "metadata": {"trace_id": "trc_relay"}})
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotation_keeps_its_pending_key_unless_definitively_refused() -> anyhow::Result<()> {
    require_secret_service();
    let gateway = TestGateway::start().await?;
    let relay = Relay::start(&gateway.url, Tamper::default()).await?;
    // The console reaches the relay through a proxy that can play a gateway gone.
    let line = FaultProxy::start(relay.url.trim_start_matches("http://")).await?;
    let enrolled = Console::enroll(&line.url, &gateway.invite("Dana").await?, "Dana").await?;
    let gateway_id = enrolled.signer().gateway_id().to_owned();
    let old_key = enrolled.signer().key_id().to_owned();
    drop(enrolled);
    let mut console = Console::with_signer(&line.url, Signer::load(&gateway_id)?.unwrap())?;

    let keys = "/v1/approvers/keys";
    let forgeries = [
        (500, envelope_of("internal")),
        (502, "<html>Bad gateway</html>".to_owned()),
        (409, envelope_of("key_conflict")),
        (500, envelope_of("bad_signature")),
        (200, "{}".to_owned()),
        (200, r#"{"key_id": ""}"#.to_owned()),
        (200, "not json".to_owned()),
    ];
    for (status, body) in &forgeries {
        relay.forge(keys, *status, body);
        assert!(console.rotate_key().await.is_err(), "{status} {body}");
        assert!(console.signer().rotation_pending(), "{status} {body}");
        let stored = Signer::load(&gateway_id)?.unwrap();
        assert!(stored.rotation_pending(), "kept in the keyring: {status}");
        assert_eq!(stored.key_id(), old_key);
    }
    line.down(true);
    assert_eq!(
        console.rotate_key().await.unwrap_err().code(),
        "unreachable"
    );
    assert!(Signer::load(&gateway_id)?.unwrap().rotation_pending());

    // Resent as it was, the rotation goes through.
    line.down(false);
    relay.pass();
    console.rotate_key().await?;
    assert!(!console.signer().rotation_pending());
    let active: String =
        sqlx::query_scalar("SELECT public_key FROM approver_keys WHERE active = 1")
            .fetch_one(gateway.state.store.pool())
            .await?;
    assert_eq!(active, console.signer().public_key());

    // A refusal on the proof's merits, in the protocol's form, ends it.
    relay.forge(keys, 401, &envelope_of("bad_signature"));
    let refused = console.rotate_key().await.unwrap_err();
    assert_eq!(refused.code(), "bad_signature");
    assert!(!console.signer().rotation_pending());
    assert!(!Signer::load(&gateway_id)?.unwrap().rotation_pending());
    Signer::forget(&gateway_id)?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotation_whose_answer_was_lost_is_resent_and_taken_once() -> anyhow::Result<()> {
    require_secret_service();
    let gateway = TestGateway::start().await?;
    let relay = Relay::start(&gateway.url, Tamper::default()).await?;
    let enrolled = Console::enroll(&relay.url, &gateway.invite("Dana").await?, "Dana").await?;
    let gateway_id = enrolled.signer().gateway_id().to_owned();
    drop(enrolled);
    let mut console = Console::with_signer(&relay.url, Signer::load(&gateway_id)?.unwrap())?;
    let keys = "/v1/approvers/keys";

    // The gateway takes the new key; the console never hears so.
    relay.lose_answers(keys);
    assert!(console.rotate_key().await.is_err());
    assert!(console.signer().rotation_pending());
    let pool = gateway.state.store.pool();
    let active: String =
        sqlx::query_scalar("SELECT public_key FROM approver_keys WHERE active = 1")
            .fetch_one(pool)
            .await?;
    assert_ne!(
        active,
        console.signer().public_key(),
        "still signing with the old key"
    );

    // Restarted from the keyring, the console sends the same proof again and is answered.
    relay.pass();
    let mut console = Console::with_signer(&relay.url, Signer::load(&gateway_id)?.unwrap())?;
    console.rotate_key().await?;
    assert!(!console.signer().rotation_pending());
    assert_eq!(console.signer().public_key(), active);
    let keys_held: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM approver_keys")
        .fetch_one(pool)
        .await?;
    assert_eq!(keys_held, 2, "the enrolled key and one rotation, not two");
    Signer::forget(&gateway_id)?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_verifies_against_the_keyring_not_the_journal_row() -> anyhow::Result<()> {
    require_secret_service();
    let gateway = TestGateway::start().await?;
    let agent = gateway.agent("ops").await?;
    let dir = tempfile::tempdir()?;
    let journal = Journal::open(&dir.path().join("journal.db")).await?;
    let console = Console::enroll(&gateway.url, &gateway.invite("Dana").await?, "Dana")
        .await?
        .with_journal(journal.clone());
    let gateway_id = console.signer().gateway_id().to_owned();
    let plan = agent.dry_run(CAPABILITY, retention("prj_184", 14)).await?;
    let plan_id = plan["plan_id"].as_str().unwrap();
    let view = console.plan_view(plan_id).await?;
    console.approve(plan_id, &view.digest, None, &Yes).await?;

    // A row written by someone else: signed by another key under this approver's key id, the
    // row's public key swapped to match.
    let forger = SigningKey::generate(&mut rand::rngs::OsRng);
    let signer = console.signer();
    let statement = Statement::new(
        decision::Signer {
            audience: &gateway_id,
            ..signer.signs_as()
        },
        ("plan_forged", &view.digest),
        Decision::Approve,
        None,
        chrono::Utc::now() + chrono::Duration::minutes(5),
    );
    let forged = statement.sign(&forger)?;
    let forger_public = encode_public_key(&forger.verifying_key());
    journal
        .record(
            &gateway_id,
            "plan_forged",
            Decision::Approve,
            &forged,
            &forger_public,
        )
        .await?;

    let entries = journal.entries(Some(&gateway_id)).await?;
    assert_eq!(entries.len(), 2);
    let (genuine, forged) = (&entries[0], &entries[1]);
    assert_eq!(genuine.verify()?.plan_id, plan_id);
    // Checked against the row's own key, the forgery would pass.
    let row_key = countersign_proto::dsse::decode_public_key(&forged.public_key)?;
    let envelope = serde_json::from_value(forged.envelope.clone())?;
    assert!(Statement::open(&envelope, &row_key).is_ok());
    assert!(forged.verify().is_err(), "the forged row verified");
    Signer::forget(&gateway_id)?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_desktop_demo_enrolls_through_the_bound_flow() -> anyhow::Result<()> {
    require_secret_service();
    let dir = tempfile::tempdir()?;
    let database = format!("sqlite://{}", dir.path().join("demo.db").display());
    let demo = countersign_embedded::Embedded::start(&database, None).await?;
    let session = Session::start(SessionConfig {
        gateway_url: demo.url.clone(),
        enrollment_code: Some(demo.invite("Dana").await?),
        display_name: "Dana".to_owned(),
        data_dir: dir.path().to_owned(),
        demo: Some(demo.gateway_id().to_owned()),
        clock: Default::default(),
    })
    .await?;
    let status = session.status();
    assert!(status.demo);
    assert_eq!(status.approver, "Dana");
    session.console().sync().await?;
    let gateway_id = session.console().signer().gateway_id().to_owned();
    assert!(Signer::load(&gateway_id)?.is_some());
    Signer::forget(&gateway_id)?;
    Ok(())
}

#[tokio::test]
async fn plain_http_to_another_machine_is_refused() {
    for url in ["http://192.0.2.10:7780", "http://gateway.example.com"] {
        let error = GatewayClient::new(url, None).err().expect("refused");
        assert_eq!(error.code(), "insecure_transport", "{url}");
        let error = refused_enrollment(url, "cse_00.00").await;
        assert_eq!(error.code(), "insecure_transport", "{url}");
    }
}

/// The approver's yes to every confirmation: these tests are about what happens after it.
struct Yes;

impl countersign_console::Confirm for Yes {
    fn confirm(&self, _: &str, _: &str, _: &[String]) -> bool {
        true
    }
}
