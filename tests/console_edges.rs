//! The console at its edges, on the real desktop binary against a real gateway: a rejection and
//! the history it leaves, a string an agent wrote, a provider's outputs (audio inline, remote
//! images as addresses), a gateway that goes away and comes back, and an invitation held for a
//! changed address released from the execution view.
//! Run under `tests/with-keyring.sh` and `tests/with-display.sh` (as `make test` does).

use countersign_e2e::proxy::FaultProxy;
use countersign_e2e::TestGateway;
use serde_json::json;

use crate::app::{answer_if_asked, eventually, serial, App, Launch};
use crate::demo_plans::{preview, received, retention_plan, signed_over_its_digest, status};

const ANSWERED: &str = "[data-testid='decision-state'][data-state='answered']";
const QUEUED: &str = "[data-testid='decision-state'][data-state='queued']";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejection_is_signed_with_its_reason_and_kept_in_history() -> anyhow::Result<()> {
    let _one = serial().await;
    let gateway = TestGateway::start().await?;
    let agent = gateway.agent("ops").await?;
    let plan = retention_plan(&agent, "prj_184", 14).await?;
    let code = gateway.invite("Dana").await?;
    let app = App::start(Launch::new(&gateway.url, &code)).await?;
    app.open(&plan).await?;

    app.click("[data-testid='reject']").await?;
    let confirm = app.find("[data-testid='reject-confirm']").await?;
    assert!(confirm.attr("disabled").await?.is_some(), "no reason yet");
    let reason = "Legal asked to keep prj_184's artifacts a month.";
    app.find("[data-testid='reject-reason']")
        .await?
        .send_keys(reason)
        .await?;
    app.shoot("reject").await?;
    // Enabled once the window has taken the reason in; a click on it fails if anything covers it.
    app.click("[data-testid='reject-confirm']:not([disabled])")
        .await?;
    app.find(ANSWERED).await?;

    assert_eq!(status(&agent, &plan).await?, "rejected");
    let decisions = gateway.decisions(&plan).await?;
    assert_eq!(decisions.len(), 1, "{decisions:?}");
    let (decision, stored_reason, payload) = &decisions[0];
    assert_eq!(decision, "reject");
    assert_eq!(stored_reason.as_deref(), Some(reason));
    assert_eq!(payload["reason"], reason);
    assert_eq!(signed_over_its_digest(&gateway, &agent, &plan).await?, 1);

    app.click("[data-testid='nav-history']").await?;
    let row = app.find("[data-testid='history-row']").await?;
    let shown = row.text().await?;
    assert!(shown.contains(&plan) && shown.contains(reason), "{shown}");
    app.find("[data-testid='verified'][data-verified='true']")
        .await?;
    app.shoot("history").await?;
    // The rejection just signed is in the gateway's numbers, drawn in the real window.
    app.click("[data-testid='nav-insights']").await?;
    let capabilities = app.text("[data-testid='insights-capabilities']").await?;
    assert!(
        capabilities.contains("projects.settings.update"),
        "{capabilities}"
    );
    let approvers = app.text("[data-testid='insights-approvers']").await?;
    assert!(approvers.contains("Dana"), "{approvers}");
    app.find("[data-testid='insights-chart'] canvas").await?;
    app.shoot("insights").await?;
    app.click("[data-testid='nav-settings']").await?;
    app.find("[data-testid='settings']").await?;
    app.shoot("settings").await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_string_an_agent_wrote_shows_as_text() -> anyhow::Result<()> {
    let _one = serial().await;
    let gateway = TestGateway::start().await?;
    let agent = gateway.agent("ops").await?;
    let markup = "<img src=x onerror=alert(1)>";
    // An upload needs no approval, so it never queues: the approver opens it from its link.
    let upload = preview(
        &agent,
        "documents.document.upload",
        json!({"project": "prj_311", "filename": markup, "mime_type": "text/plain",
               "size_bytes": 2048}),
    )
    .await?;
    let code = gateway.invite("Dana").await?;
    let mut launch = Launch::new(&gateway.url, &code);
    launch.args = vec![format!("countersign://plan/{upload}")];
    let app = App::start(launch).await?;
    let plan = app
        .find(&format!("[data-testid='plan'][data-plan-id='{upload}']"))
        .await?;

    let shown = plan.text().await?;
    assert!(shown.contains(markup), "the filename as written: {shown}");
    let planted = "return document.querySelectorAll('img[src=\"x\"], [onerror]').length;";
    assert_eq!(app.client.execute(planted, vec![]).await?, json!(0));
    assert!(
        app.client.get_alert_text().await.is_err(),
        "no script of the agent's ran"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn synthesized_speech_plays_inline_and_remote_images_stay_addresses() -> anyhow::Result<()> {
    let _one = serial().await;
    let gateway = TestGateway::start().await?;
    let agent = gateway.agent("ops").await?;
    // Cheap enough to need no approval: the agent executes them, the approver opens the links.
    let speech = preview(
        &agent,
        "speech.synthesize",
        json!({"model": "tts-1", "input": "Your plan was approved.", "voice": "nova"}),
    )
    .await?;
    let image = preview(
        &agent,
        "image.generate",
        json!({"model": "black-forest-labs/flux-schnell", "prompt": "Two owls", "count": 2}),
    )
    .await?;
    for (capability, plan) in [("speech.synthesize", &speech), ("image.generate", &image)] {
        let executed = agent.invoke(capability, plan).await?;
        assert_eq!(executed.status, 200, "{}", executed.body);
    }
    let code = gateway.invite("Dana").await?;
    let mut launch = Launch::new(&gateway.url, &code);
    launch.args = vec![format!("countersign://plan/{speech}")];
    let app = App::start(launch).await?;
    app.find("[data-testid='media-audio']").await?;
    assert_eq!(app.text("[data-testid='approvals']").await?, "none needed");
    let closed = app.text("[data-testid='closed']").await?;
    assert!(closed.starts_with("Executed"), "{closed}");
    // The window's content security policy must let a data: URL play: reload the element and
    // listen for a violation while it loads.
    let script = "const [done] = arguments;
        const audio = document.querySelector(\"[data-testid='media-audio']\");
        let violated = null;
        document.addEventListener('securitypolicyviolation', e => { violated = e.violatedDirective; });
        const finish = (loaded) => setTimeout(() => done({loaded, violated}), 300);
        audio.addEventListener('loadedmetadata', () => finish(true));
        audio.addEventListener('error', () => finish(false));
        audio.load();
        setTimeout(() => done({loaded: null, violated}), 5000);";
    let loaded = app.client.execute_async(script, vec![]).await?;
    assert_eq!(loaded["violated"], json!(null), "{loaded}");
    // Not only allowed: the audio itself loads (its metadata is read from the data: URL).
    assert_eq!(loaded["loaded"], json!(true), "{loaded}");
    app.shoot("provider-speech").await?;

    let lee = gateway.invite("Lee").await?;
    let mut launch = Launch::new(&gateway.url, &lee);
    launch.args = vec![format!("countersign://plan/{image}")];
    launch.own_keyring = true;
    let second = App::start(launch).await?;
    second.find("[data-testid='media-link']").await?;
    let links = second.text("[data-testid='execution-media']").await?;
    assert!(
        links.contains(&format!("{}/files/", gateway.providers().url)),
        "{links}"
    );
    let remote =
        "return document.querySelectorAll('img[src^=\"http\"], a[href^=\"http\"]').length;";
    assert_eq!(second.client.execute(remote, vec![]).await?, json!(0));
    second.shoot("provider-images").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_made_offline_goes_out_when_the_gateway_returns() -> anyhow::Result<()> {
    let _one = serial().await;
    let gateway = TestGateway::start().await?;
    let proxy = FaultProxy::start(gateway.url.trim_start_matches("http://")).await?;
    let agent = gateway.agent("ops").await?;
    let plan = retention_plan(&agent, "prj_184", 14).await?;
    let code = gateway.invite("Dana").await?;
    let app = App::start(Launch::new(&proxy.url, &code)).await?;
    app.open(&plan).await?;

    proxy.down(true);
    app.find("[data-testid='link-state'][data-link='offline']")
        .await?;
    app.click("[data-testid='approve']").await?;
    answer_if_asked(&app, QUEUED).await?;
    app.find("[data-testid='last-fetched']").await?;
    app.shoot("offline").await?;
    let outbox = app.text("[data-testid='outbox']").await?;
    assert!(outbox.contains("1 queued"), "{outbox}");
    assert!(
        gateway.decisions(&plan).await?.is_empty(),
        "nothing got out"
    );

    proxy.down(false);
    eventually("the queued approval to arrive", || async {
        Ok(received(&agent, &plan).await?.len() == 1)
    })
    .await?;
    eventually("the outbox to empty", || async {
        Ok(app.count("[data-testid='outbox']").await? == 0)
    })
    .await?;
    app.find("[data-testid='link-state'][data-link='online']")
        .await?;
    assert_eq!(gateway.decisions(&plan).await?.len(), 1, "delivered once");
    assert_eq!(status(&agent, &plan).await?, "approved");
    Ok(())
}

/// The relay's part, recorded: where each message went.
#[derive(Default)]
struct Recorded(std::sync::Mutex<Vec<String>>);

impl countersign_engine::mail::Sender for Recorded {
    async fn send(
        &self,
        message: &countersign_engine::mail::Queued,
    ) -> countersign_engine::mail::Outcome {
        self.0.lock().unwrap().push(message.recipient.clone());
        countersign_engine::mail::Outcome::Sent
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_invitation_is_released_from_the_execution_view_by_a_signed_remedy(
) -> anyhow::Result<()> {
    let _one = serial().await;
    let gateway = TestGateway::start().await?;
    let agent = gateway.agent("ops").await?;
    let grant = preview(
        &agent,
        "memberships.grant",
        json!({"project": "prj_184", "subject": "usr_92", "role": "admin"}),
    )
    .await?;
    let code = gateway.invite("Dana").await?;
    let app = App::start(Launch::new(&gateway.url, &code)).await?;
    app.open(&grant).await?;
    app.click("[data-testid='approve']").await?;
    answer_if_asked(&app, "[data-testid='decision-state']").await?;
    eventually("the grant approved", || async {
        Ok(status(&agent, &grant).await? == "approved")
    })
    .await?;
    assert_eq!(agent.invoke("memberships.grant", &grant).await?.status, 200);
    // The grantee's address changes after the plan ran: the invitation is held for a person.
    let state = &gateway.state;
    let mut w = state.store.write().await?;
    sqlx::query("UPDATE users SET email = 'sam@elsewhere.example' WHERE id = 'usr_92'")
        .execute(&mut *w.tx)
        .await?;
    w.commit().await?;
    let relay = Recorded::default();
    let now = countersign_engine::ids::now();
    let pass =
        countersign_engine::mail::dispatch(&state.store, state.registry, &relay, now).await?;
    assert_eq!(pass.held, 1);

    app.click("[data-testid='nav-history']").await?;
    app.click("[data-testid='history-row'] button.link").await?;
    let release = "[data-testid='remedy-release']";
    let button = app.find(release).await?;
    assert_eq!(button.text().await?, "Send to sam@elsewhere.example");
    let held = app.text("[data-testid='execution-attention']").await?;
    assert!(
        held.contains("recipient_changed") && held.contains("You were invited to prj_184"),
        "{held}"
    );
    // In view, as the approver scrolls to it: the email, why it waits, and what may be done.
    let into_view = "document.querySelector(\"[data-testid='execution-attention']\")
        .scrollIntoView({block: 'center'});";
    app.client.execute(into_view, vec![]).await?;
    app.shoot("held-email").await?;
    button.click().await?;
    answer_if_asked(&app, "[data-testid='execution-remedies']").await?;
    let pass =
        countersign_engine::mail::dispatch(&state.store, state.registry, &relay, now).await?;
    assert_eq!(pass.sent, 1);
    assert_eq!(*relay.0.lock().unwrap(), ["sam@elsewhere.example"]);
    let taken = app.text("[data-testid='execution-remedies']").await?;
    assert!(taken.contains("release by Dana"), "{taken}");
    app.client
        .execute(
            into_view
                .replace("execution-attention", "execution-remedies")
                .as_str(),
            vec![],
        )
        .await?;
    app.shoot("held-email-released").await?;
    Ok(())
}
