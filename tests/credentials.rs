//! What the approver's credential and signature stand on, tried as a party in the middle would:
//! a token goes only to the origin it was enrolled with (a relay proxying the real gateway, or a
//! second gateway claiming its id, never sees an `Authorization` header), it moves only after a
//! fresh identity proof and the approver's yes, and a relay that rewrites what a plan is shown as
//! cannot change whom the confirmation names. Run under `tests/with-keyring.sh`.

use std::sync::Mutex;

use countersign_console::session::{self, Session, SessionConfig};
use countersign_console::signing::signer::Signer;
use countersign_console::{Confirm, Console, ConsoleError};
use countersign_e2e::relay::{Relay, Tamper};
use countersign_e2e::TestGateway;
use serde_json::{json, Value};

fn require_secret_service() {
    assert!(
        std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some(),
        "no D-Bus session: run this test through tests/with-keyring.sh (make test does)"
    );
}

/// Answers every confirmation with `yes` and keeps what it was asked.
struct Recorder {
    yes: bool,
    asked: Mutex<Vec<(String, String, Vec<String>)>>,
}

impl Recorder {
    fn answering(yes: bool) -> Recorder {
        Recorder {
            yes,
            asked: Mutex::new(Vec::new()),
        }
    }

    fn asked(&self) -> Vec<(String, String, Vec<String>)> {
        self.asked.lock().unwrap().clone()
    }
}

impl Confirm for Recorder {
    fn confirm(&self, title: &str, consequence: &str, lines: &[String]) -> bool {
        self.asked
            .lock()
            .unwrap()
            .push((title.to_owned(), consequence.to_owned(), lines.to_vec()));
        self.yes
    }
}

/// A console session's start on `url`, enrolling with `code` when it holds no credential there.
async fn start(
    dir: &std::path::Path,
    url: &str,
    code: Option<String>,
) -> Result<Session, ConsoleError> {
    Session::start(SessionConfig {
        gateway_url: url.to_owned(),
        enrollment_code: code,
        display_name: "Dana".to_owned(),
        data_dir: dir.to_owned(),
        demo: None,
        clock: Default::default(),
    })
    .await
}

/// An invite as `approvers invite` prints it, with a made-up code and the fingerprint of `real`'s
/// identity key, which the identity endpoint gives anyone.
async fn forged_invite(real: &TestGateway) -> anyhow::Result<String> {
    let genuine = real.invite("Someone").await?;
    let (_, fingerprint) = genuine.rsplit_once('.').expect("cse_<code>.<fingerprint>");
    Ok(format!("cse_{}.{fingerprint}", "0".repeat(43)))
}

