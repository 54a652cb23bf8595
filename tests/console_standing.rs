//! Standing approvals and amend in the real desktop binary (tauri-driver under Xvfb): a standing
//! approval made from a plan through the native confirmation, the next plan like it running
//! without reaching the queue (a use, shown apart from a plan it approved that has not run),
//! revoked from the Standing approvals screen; a plan amended in the editor through a native
//! confirmation naming the change, its successor approvable by someone else only. Screenshots
//! (light and dark) of the standing-approval form, the standing-approvals screen, the amend
//! editor and the amended plan go to target/screenshots.

use countersign_e2e::webdriver::{plan_pane, queue_row};
use countersign_e2e::{enroll, retention, TestGateway};

use crate::app::{answer_if_showing, eventually, serial, App, Launch};
use crate::demo_plans::{retention_plan, status, SETTINGS};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standing_approval_from_a_plan_runs_the_next_one_unseen_until_it_is_revoked(
) -> anyhow::Result<()> {
    let _one = serial().await;
    let gateway = TestGateway::start().await?;
    let agent = gateway.agent("ops").await?;
    let first = retention_plan(&agent, "prj_184", 14).await?;
    let code = gateway.invite("Dana").await?;
    let dana = App::start(Launch::new(&gateway.url, &code)).await?;

    dana.open(&first).await?;
    dana.click("[data-testid='approve-like-this']").await?;
    dana.find("[data-testid='standing-form']").await?;
    eventually(
        "project and retention_days, prefilled from the plan",
        || async { Ok(dana.count("[data-testid='standing-constraint']").await? == 2) },
    )
    .await?;
    // Not only 14 days: any retention of at least a week.
    let days = "[data-testid='standing-constraint'][data-param='/retention_days']";
    dana.click(&format!(
        "{days} [data-testid='standing-op'] option[value='at_least']"
    ))
    .await?;
    let value = dana
        .find(&format!("{days} [data-testid='standing-value']"))
        .await?;
    value.clear().await?;
    value.send_keys("7").await?;
    dana.find("[data-testid='standing-reason']")
        .await?
        .send_keys("Retention tuning this week")
        .await?;
    dana.shoot("standing-form").await?;
    dana.click("[data-testid='standing-submit']").await?;
    // The plan's own approval may ask first (if it is risky); the standing approval always does,
    // in words, natively.
    let titles = std::sync::Mutex::new(Vec::new());
    eventually("the standing approval to be signed", || async {
        if dana.count("[data-testid='standing-created']").await? > 0 {
            return Ok(true);
        }
        let answered = answer_if_showing()?;
        titles.lock().unwrap().extend(answered);
        Ok(false)
    })
    .await?;
    let titles = titles.into_inner().unwrap();
    assert!(
        titles
            .iter()
            .any(|t| t == "Approve plans like this without being asked?"),
        "{titles:?}"
    );
    assert_eq!(status(&agent, &first).await?, "approved");

    // The next plan like it is approved as it is stored, and runs; it never reaches the queue.
    let next = agent.dry_run(SETTINGS, retention("prj_184", 21)).await?;
    assert_eq!(next["status"], "approved", "{next}");
    let next = next["plan_id"].as_str().unwrap().to_owned();
    assert_eq!(agent.invoke(SETTINGS, &next).await?.status, 200);
    // Another it approves, which has not run: covered, not yet a use.
    let later = agent.dry_run(SETTINGS, retention("prj_184", 28)).await?;
    assert_eq!(later["status"], "approved", "{later}");
    let later = later["plan_id"].as_str().unwrap().to_owned();
    let unlike = retention_plan(&agent, "prj_200", 45).await?;
    eventually("a plan it does not cover to reach the queue", || async {
        Ok(dana.count(&queue_row(&unlike)).await? == 1)
    })
    .await?;
    assert_eq!(dana.count(&queue_row(&next)).await?, 0);

    dana.click("[data-testid='nav-standing']").await?;
    let row = "[data-testid='standing-row']";
    eventually("the standing approval with its use", || async {
        Ok(dana.count(row).await? == 1
            && dana
                .text("[data-testid='standing-use']")
                .await?
                .starts_with("1 of 10 plans run"))
    })
    .await?;
    let allows = dana.text("[data-testid='standing-allows']").await?;
    assert!(
        allows.starts_with("Approves plans of agt_ops for projects.settings.update"),
        "{allows}"
    );
    assert_eq!(dana.text("[data-testid='standing-use-plan']").await?, next);
    assert_eq!(dana.text("[data-testid='standing-plan']").await?, later);
    let covered = dana.text("[data-testid='standing-covered']").await?;
    assert!(covered.starts_with("Covered, not yet run"), "{covered}");
    dana.shoot("standing-approvals").await?;

    dana.click("[data-testid='standing-revoke']").await?;
    dana.click("[data-testid='standing-revoke-confirm']")
        .await?;
    eventually("the standing approval revoked", || async {
        Ok(dana.find(row).await?.attr("data-state").await?.as_deref() == Some("revoked"))
    })
    .await?;
    let after = agent.dry_run(SETTINGS, retention("prj_184", 22)).await?;
    assert!(after.get("status").is_none(), "{after}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_amended_plan_is_confirmed_natively_and_approved_by_someone_else() -> anyhow::Result<()>
{
    let _one = serial().await;
    let gateway = TestGateway::start().await?;
    let agent = gateway.agent("ops").await?;
    let plan = retention_plan(&agent, "prj_184", 60).await?;
    let code = gateway.invite("Dana").await?;
    let dana = App::start(Launch::new(&gateway.url, &code)).await?;

    dana.open(&plan).await?;
    dana.click("[data-testid='amend-open']").await?;
    let field = dana
        .find("[data-testid='amend-field-retention_days']")
        .await?;
    field.clear().await?;
    field.send_keys("45").await?;
    dana.shoot("amend-editor").await?;
    dana.click("[data-testid='amend-submit']").await?;
    // Nothing goes to the gateway before the native confirmation, which names the change.
    let titles = std::sync::Mutex::new(Vec::new());
    eventually("the amendment to be confirmed and sent", || async {
        if dana.count("[data-testid='amended']").await? > 0 {
            return Ok(true);
        }
        titles.lock().unwrap().extend(answer_if_showing()?);
        Ok(false)
    })
    .await?;
    let titles = titles.into_inner().unwrap();
    assert!(
        titles.iter().any(|t| t == "Change this request?"),
        "{titles:?}"
    );
    let said = dana.text("[data-testid='amended']").await?;
    assert_eq!(said, "Dana changed retention_days from 60 to 45.");

    let old = agent.plan(&plan).await?;
    assert_eq!(old["status"], "superseded");
    let successor = old["superseded_by"].as_str().unwrap().to_owned();
    let record = agent.plan(&successor).await?;
    assert_eq!(record["plan"]["request"]["params"]["retention_days"], 45);
    assert_eq!(record["amendment"]["display_name"], "Dana");

    // Dana wrote the successor's request: the window says so where Approve would be.
    dana.click("[data-testid='open-new']").await?;
    dana.find(&plan_pane(&successor)).await?;
    let why = dana.text("[data-testid='not-approvable']").await?;
    assert!(why.contains("You wrote this request"), "{why}");
    let approve = dana.find("[data-testid='approve']").await?;
    assert!(approve.attr("disabled").await?.is_some());
    // Nor does the queue say it waits on her.
    let turn = format!("{} [data-testid='row-turn']", queue_row(&successor));
    eventually("the successor's row to say it waits on others", || async {
        Ok(dana.find(&turn).await?.attr("data-turn").await?.as_deref() == Some("others"))
    })
    .await?;
    dana.shoot("amended-by-me").await?;

    // Someone else approves it.
    let kim = enroll(&gateway.url, &gateway.invite("Kim").await?).await;
    let (answered, body) = kim.approve(&gateway.url, &record["plan"]).await;
    assert_eq!(answered, 200, "{body}");
    assert_eq!(body["status"], "approved", "{body}");
    let received = agent.plan(&successor).await?["approvals"]["received"].clone();
    assert_eq!(received.as_array().map(Vec::len), Some(1), "{received}");
    assert_eq!(received[0]["approver_id"], kim.id.as_str());
    Ok(())
}
