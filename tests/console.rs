//! The console on the real desktop binary (tauri-driver + WebKitWebDriver under Xvfb), each test
//! against a real gateway: two approvers in two app instances, stale and refresh, the native
//! confirmation, batch approval, a 100,000-subject list, and a model provider's call from its
//! cost range to what it was charged. Screenshots of each screen, light
//! and dark, go to target/screenshots. Run under `tests/with-keyring.sh` (as `make test` does).

use std::time::Duration;

use countersign_e2e::webdriver::queue_row;
use countersign_e2e::TestGateway;
use serde_json::{json, Value};

use crate::app::{answer_confirmation, answer_if_asked, eventually, serial, App, Launch};
use crate::demo_plans::{
    approve_in_window, contractors_of_support, preview, received, retention_plan,
    signed_over_its_digest, status, REMOVE,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bulk_removal_is_approved_in_two_app_instances_and_executed() -> anyhow::Result<()> {
    let _one = serial().await;
    let gateway = TestGateway::start().await?;
    let agent = gateway.agent("ops").await?;
    let bulk = contractors_of_support(&agent).await?;
    assert_eq!(agent.plan(&bulk).await?["approvals"]["required"], 2);
    let (dana_code, lee_code) = (gateway.invite("Dana").await?, gateway.invite("Lee").await?);
    let dana = App::start(Launch::new(&gateway.url, &dana_code)).await?;
    let mut lee = Launch::new(&gateway.url, &lee_code);
    lee.own_keyring = true;
    let lee = App::start(lee).await?;

    dana.open(&bulk).await?;
    let consequence = dana.text("[data-testid='consequence']").await?;
    assert!(consequence.contains("grp_support"), "{consequence}");
    dana.shoot("queue-and-plan").await?;
    dana.click("[data-testid='approve']").await?;
    assert_eq!(answer_confirmation(true)?, format!("Approve {bulk}?"));
    eventually("Dana's approval", || async {
        Ok(received(&agent, &bulk).await?.len() == 1)
    })
    .await?;
    assert_eq!(status(&agent, &bulk).await?, "pending_approval");

    lee.open(&bulk).await?;
    eventually("Lee's window to name Dana's approval", || async {
        Ok(lee
            .text("[data-testid='plan'] .meta")
            .await?
            .contains("Dana"))
    })
    .await?;
    lee.click("[data-testid='approve']").await?;
    answer_confirmation(true)?;
    eventually("the quorum", || async {
        Ok(status(&agent, &bulk).await? == "approved")
    })
    .await?;
    let names: Vec<Value> = received(&agent, &bulk)
        .await?
        .iter()
        .map(|a| a["display_name"].clone())
        .collect();
    assert_eq!(names, [json!("Dana"), json!("Lee")]);
    assert_eq!(signed_over_its_digest(&gateway, &agent, &bulk).await?, 2);

    let executed = agent.invoke(REMOVE, &bulk).await?;
    assert_eq!(executed.status, 200, "{}", executed.body);
    assert_eq!(status(&agent, &bulk).await?, "executed");
    let row = queue_row(&bulk);
    eventually("the executed plan to leave Dana's queue", || async {
        Ok(dana.count(&row).await? == 0)
    })
    .await?;
    // Opened again from History, the plan shows its result and the emails it queued: this
    // gateway has no relay, so all 37 wait for one.
    dana.click("[data-testid='nav-history']").await?;
    dana.click("[data-testid='history-row'] button.link")
        .await?;
    eventually("the execution result in Dana's window", || async {
        Ok(dana.count("[data-testid='execution-deliveries']").await? == 1)
    })
    .await?;
    let deliveries = dana.text("[data-testid='execution-deliveries']").await?;
    assert!(
        deliveries.contains("37 waiting for the mail relay"),
        "{deliveries}"
    );
    dana.shoot("execution").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_plan_shows_what_moved_and_its_refresh_is_approved() -> anyhow::Result<()> {
    let _one = serial().await;
    let gateway = TestGateway::start().await?;
    let agent = gateway.agent("ops").await?;
    let old = retention_plan(&agent, "prj_184", 14).await?;
    let code = gateway.invite("Dana").await?;
    let app = App::start(Launch::new(&gateway.url, &code)).await?;
    app.open(&old).await?;

    gateway.move_project("prj_184", 21).await?;
    let moved = app.text("[data-testid='moved']").await?;
    assert!(moved.contains("projects/prj_184"), "{moved}");
    let approve = app.find("[data-testid='approve']").await?;
    assert!(approve.attr("disabled").await?.is_some(), "a stale plan");

    app.click("[data-testid='refresh']").await?;
    let changed = app.text("[data-testid='changed-moved']").await?;
    assert!(changed.contains("projects/prj_184"), "{changed}");
    app.find("[data-testid='effect-changed']").await?;
    app.shoot("what-changed").await?;
    app.click("[data-testid='approve-new']").await?;
    answer_if_asked(
        &app,
        "[data-testid='decision-state'][data-state='answered']",
    )
    .await?;

    let new = agent.plan(&old).await?["superseded_by"]
        .as_str()
        .expect("the refresh supersedes the stale plan")
        .to_owned();
    eventually("the new plan approved", || async {
        Ok(status(&agent, &new).await? == "approved")
    })
    .await?;
    assert_eq!(signed_over_its_digest(&gateway, &agent, &new).await?, 1);
    assert!(gateway.decisions(&old).await?.is_empty());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_risky_plan_is_signed_only_through_the_native_confirmation() -> anyhow::Result<()> {
    let _one = serial().await;
    let gateway = TestGateway::start().await?;
    let agent = gateway.agent("ops").await?;
    let bulk = contractors_of_support(&agent).await?;
    let code = gateway.invite("Dana").await?;
    let app = App::start(Launch::new(&gateway.url, &code)).await?;
    let digest = app
        .open(&bulk)
        .await?
        .find(fantoccini::Locator::Css("[data-testid='digest']"))
        .await?
        .attr("title")
        .await?
        .expect("the full digest");

    app.click("[data-testid='approve']").await?;
    answer_confirmation(false)?;
    app.find("[data-testid='decision-note']").await?;
    assert!(gateway.decisions(&bulk).await?.is_empty(), "declined");

    // A script in the page calls the command itself: the dialog still stands in its way.
    let script = "const [planId, digest, done] = arguments;
        window.__TAURI_INTERNALS__.invoke('approve', {planId, digest, reason: null})
            .then(v => done({ok: v}), e => done({refused: e}));";
    let (client, args) = (app.client.clone(), vec![json!(bulk), json!(digest)]);
    let answer = tokio::spawn(async move { client.execute_async(script, args).await });
    answer_confirmation(false)?;
    let answer = answer.await??;
    assert_eq!(answer["refused"]["code"], "cancelled", "{answer}");
    assert!(gateway.decisions(&bulk).await?.is_empty(), "declined again");

    app.click("[data-testid='approve']").await?;
    answer_confirmation(true)?;
    eventually("the confirmed approval", || async {
        Ok(received(&agent, &bulk).await?.len() == 1)
    })
    .await?;
    assert_eq!(signed_over_its_digest(&gateway, &agent, &bulk).await?, 1);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_three_is_approved_each_over_its_own_digest() -> anyhow::Result<()> {
    let _one = serial().await;
    let gateway = TestGateway::start().await?;
    let agent = gateway.agent("ops").await?;
    let plans = [
        contractors_of_support(&agent).await?,
        retention_plan(&agent, "prj_311", 60).await?,
        retention_plan(&agent, "prj_420", 45).await?,
    ];
    let code = gateway.invite("Dana").await?;
    let app = App::start(Launch::new(&gateway.url, &code)).await?;
    for plan in &plans {
        app.click(&format!("{} [data-testid='select-plan']", queue_row(plan)))
            .await?;
    }
    app.find("[data-testid='batch']").await?;
    eventually("three plans in the batch", || async {
        Ok(app
            .text("[data-testid='batch-approve']")
            .await?
            .contains('3'))
    })
    .await?;
    app.shoot("batch").await?;
    app.click("[data-testid='batch-approve']").await?;
    let title = answer_confirmation(true)?;
    assert_eq!(title, "Approve 3 plans, each over its own digest?");
    eventually("three results", || async {
        Ok(app.count("[data-testid='batch-result']").await? == 3)
    })
    .await?;
    for plan in &plans {
        eventually("each approval counted", || async {
            Ok(received(&agent, plan).await?.len() == 1)
        })
        .await?;
        assert_eq!(signed_over_its_digest(&gateway, &agent, plan).await?, 1);
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_subjects_of_a_100000_subject_plan_scroll_to_the_last() -> anyhow::Result<()> {
    let _one = serial().await;
    let gateway = TestGateway::start().await?;
    let agent = gateway.agent("ops").await?;
    // 100,000 removals cost 1,000 credits: more than the demo wallet holds.
    gateway.fund("agt_ops", 2_000).await?;
    let bulk = preview(
        &agent,
        REMOVE,
        json!({"group": "grp_all_staff", "filter": {"employment": "employee"}}),
    )
    .await?;
    let last = gateway.last_staff_employee().await?;
    let code = gateway.invite("Dana").await?;
    let app = App::start(Launch::new(&gateway.url, &code)).await?;
    app.open(&bulk).await?;

    app.find_within(
        "[data-testid='subjects-check'][data-matches='true']",
        Duration::from_secs(300),
    )
    .await?;
    let count = app.text("[data-testid='subjects-count']").await?;
    assert!(
        count.contains("100000") || count.contains("100,000"),
        "{count}"
    );
    let bottom = "const list = document.querySelector(\"[data-testid='subjects-scroll']\");
        list.scrollTop = list.scrollHeight;";
    let row = format!("[data-testid='subject-row'][data-subject-id='{last}']");
    eventually("the last subject", || async {
        app.client.execute(bottom, vec![]).await?;
        Ok(app.count(&row).await? == 1)
    })
    .await?;
    let shown = app.text(&row).await?;
    assert!(shown.contains(&last), "{shown}");
    app.shoot("subjects").await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_call_is_approved_at_its_range_and_shows_what_it_cost() -> anyhow::Result<()> {
    let _one = serial().await;
    let gateway = TestGateway::start().await?;
    let agent = gateway.agent("ops").await?;
    let params = json!({"model": "gpt-4o", "max_tokens": 2048, "messages": [
        {"role": "user", "content": "Draft the release notes for this week's console changes."}]});
    let plan = preview(&agent, "text.generate", params).await?;
    let estimated = agent.plan(&plan).await?["plan"]["estimated_cost"].clone();
    let (min, max) = (
        estimated["amount_min"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        estimated["amount_max"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    );
    assert_ne!(min, max, "a range: the usage decides within it");
    let code = gateway.invite("Dana").await?;
    let app = App::start(Launch::new(&gateway.url, &code)).await?;
    app.open(&plan).await?;
    let cost = app.text("[data-testid='pane-cost']").await?;
    assert!(cost.contains(&min) && cost.contains(&max), "{cost}");
    assert_eq!(gateway.providers().requests(), 0, "reviewing costs nothing");
    approve_in_window(&app, &agent, &plan).await?;

    let executed = agent.invoke("text.generate", &plan).await?;
    assert_eq!(executed.status, 200, "{}", executed.body);
    let charged = executed.body["usage"]["credits"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    app.click("[data-testid='nav-history']").await?;
    app.click("[data-testid='history-row'] button.link").await?;
    eventually("the provider's answer in the window", || async {
        Ok(app.count("[data-testid='execution-content']").await? == 1)
    })
    .await?;
    let content = app.text("[data-testid='execution-content']").await?;
    assert!(content.starts_with("Demo answer from gpt-4o"), "{content}");
    let shown = app.text("[data-testid='execution-cost']").await?;
    assert!(shown.contains(&format!("{charged} credits")), "{shown}");
    assert!(shown.contains(&format!("{min}–{max} credits")), "{shown}");
    assert!(shown.contains("output tokens"), "{shown}");
    app.shoot("provider-execution").await
}
