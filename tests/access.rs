//! The real window for every approver. With the keyboard alone, as one who cannot use a pointer
//! works: a plan decided, a batch decided and a standing approval signed by keys only
//! (WebDriver's key actions into whatever has the focus; the native confirmations answered with
//! Return), the focus where the next key expects it, and the keys' dialog left where it was
//! opened. At 200 % zoom in the smallest window: nothing needs a sideways scroll, and the
//! decision stays in reach.

use countersign_e2e::TestGateway;
use fantoccini::actions::{InputSource, KeyAction, KeyActions};
use fantoccini::key::Key;

use crate::app::{answer_if_showing, eventually, serial, App, Launch};
use crate::demo_plans::{contractors_of_support, retention_plan, status};

/// Types `keys` into whatever has the focus, one key at a time; a `Key` code in `held` is held
/// down around them (Ctrl + Enter).
async fn press(app: &App, held: Option<Key>, keys: &str) -> anyhow::Result<()> {
    let mut actions = KeyActions::new("keyboard".to_owned());
    if let Some(modifier) = held {
        actions = actions.then(KeyAction::Down {
            value: modifier.into(),
        });
    }
    for key in keys.chars() {
        actions = actions
            .then(KeyAction::Down { value: key })
            .then(KeyAction::Up { value: key });
    }
    if let Some(modifier) = held {
        actions = actions.then(KeyAction::Up {
            value: modifier.into(),
        });
    }
    app.client.perform_actions(actions).await?;
    Ok(())
}

/// What has the focus: its `data-testid` (or its tag), and the plan it belongs to.
async fn focused(app: &App) -> anyhow::Result<(String, String)> {
    let answer = app
        .client
        .execute(
            "const el = document.activeElement;
             return [el.dataset.testid ?? el.tagName.toLowerCase(),
                     el.dataset.planId ?? el.closest('[data-plan-id]')?.dataset.planId ?? ''];",
            vec![],
        )
        .await?;
    Ok((
        answer[0].as_str().unwrap_or_default().to_owned(),
        answer[1].as_str().unwrap_or_default().to_owned(),
    ))
}

/// The plan selected in the queue.
async fn selected(app: &App) -> anyhow::Result<String> {
    Ok(app
        .find("[data-testid='queue-row'][aria-selected='true']")
        .await?
        .attr("data-plan-id")
        .await?
        .unwrap_or_default())
}

