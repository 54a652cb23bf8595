//! What the console reads from the gateway, counted at a relay in front of it (issue 28): a
//! queue lists without a request per plan, the rows a window shows cost one plan read each and
//! only once, and a new plan costs one read for its announcement and its row together. Run under
//! `tests/with-keyring.sh` (make test does).

use std::time::Duration;

use countersign_console::live::Snapshot;
use countersign_console::session::{Session, SessionConfig};
use countersign_console::signing::signer::Signer;
use countersign_e2e::relay::{Relay, Tamper};
use countersign_e2e::TestGateway;
use serde_json::json;
use tokio::sync::watch;

const PENDING: usize = 60;
const IN_VIEW: usize = 12;

/// Reads of a plan or anything under it (`GET /v1/plans/...`), of one plan when `plan_id` names it.
fn plan_reads(relay: &Relay, plan_id: Option<&str>) -> usize {
    let prefix = match plan_id {
        Some(id) => format!("GET /v1/plans/{id}"),
        None => "GET /v1/plans/".to_owned(),
    };
    relay
        .requests()
        .iter()
        .filter(|r| r.starts_with(&prefix))
        .count()
}

/// Waits until the session's snapshot passes `test`; otherwise fails, saying what came and what
/// crossed the relay.
async fn wait_for(
    changes: &mut watch::Receiver<Snapshot>,
    relay: &Relay,
    what: &str,
    test: impl Fn(&Snapshot) -> bool,
) {
    let within = Duration::from_secs(20);
    let came = tokio::time::timeout(within, changes.wait_for(|s| test(s)))
        .await
        .is_ok();
    assert!(
        came,
        "waited {within:?} for {what}: {} rows, link {:?}; requests {:?}",
        changes.borrow().items.len(),
        changes.borrow().link,
        relay.requests()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_lists_without_reading_its_plans_and_a_new_plan_is_read_once() -> anyhow::Result<()>
{
    let gateway = TestGateway::start().await?;
    let agent = gateway.agent("reads-agent").await?;
    // 101 days and on: never the project's current retention, so every one is a change to approve.
    for days in 101..=100 + PENDING {
        agent
            .dry_run(
                "projects.settings.update",
                json!({"project": "prj_184", "retention_days": days}),
            )
            .await?;
    }
    let relay = Relay::start(&gateway.url, Tamper::default()).await?;
    let dir = tempfile::tempdir()?;
    let session = Session::start(SessionConfig {
        gateway_url: relay.url.clone(),
        enrollment_code: Some(gateway.invite("Dana").await?),
        display_name: "Dana".to_owned(),
        data_dir: dir.path().to_owned(),
        demo: None,
        clock: Default::default(),
    })
    .await?;
    let console = session.console().clone();
    let mut changes = session.changes();
    wait_for(&mut changes, &relay, "the whole queue", |s| {
        s.items.len() == PENDING
    })
    .await;
    // Nothing read the listed plans (the gist filler this replaced read all of them, four at a
    // time, right after the listing); the end of the test counts again, after everything later.
    assert_eq!(
        plan_reads(&relay, None),
        0,
        "the listing read plans: {:?}",
        relay.requests()
    );
    let queue = session.queue();
    assert_eq!(queue.items.len(), PENDING);
    assert!(queue.items.iter().all(|row| !row.gist_read));

    // The rows in view: one read each, and none when the window asks again.
    let in_view: Vec<String> = queue.items[..IN_VIEW]
        .iter()
        .map(|row| row.plan_id.clone())
        .collect();
    let gists = console.gists(&in_view).await?;
    assert_eq!(gists.len(), IN_VIEW);
    assert_eq!(plan_reads(&relay, None), IN_VIEW);
    for plan_id in &in_view {
        assert_eq!(plan_reads(&relay, Some(plan_id)), 1, "{plan_id}");
    }
    assert_eq!(console.gists(&in_view).await?.len(), IN_VIEW);
    assert_eq!(plan_reads(&relay, None), IN_VIEW, "asked again, read again");
    let read: Vec<bool> = session
        .queue()
        .items
        .iter()
        .map(|row| row.gist_read)
        .collect();
    assert_eq!(read.iter().filter(|r| **r).count(), IN_VIEW);

    // A new plan arrives: the announcement's read gives its row's gist too.
    let new = agent
        .dry_run(
            "projects.settings.update",
            json!({"project": "prj_184", "retention_days": 101 + PENDING}),
        )
        .await?;
    let new_id = new["plan_id"].as_str().unwrap().to_owned();
    wait_for(&mut changes, &relay, "the new plan", |s| {
        s.items.iter().any(|item| item.plan_id == new_id)
    })
    .await;
    assert_eq!(plan_reads(&relay, Some(&new_id)), 0, "listed, not read");
    let announced = console.plan_view(&new_id).await?;
    assert!(announced.digest_matches);
    let gist = console.gists(std::slice::from_ref(&new_id)).await?;
    assert_eq!(gist.len(), 1);
    assert_eq!(gist[0].gist, announced.gist);
    assert_eq!(
        plan_reads(&relay, Some(&new_id)),
        1,
        "{:?}",
        relay.requests()
    );
    // After the listing, the rows in view, a second look and a new plan's announcement: every
    // read is one of those, and none in the background read another listed plan.
    assert_eq!(
        plan_reads(&relay, None),
        IN_VIEW + 1,
        "{:?}",
        relay.requests()
    );

    let gateway_id = console.signer().gateway_id().to_owned();
    drop(session);
    Signer::forget(&gateway_id)?;
    Ok(())
}
