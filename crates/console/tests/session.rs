//! A session on a gateway the shell started: credentials kept across starts without spending
//! another invite, the header and the queue from the live snapshot, and notifications judged on
//! the fetched plan. Run under `tests/with-keyring.sh`.

use std::time::Duration;

use crate::common::retention;
use crate::common::{require_secret_service, Recorder, REMOVE, SETTINGS};
use countersign_console::live::notify::NotifyRules;
use countersign_console::live::{Link, Snapshot};
use countersign_console::session::{Session, SessionConfig};
use countersign_console::signing::signer::Signer;
use countersign_embedded::Embedded;
use serde_json::json;
use tokio::sync::watch;

async fn until(
    changes: &mut watch::Receiver<Snapshot>,
    what: &str,
    test: impl Fn(&Snapshot) -> bool,
) {
    let waited = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if test(&changes.borrow_and_update()) {
                return;
            }
            changes.changed().await.unwrap();
        }
    })
    .await;
    assert!(waited.is_ok(), "waited for {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_demo_session_keeps_its_credential_and_spends_no_second_invite() -> anyhow::Result<()> {
    require_secret_service();
    let dir = tempfile::tempdir()?;
    let database = format!("sqlite://{}", dir.path().join("demo.db").display());
    let demo = Embedded::start(&database, None).await?;
    let code = demo.invite("Dana").await?;
    let config = |code: &str| SessionConfig {
        gateway_url: demo.url.clone(),
        enrollment_code: Some(code.to_owned()),
        display_name: "Dana".to_owned(),
        data_dir: dir.path().join("data"),
        demo: Some(demo.gateway_id().to_owned()),
        clock: Default::default(),
    };
    let first = Session::start(config(&code)).await?;
    let gateway_id = first.console().signer().gateway_id().to_owned();
    drop(first);
    // The code is spent: a start that tried to spend it again would fail.
    let again = Session::start(config(&code)).await;
    Signer::forget(&gateway_id)?;
    let again = again?;
    let status = again.status();
    assert!(status.demo);
    assert_eq!(
        status.approver, "Dana",
        "the approver's name, not the key id"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_header_and_queue_come_from_the_live_snapshot() -> anyhow::Result<()> {
    require_secret_service();
    let gateway = crate::common::Gateway::start().await?;
    let agent = gateway.agent("ops").await?;
    let code = gateway.invite("Dana").await?;
    let dir = tempfile::tempdir()?;
    let session = Session::start(SessionConfig {
        gateway_url: gateway.url.clone(),
        enrollment_code: Some(code),
        display_name: "ignored".to_owned(),
        data_dir: dir.path().to_owned(),
        demo: None,
        clock: Default::default(),
    })
    .await;
    let session = match session {
        Ok(s) => s,
        Err(e) => anyhow::bail!("{e}"),
    };
    let gateway_id = session.console().signer().gateway_id().to_owned();
    let outcome =
        async {
            let mut changes = session.changes();
            until(&mut changes, "online", |s| s.link == Link::Online).await;
            let status = session.status();
            assert_eq!(status.approver, "Dana");
            assert!(status.last_sync.is_some());
            assert_eq!(status.outbox, 0);

            // More than the agent's wallet holds: blocked, it reaches no person.
            let blocked = agent
                .plan(
                    REMOVE,
                    json!({"group": "grp_all_staff", "filter": {"employment": "employee"}}),
                )
                .await?;
            let bulk = agent
                .plan(
                    REMOVE,
                    json!({"group": "grp_support", "filter": {"employment": "contractor"}}),
                )
                .await?;
            let calm = agent.plan(SETTINGS, retention("prj_184", 14)).await?;
            until(&mut changes, "both plans listed", |s| s.items.len() == 2).await;
            // Rows show their plans' own gists once a window asks for the rows in view.
            let listed: Vec<String> = session
                .queue()
                .items
                .iter()
                .map(|i| i.plan_id.clone())
                .collect();
            session.console().gists(&listed).await?;
            assert!(session
                .queue()
                .items
                .iter()
                .all(|i| i.gist_read
                    && (i.gist.contains("prj_184") || i.gist.contains("grp_support"))));
            let queue = session.queue();
            let row = queue.items.iter().find(|i| i.plan_id == bulk).unwrap();
            assert_eq!(row.gist, "grp_support −37");
            assert!(!row.blocked && !row.queued);

            let rules = NotifyRules::default();
            let bulk_view = session.console().plan_view(&bulk).await?;
            let calm_view = session.console().plan_view(&calm).await?;
            assert!(rules.selects_plan(&bulk_view));
            assert_eq!(rules.selects_plan(&calm_view), !calm_view.risk.is_empty());
            // Opened by its id, it says it is blocked; no rule announces it.
            let blocked_view = session.console().plan_view(&blocked).await?;
            assert!(blocked_view.risk.iter().any(|f| f == "blocked"));
            assert!(!blocked_view.approvable);
            assert!(!rules.selects_plan(&blocked_view));
            assert!(session.queue().items.iter().all(|i| i.plan_id != blocked));

            session
                .console()
                .approve(&bulk, &bulk_view.digest, None, &Recorder::answering(true))
                .await?;
            until(&mut changes, "Dana's approval listed", |s| {
                s.items
                    .iter()
                    .any(|p| p.plan_id == bulk && !p.approvals.received.is_empty())
            })
            .await;
            let row = session
                .queue()
                .items
                .into_iter()
                .find(|i| i.plan_id == bulk)
                .unwrap();
            assert_eq!(row.approved_by, ["Dana"]);
            anyhow::Ok(())
        }
        .await;
    Signer::forget(&gateway_id)?;
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snooze_survives_a_restart_of_the_app() -> anyhow::Result<()> {
    require_secret_service();
    let gateway = crate::common::Gateway::start().await?;
    let agent = gateway.agent("ops").await?;
    let code = gateway.invite("Dana").await?;
    let dir = tempfile::tempdir()?;
    let config = || SessionConfig {
        gateway_url: gateway.url.clone(),
        enrollment_code: Some(code.clone()),
        display_name: "ignored".to_owned(),
        data_dir: dir.path().to_owned(),
        demo: None,
        clock: Default::default(),
    };
    let first = Session::start(config()).await?;
    let gateway_id = first.console().signer().gateway_id().to_owned();
    let outcome = async {
        let snoozed = agent.plan(SETTINGS, retention("prj_184", 14)).await?;
        let mut changes = first.changes();
        until(&mut changes, "the plan listed", |s| s.items.len() == 1).await;
        first.console().snooze(&snoozed, 10)?;
        let until_then = first.queue().items[0].snoozed_until.clone();
        assert!(until_then.is_some());
        drop(first);

        let again = Session::start(config()).await?;
        let mut changes = again.changes();
        until(&mut changes, "listed again", |s| s.items.len() == 1).await;
        // Judged against the listing, it stays hidden and nothing is due.
        assert!(again.console().due().is_empty());
        let row = &again.queue().items[0];
        assert_eq!(row.plan_id, snoozed);
        assert_eq!(row.snoozed_until, until_then, "kept across the restart");
        again.console().unsnooze(&snoozed);
        assert_eq!(again.queue().items[0].snoozed_until, None);
        drop(again);
        let third = Session::start(config()).await?;
        let mut changes = third.changes();
        until(&mut changes, "listed a third time", |s| s.items.len() == 1).await;
        assert_eq!(
            third.queue().items[0].snoozed_until,
            None,
            "unsnoozed is kept too"
        );
        anyhow::Ok(())
    }
    .await;
    Signer::forget(&gateway_id)?;
    outcome
}