/// Answers every native confirmation with Return until `done` holds.
async fn confirm_until<F, Fut>(what: &str, done: F) -> anyhow::Result<()>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<bool>>,
{
    eventually(what, || async {
        if done().await? {
            return Ok(true);
        }
        answer_if_showing()?;
        Ok(false)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_a_batch_and_a_standing_approval_are_decided_with_the_keyboard_alone(
) -> anyhow::Result<()> {
    let _one = serial().await;
    let gateway = TestGateway::start().await?;
    let agent = gateway.agent("ops").await?;
    let mut plans = Vec::new();
    // None of them bulk, so that whichever is left may be approved "like this" (the policy lets
    // no standing approval cover a bulk plan, and `l` does nothing then).
    for (project, days) in [
        ("prj_184", 14),
        ("prj_184", 21),
        ("prj_420", 45),
        ("prj_184", 28),
    ] {
        plans.push(retention_plan(&agent, project, days).await?);
    }
    let code = gateway.invite("Dana").await?;
    let app = App::start(Launch::new(&gateway.url, &code)).await?;
    eventually("every plan listed", || async {
        Ok(app.count("[data-testid='queue-row']").await? == plans.len())
    })
    .await?;

    // The keys' dialog: opened from the queue, closed with Esc, the focus back on the row.
    press(&app, None, "q").await?;
    let first = selected(&app).await?;
    eventually("the focus on the selected row", || async {
        Ok(focused(&app).await? == ("queue-row".to_owned(), first.clone()))
    })
    .await?;
    press(&app, None, "?").await?;
    app.find("[data-testid='keymap']").await?;
    press(&app, None, &Key::Escape.to_string()).await?;
    eventually("the focus back on the row", || async {
        Ok(app.count("[data-testid='keymap']").await? == 0
            && focused(&app).await? == ("queue-row".to_owned(), first.clone()))
    })
    .await?;

    // One plan: Enter moves to it, a approves and signs, and the focus comes back to the queue.
    press(&app, None, &Key::Enter.to_string()).await?;
    eventually("the focus on the plan", || async {
        Ok(focused(&app).await?.0 == "section")
    })
    .await?;
    press(&app, None, "a").await?;
    confirm_until("the plan approved", || async {
        Ok(status(&agent, &first).await? != "pending_approval")
    })
    .await?;
    eventually("the focus back on the queue", || async {
        Ok(focused(&app).await?.0 == "queue-row")
    })
    .await?;

    // A batch: x on one plan, j, x on the next, a signs each over its own digest.
    eventually("the decided plan gone from the queue", || async {
        Ok(app.count("[data-testid='queue-row']").await? == plans.len() - 1)
    })
    .await?;
    // Each jx waits for the queue to show its check, so a loaded machine cannot send the next
    // keys into a queue still drawing the last ones.
    let checked = |n: usize| {
        let app = &app;
        async move {
            eventually("the row checked", || async {
                Ok(app
                    .count("[data-testid='queue-row'][aria-checked='true']")
                    .await?
                    == n)
            })
            .await
        }
    };
    press(&app, None, "jx").await?;
    checked(1).await?;
    let one = selected(&app).await?;
    press(&app, None, "jx").await?;
    checked(2).await?;
    // The batch signs what it shows: `a` waits until it shows both plans (it showed the first
    // alone while the second was read).
    eventually("the batch of two shown", || async {
        Ok(app
            .text("[data-testid='batch-approve']")
            .await?
            .contains("sign 2"))
    })
    .await?;
    let batch: Vec<String> = plans.iter().filter(|p| **p != first).cloned().collect();
    press(&app, None, "a").await?;
    confirm_until("the batch approved", || async {
        let mut decided = 0;
        for plan in &batch {
            decided += usize::from(status(&agent, plan).await? != "pending_approval");
        }
        Ok(decided == 2)
    })
    .await?;
    assert_ne!(status(&agent, &one).await?, "pending_approval");
    // Answered: the results shown, and the focus back on the queue for the next plan.
    eventually("the batch's answers, the focus on the queue", || async {
        Ok(app.count("[data-testid='batch-result']").await? == 2
            && focused(&app).await?.0 == "queue-row")
    })
    .await?;

    // A standing approval: Esc leaves the batch, l opens the form on its reason, Ctrl+Enter
    // signs it (after the plan's own approval).
    press(&app, None, &Key::Escape.to_string()).await?;
    eventually("one plan left", || async {
        Ok(app.count("[data-testid='queue-row']").await? == 1)
    })
    .await?;
    press(&app, None, "q").await?;
    press(&app, None, "j").await?;
    let last = selected(&app).await?;
    app.find(&countersign_e2e::webdriver::plan_pane(&last))
        .await?;
    press(&app, None, "l").await?;
    let seen = std::sync::Mutex::new(Vec::new());
    let waited = eventually("the focus on the reason", || async {
        let now = focused(&app).await?;
        let form = app.count("[data-testid='standing-form']").await?;
        seen.lock().unwrap().push(format!("{now:?} form={form}"));
        Ok(now.0 == "standing-reason")
    })
    .await;
    if let Err(e) = waited {
        let seen = seen.into_inner().unwrap();
        anyhow::bail!("{e}: {:?}", &seen[..seen.len().min(6)]);
    }
    press(&app, None, "Retention tuning this week").await?;
    press(&app, Some(Key::Control), &Key::Enter.to_string()).await?;
    confirm_until("the standing approval signed", || async {
        Ok(app.count("[data-testid='standing-created']").await? > 0)
    })
    .await?;
    assert_eq!(status(&agent, &last).await?, "approved");
    let created = app.text("[data-testid='standing-created']").await?;
    assert!(created.contains("sa_"), "{created}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_200_percent_zoom_in_the_smallest_window_the_plan_and_its_decision_stay_in_reach(
) -> anyhow::Result<()> {
    let _one = serial().await;
    let gateway = TestGateway::start().await?;
    let agent = gateway.agent("ops").await?;
    let bulk = contractors_of_support(&agent).await?;
    let code = gateway.invite("Dana").await?;
    let app = App::start(Launch::new(&gateway.url, &code)).await?;
    // The window's minimum size (tauri.conf.json), then the page at twice its size, as the
    // system's zoom or a large text setting would draw it.
    // WebKitWebDriver does not set a window's size: the window manager's way, as a person would.
    let resized = std::process::Command::new("xdotool")
        .args([
            "search",
            "--onlyvisible",
            "--name",
            "^Countersign$",
            "windowsize",
            "1024",
            "640",
        ])
        .status()?;
    anyhow::ensure!(resized.success(), "xdotool could not resize the window");
    eventually("the window at its minimum size", || async {
        let size = app
            .client
            .execute("return [outerWidth, outerHeight];", vec![])
            .await?;
        Ok(size[0].as_f64().is_some_and(|w| w <= 1024.0))
    })
    .await?;
    app.client
        .execute("document.documentElement.style.zoom = '2';", vec![])
        .await?;
    // The only plan, shown from the start.
    app.find(&countersign_e2e::webdriver::plan_pane(&bulk))
        .await?;
    let reach = "const approve = document.querySelector(\"[data-testid='approve']\");
        approve.scrollIntoView({block: 'nearest'});
        const box = approve.getBoundingClientRect();
        const root = document.documentElement;
        return {sideways: root.scrollWidth - root.clientWidth,
                approve: [box.left, box.top, box.right, box.bottom],
                window: [innerWidth, innerHeight]};";
    let answer = app.client.execute(reach, vec![]).await?;
    assert!(
        answer["sideways"].as_f64().unwrap_or(f64::MAX) <= 1.0,
        "the page scrolls sideways: {answer}"
    );
    let at = |key: &str, n: usize| answer[key][n].as_f64().unwrap_or(f64::NAN);
    // getBoundingClientRect is in the page's own pixels, innerWidth in the zoomed ones.
    let (width, height) = (at("window", 0), at("window", 1));
    assert!(
        at("approve", 0) >= 0.0
            && at("approve", 1) >= 0.0
            && at("approve", 2) * 2.0 <= width + 1.0
            && at("approve", 3) * 2.0 <= height + 1.0,
        "Approve is out of reach: {answer}"
    );
    app.shoot("zoom-200").await?;
    Ok(())
}
