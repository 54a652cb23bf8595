//! One plan from agent to signed approval to execution, through a real Secret Service keyring.
//! Run under `tests/with-keyring.sh` (as `make test` does): it starts D-Bus and gnome-keyring.

use countersign_console::signing::signer::{Signer, KEYRING_SERVICE};
use countersign_console::{Console, ConsoleError};
use countersign_e2e::retention;
use countersign_e2e::TestGateway;
use serde_json::json;

const CAPABILITY: &str = "projects.settings.update";

fn require_secret_service() {
    assert!(
        std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some(),
        "no D-Bus session: run this test through tests/with-keyring.sh (make test does)"
    );
}

/// Asks the Secret Service itself, through libsecret's own tool, whether the credential is there.
fn keyring_holds(gateway_id: &str) -> bool {
    let output = std::process::Command::new("secret-tool")
        .args(["search", "service", KEYRING_SERVICE, "username", gateway_id])
        .output()
        .expect("secret-tool (libsecret-tools) is installed by make deps");
    String::from_utf8_lossy(&output.stdout).contains(gateway_id)
        || String::from_utf8_lossy(&output.stderr).contains(gateway_id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_travels_from_agent_to_signed_approval_to_execution() -> anyhow::Result<()> {
    require_secret_service();
    let gateway = TestGateway::start().await?;
    let agent = gateway.agent("ops").await?;
    let code = gateway.invite("Dana").await?;

    let enrolled = Console::enroll(&gateway.url, &code, "Dana").await?;
    let gateway_id = enrolled.signer().gateway_id().to_owned();
    assert_eq!(gateway_id, gateway.state.gateway_id);
    drop(enrolled);
    assert!(
        keyring_holds(&gateway_id),
        "the key is not in the Secret Service"
    );
    // A fresh console finds key and token in the keyring alone.
    let console = Console::open(&gateway.url, &gateway_id)?;

    let first = agent.dry_run(CAPABILITY, retention("prj_184", 14)).await?;
    let second = agent.dry_run(CAPABILITY, retention("prj_184", 21)).await?;
    let third = agent.dry_run(CAPABILITY, retention("prj_184", 60)).await?;
    let ids: Vec<&str> = [&first, &second, &third]
        .iter()
        .map(|p| p["plan_id"].as_str().unwrap())
        .collect();

    assert!(console.sync().await?);
    let queue = console.queue();
    for id in &ids {
        assert!(
            queue.items.iter().any(|i| i.plan_id == *id),
            "{id} not queued"
        );
    }
    assert!(!console.sync().await?, "an unchanged queue must answer 304");

    let view = console.plan_view(ids[0]).await?;
    assert!(view.digest_matches && view.approvable, "{view:?}");
    assert_eq!(view.changes[0].before, "30");
    assert_eq!(view.changes[0].after, "14");

    let answer = console
        .approve(ids[0], &view.digest, Some("Fits the policy.".into()), &Yes)
        .await?;
    assert_eq!(answer.status, "approved");
    let second_view = console.plan_view(ids[1]).await?;
    match console.approve(ids[1], &view.digest, None, &Yes).await {
        Err(ConsoleError::DigestMismatch { .. }) => {}
        other => panic!("signing a digest the approver did not see: {other:?}"),
    }
    console
        .approve(ids[1], &second_view.digest, None, &Yes)
        .await?;

    let executed = agent.invoke(CAPABILITY, ids[0]).await?;
    assert_eq!(executed.status, 200, "{}", executed.body);
    assert_eq!(executed.body["success"], true);
    assert_eq!(gateway.retention_days("prj_184").await?, 14);

    let stale = agent.invoke(CAPABILITY, ids[1]).await?;
    assert_eq!(stale.status, 409);
    assert_eq!(stale.body["error"]["code"], "plan_stale", "{}", stale.body);
    assert_eq!(
        stale.body["error"]["details"]["moved"][0]["resource"],
        "projects/prj_184"
    );

    let unapproved = agent.invoke(CAPABILITY, ids[2]).await?;
    assert_eq!(unapproved.status, 409);
    assert_eq!(unapproved.body["error"]["code"], "approval_required");
    assert_eq!(
        gateway.retention_days("prj_184").await?,
        14,
        "nothing else ran"
    );

    let third_view = console.plan_view(ids[2]).await?;
    assert!(!third_view.approvable);
    assert_eq!(third_view.stale[0].current, "74");
    match console
        .approve(ids[2], &third_view.digest, None, &Yes)
        .await
    {
        Err(ConsoleError::NotApprovable(reason)) => assert!(reason.contains("stale"), "{reason}"),
        other => panic!("approving a stale plan: {other:?}"),
    }

    Signer::forget(&gateway_id)?;
    assert!(Signer::load(&gateway_id)?.is_none());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_key_signs_from_then_on_and_history_still_verifies() -> anyhow::Result<()> {
    require_secret_service();
    let gateway = TestGateway::start().await?;
    let agent = gateway.agent("ops").await?;
    let code = gateway.invite("Eli").await?;
    let dir = tempfile::tempdir()?;
    let journal =
        countersign_console::signing::journal::Journal::open(&dir.path().join("j.db")).await?;
    let enrolled = Console::enroll(&gateway.url, &code, "Eli").await?;
    let gateway_id = enrolled.signer().gateway_id().to_owned();
    let old_key = enrolled.signer().key_id().to_owned();
    drop(enrolled);
    let mut console = Console::open(&gateway.url, &gateway_id)?.with_journal(journal.clone());

    let params = |days: i64| json!({"project": "prj_200", "retention_days": days});
    let first = agent.dry_run(CAPABILITY, params(7)).await?;
    let first_id = first["plan_id"].as_str().unwrap();
    let view = console.plan_view(first_id).await?;
    console.approve(first_id, &view.digest, None, &Yes).await?;

    console.rotate_key().await?;
    let new_key = console.signer().key_id().to_owned();
    assert_ne!(new_key, old_key);
    assert_eq!(console.signer().retired()[0].key_id, old_key);
    // The keyring holds the new key, and the retired public half.
    let reloaded = Signer::load(&gateway_id)?.expect("still enrolled");
    assert_eq!(reloaded.key_id(), new_key);
    assert_eq!(reloaded.retired().len(), 1);

    let second = agent.dry_run(CAPABILITY, params(14)).await?;
    let second_id = second["plan_id"].as_str().unwrap();
    let view = console.plan_view(second_id).await?;
    console.approve(second_id, &view.digest, None, &Yes).await?;

    let entries = journal.entries(Some(&gateway_id)).await?;
    assert_eq!(entries.len(), 2);
    let keys: Vec<String> = entries
        .iter()
        .map(|e| e.verify().map(|s| s.key_id))
        .collect::<Result<_, _>>()?;
    assert_eq!(keys, [old_key.clone(), new_key]);
    let active: Vec<(String, i64)> =
        sqlx::query_as("SELECT id, active FROM approver_keys ORDER BY created_at, id")
            .fetch_all(gateway.state.store.pool())
            .await?;
    assert!(active.contains(&(old_key, 0)), "{active:?}");

    Signer::forget(&gateway_id)?;
    Ok(())
}

/// The approver's yes to every confirmation: these tests are about what happens after it.
struct Yes;

impl countersign_console::Confirm for Yes {
    fn confirm(&self, _: &str, _: &str, _: &[String]) -> bool {
        true
    }
}