/// A gateway, and a data directory whose console enrolled with it directly; its id.
async fn enrolled() -> anyhow::Result<(TestGateway, tempfile::TempDir, String)> {
    require_secret_service();
    let gateway = TestGateway::start().await?;
    let dir = tempfile::tempdir()?;
    let session = start(
        dir.path(),
        &gateway.url,
        Some(gateway.invite("Dana").await?),
    )
    .await?;
    let gateway_id = session.console().signer().gateway_id().to_owned();
    Ok((gateway, dir, gateway_id))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_url_proving_an_enrolled_gateways_identity_gets_no_token() -> anyhow::Result<()> {
    let (gateway, dir, gateway_id) = enrolled().await?;

    // A relay proxying the real gateway, with an invite that names the real identity key: the
    // identity proof passes, and the console used to send the stored token on.
    let relay = Relay::start(&gateway.url, Tamper::default()).await?;
    let invite = forged_invite(&gateway).await?;
    let refused = start(dir.path(), &relay.url, Some(invite.clone()))
        .await
        .err();
    let refused = refused.expect("a session through the relay");
    assert_eq!(refused.code(), "credential_elsewhere", "{refused}");
    assert!(refused.to_string().contains(&relay.url), "{refused}");
    // The terminal's path, the same way.
    let refused = session::connect(dir.path(), &relay.url, Some(&invite), None)
        .await
        .err();
    assert_eq!(refused.expect("refused").code(), "credential_elsewhere");
    assert_eq!(
        relay.authorized(),
        Vec::<String>::new(),
        "no token reached the relay"
    );

    // A second gateway of its own key that calls itself by the first one's id, with an invite
    // of its own (so its proof is good): the same refusal, and no token.
    let impostor = TestGateway::claiming(&gateway_id).await?;
    let watcher = Relay::start(&impostor.url, Tamper::default()).await?;
    let refused = start(
        dir.path(),
        &watcher.url,
        Some(impostor.invite("Dana").await?),
    )
    .await
    .err()
    .expect("a session on the impostor");
    assert_eq!(refused.code(), "credential_elsewhere", "{refused}");
    assert_eq!(watcher.authorized(), Vec::<String>::new());

    // Nothing moved: the credential and the remembered gateway are where they were.
    let kept = Signer::load(&gateway_id)?.expect("still enrolled");
    assert_eq!(kept.origin(), Some(gateway.url.as_str()));
    assert_eq!(session::gateway_at(dir.path(), &relay.url), None);
    assert_eq!(session::gateway_at(dir.path(), &watcher.url), None);
    assert_eq!(
        session::gateway_at(dir.path(), &gateway.url).as_deref(),
        Some(gateway_id.as_str())
    );
    let refused = Console::with_signer(&relay.url, kept)
        .err()
        .expect("refused");
    assert_eq!(refused.code(), "credential_elsewhere");
    start(dir.path(), &gateway.url, None).await?;
    Signer::forget(&gateway_id)?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credential_moves_only_after_a_fresh_proof_and_the_approvers_yes() -> anyhow::Result<()> {
    let (gateway, dir, gateway_id) = enrolled().await?;
    let moved = Relay::start(&gateway.url, Tamper::default()).await?;

    // Another gateway cannot prove the identity key the credential was enrolled under, even
    // under the same id; nobody is asked.
    let impostor = TestGateway::claiming(&gateway_id).await?;
    let never = Recorder::answering(true);
    let error = session::move_credential(dir.path(), &gateway_id, &impostor.url, &never)
        .await
        .unwrap_err();
    assert_eq!(error.code(), "gateway_identity_mismatch", "{error}");
    assert!(never.asked().is_empty());

    // The proof holds, the approver says no: nothing changes.
    let no = Recorder::answering(false);
    let error = session::move_credential(dir.path(), &gateway_id, &moved.url, &no)
        .await
        .unwrap_err();
    assert_eq!(error.code(), "cancelled");
    let asked = no.asked();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].0, "Move your credential to another URL?");
    assert!(
        asked[0].1.contains(&gateway.url) && asked[0].1.contains(&moved.url),
        "{}",
        asked[0].1
    );
    let kept = Signer::load(&gateway_id)?.unwrap();
    assert_eq!(kept.origin(), Some(gateway.url.as_str()));
    assert_eq!(moved.authorized(), Vec::<String>::new());

    // A yes: the token goes to the new URL, and no longer to the old one.
    session::move_credential(
        dir.path(),
        &gateway_id,
        &moved.url,
        &Recorder::answering(true),
    )
    .await?;
    let there = start(dir.path(), &moved.url, None).await?;
    there.console().sync().await?;
    assert!(
        !moved.authorized().is_empty(),
        "the token now travels there"
    );
    drop(there);
    let error = start(dir.path(), &gateway.url, None)
        .await
        .err()
        .expect("refused");
    assert_eq!(
        error.code(),
        "not_enrolled",
        "the old URL is no longer remembered"
    );
    let signer = Signer::load(&gateway_id)?.unwrap();
    let error = Console::with_signer(&gateway.url, signer)
        .err()
        .expect("refused");
    assert_eq!(error.code(), "credential_elsewhere");
    Signer::forget(&gateway_id)?;
    Ok(())
}

/// The real grantee, whom a relay tries to hide.
const MALLORY: &str = "usr_mallory";

/// What a relay shows instead: a harmless-looking title, sample and labels.
fn disguised(body: &mut Value) {
    if body.get("plan").is_some() {
        body["title"] = json!("Give Alice read access");
        if let Some(items) = body
            .get_mut("validation_subjects")
            .and_then(Value::as_array_mut)
        {
            for v in items {
                for item in v
                    .get_mut("items")
                    .and_then(Value::as_array_mut)
                    .into_iter()
                    .flatten()
                {
                    item["label"] = json!("Alice (usr_alice)");
                }
            }
        }
    }
    if let Some(items) = body.get_mut("items").and_then(Value::as_array_mut) {
        for item in items {
            item["label"] = json!("Alice (usr_alice)");
        }
    }
}

fn disguised_with_sample(body: &mut Value) {
    disguised(body);
    let effects = body.get_mut("plan").and_then(|p| p.get_mut("effects"));
    for effect in effects.and_then(Value::as_array_mut).into_iter().flatten() {
        if let Some(subjects) = effect.get_mut("subjects").filter(|s| s.is_object()) {
            subjects["sample"] = json!(["usr_alice"]);
        }
    }
}

async fn grant_to_mallory(gateway: &TestGateway) -> anyhow::Result<String> {
    let mut w = gateway.state.store.write().await?;
    sqlx::query(
        "INSERT INTO users (id, name, email, employment)
         VALUES ($1, 'Mallory', 'mallory@example.com', 'contractor')",
    )
    .bind(MALLORY)
    .execute(&mut *w.tx)
    .await?;
    w.commit().await?;
    let agent = gateway.agent("ops").await?;
    let plan = agent
        .dry_run(
            "memberships.grant",
            json!({"project": "prj_184", "subject": MALLORY, "role": "admin"}),
        )
        .await?;
    Ok(plan["plan_id"].as_str().expect("a plan id").to_owned())
}

async fn status(gateway: &TestGateway, plan_id: &str) -> anyhow::Result<String> {
    Ok(sqlx::query_scalar("SELECT status FROM plans WHERE id = $1")
        .bind(plan_id)
        .fetch_one(gateway.state.store.pool())
        .await?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_renaming_a_grantee_is_refused_or_the_dialog_names_the_signed_one(
) -> anyhow::Result<()> {
    require_secret_service();
    for (rewrite, refused) in [
        (disguised_with_sample as fn(&mut Value), true),
        (disguised, false),
    ] {
        let gateway = TestGateway::start().await?;
        let relay = Relay::start(
            &gateway.url,
            Tamper {
                answer: Some(("/v1/plans/", rewrite)),
                ..Tamper::default()
            },
        )
        .await?;
        let console = Console::enroll(&relay.url, &gateway.invite("Dana").await?, "Dana").await?;
        let plan_id = grant_to_mallory(&gateway).await?;
        let view = console.plan_view(&plan_id).await?;
        assert_eq!(
            view.label, "Give Alice read access",
            "shown as the gateway's label"
        );
        let recorder = Recorder::answering(true);
        let outcome = console
            .approve(&plan_id, &view.digest, None, &recorder)
            .await;
        if refused {
            let error = outcome.expect_err("a sample that contradicts the signed set");
            assert_eq!(error.code(), "not_approvable", "{error}");
            assert!(recorder.asked().is_empty(), "refused before any dialog");
            assert_eq!(status(&gateway, &plan_id).await?, "pending_approval");
        } else {
            outcome?;
            let asked = recorder.asked();
            assert_eq!(asked.len(), 1, "an access change is confirmed");
            let said = format!("{} {} {:?}", asked[0].0, asked[0].1, asked[0].2);
            assert!(
                said.contains(MALLORY),
                "the signed grantee is named: {said}"
            );
            assert!(!said.contains("Alice"), "nothing the relay wrote: {said}");
        }
        Signer::forget(&gateway.state.gateway_id)?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_says_why_its_approver_may_not_approve() -> anyhow::Result<()> {
    require_secret_service();
    let gateway = TestGateway::start().await?;
    // Sam approves, and is the person usr_92: a grant to usr_92 is not Sam's to approve.
    let code =
        countersign_engine::accounts::invite_approver(&gateway.state.store, "Sam", Some("usr_92"))
            .await?;
    let console = Console::enroll(&gateway.url, &code, "Sam").await?;
    let agent = gateway.agent("ops").await?;
    let plan = agent
        .dry_run(
            "memberships.grant",
            json!({"project": "prj_421", "subject": "usr_92", "role": "editor"}),
        )
        .await?;
    let plan_id = plan["plan_id"].as_str().unwrap();
    let view = console.plan_view(plan_id).await?;
    assert!(!view.approvable);
    let why = view.not_approvable_reason.unwrap_or_default();
    assert!(why.contains("grantee"), "{why}");
    let recorder = Recorder::answering(true);
    let refused = console
        .approve(plan_id, &view.digest, None, &recorder)
        .await
        .expect_err("refused");
    assert_eq!(refused.code(), "not_approvable", "{refused}");
    assert!(refused.to_string().contains("grantee"), "{refused}");
    assert!(recorder.asked().is_empty());
    assert_eq!(status(&gateway, plan_id).await?, "pending_approval");
    Signer::forget(&gateway.state.gateway_id)?;
    Ok(())
}
