//! The console's live sync and decision outbox against a real gateway on a loopback port, through
//! a proxy that breaks connections. Run under `tests/with-keyring.sh` (make test does): the
//! approver's key lives in the Secret Service.

use std::time::Duration;

use countersign_console::client::Poll;
use countersign_console::live::sync::Backoff;
use countersign_console::live::{Link, Live, Snapshot, Timing};
use countersign_console::signing::journal::Journal;
use countersign_console::signing::signer::Signer;
use countersign_console::{Console, ConsoleError};
use countersign_e2e::proxy::FaultProxy;
use countersign_e2e::retention;
use countersign_e2e::TestGateway;
use serde_json::json;
use tokio::sync::watch;

const CAPABILITY: &str = "projects.settings.update";

async fn wait_for(
    snapshots: &mut watch::Receiver<Snapshot>,
    what: &str,
    within: Duration,
    test: impl Fn(&Snapshot) -> bool,
) -> Snapshot {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        {
            let now = snapshots.borrow_and_update();
            if test(&now) {
                return now.clone();
            }
        }
        match tokio::time::timeout_at(deadline, snapshots.changed()).await {
            Ok(Ok(())) => {}
            _ => panic!(
                "waited {within:?} for {what}; last: {:?}",
                snapshots.borrow().link
            ),
        }
    }
}

fn has(snapshot: &Snapshot, plan_id: &str) -> bool {
    snapshot.items.iter().any(|s| s.plan_id == plan_id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_deliver_plans_and_polling_covers_a_dead_stream() -> anyhow::Result<()> {
    let gateway = TestGateway::start().await?;
    let proxy = FaultProxy::start(gateway.url.trim_start_matches("http://")).await?;
    let agent = gateway.agent("ops").await?;
    let code = gateway.invite("Dana").await?;
    let console = Console::enroll(&proxy.url, &code, "Dana").await?;
    let timing = Timing {
        stream_retry: Backoff::new(Duration::from_millis(200), Duration::from_millis(400)),
        offline: Backoff::new(Duration::from_millis(100), Duration::from_millis(400)),
    };
    let (live, mut snapshots) = Live::new(console.client().clone(), timing);
    let task = tokio::spawn(live.run());
    let within = Duration::from_secs(15);

    wait_for(&mut snapshots, "the stream", within, |s| {
        s.link == Link::Online
    })
    .await;
    let first = agent.dry_run(CAPABILITY, retention("prj_184", 7)).await?;
    let first_id = first["plan_id"].as_str().unwrap().to_owned();
    let seen = wait_for(&mut snapshots, "the first plan", within, |s| {
        has(s, &first_id)
    })
    .await;
    assert_eq!(
        seen.link,
        Link::Online,
        "delivered by the stream, which never polls"
    );

    // The stream dies and cannot come back: the queue keeps up by polling.
    proxy.block_events(true);
    proxy.kill_all();
    wait_for(&mut snapshots, "the fallback", within, |s| {
        s.link == Link::Degraded
    })
    .await;
    let second = agent.dry_run(CAPABILITY, retention("prj_200", 7)).await?;
    let second_id = second["plan_id"].as_str().unwrap().to_owned();
    let seen = wait_for(&mut snapshots, "the second plan", within, |s| {
        has(s, &second_id)
    })
    .await;
    assert_eq!(seen.link, Link::Degraded, "found by polling");
    assert!(seen.last_sync.is_some());

    // The stream is back: live again, resuming where it left off.
    proxy.block_events(false);
    wait_for(&mut snapshots, "the stream again", within, |s| {
        s.link == Link::Online
    })
    .await;
    let third = agent.dry_run(CAPABILITY, retention("prj_311", 7)).await?;
    let third_id = third["plan_id"].as_str().unwrap().to_owned();
    let seen = wait_for(&mut snapshots, "the third plan", within, |s| {
        has(s, &third_id)
    })
    .await;
    assert!(has(&seen, &first_id) && has(&seen, &second_id));
    task.abort();
    Signer::forget(&gateway.state.gateway_id)?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_decisions_through_a_faulty_network_arrive_exactly_once() -> anyhow::Result<()>
{
    let gateway = TestGateway::start().await?;
    let proxy = FaultProxy::start(gateway.url.trim_start_matches("http://")).await?;
    let agent = gateway.agent("ops").await?;
    let code = gateway.invite("Dana").await?;
    let dir = tempfile::tempdir()?;
    let journal = Journal::open(&dir.path().join("journal.db")).await?;
    let console = Console::enroll(&proxy.url, &code, "Dana")
        .await?
        .with_journal(journal.clone());

    let projects = ["prj_184", "prj_200", "prj_311", "prj_420", "prj_421"];
    let mut plans = Vec::new();
    for n in 0..200 {
        let params = json!({"project": projects[n % 5], "retention_days": 100 + n});
        let plan = agent.dry_run(CAPABILITY, params).await?;
        plans.push(plan["plan_id"].as_str().unwrap().to_owned());
    }

    proxy.faults(true);
    for plan_id in &plans {
        let mut tries = 0;
        loop {
            tries += 1;
            assert!(tries < 200, "{plan_id} never got signed");
            // Reading the plan may fail on the way; nothing is signed until it succeeds.
            let view = match console.plan_view(plan_id).await {
                Ok(view) => view,
                Err(ConsoleError::Unreachable { .. } | ConsoleError::Protocol(_)) => continue,
                Err(e) => panic!("{plan_id}: {e}"),
            };
            match console.approve(plan_id, &view.digest, None, &Yes).await {
                Ok(_) | Err(ConsoleError::Queued(_)) => break,
                Err(ConsoleError::Unreachable { .. } | ConsoleError::Protocol(_)) => continue,
                Err(e) => panic!("{plan_id}: {e}"),
            }
        }
    }
    let mut rounds = 0;
    while console.flush().await?.waiting > 0 {
        rounds += 1;
        assert!(rounds < 500, "the outbox never drained");
    }
    proxy.faults(false);

    let counters = &proxy.counters;
    let cut = counters.cut.load(std::sync::atomic::Ordering::SeqCst);
    let dropped = counters.dropped.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        cut > 10 && dropped > 10,
        "the network was not faulty enough: {cut} cut, {dropped} dropped"
    );

    let entries = journal.entries(None).await?;
    assert_eq!(
        entries.len(),
        200,
        "one signed decision per plan, never a second"
    );
    for entry in &entries {
        assert_eq!(entry.state, "answered", "{entry:?}");
        entry.verify()?;
    }
    let resent = entries.iter().filter(|e| e.attempts > 1).count();
    assert!(resent > 0, "some decisions had to be sent again");
    let pool = gateway.state.store.pool();
    // What the gateway holds is, plan for plan, the one envelope this console signed.
    let stored: Vec<(String, String)> =
        sqlx::query_as("SELECT plan_id, envelope FROM decisions ORDER BY plan_id")
            .fetch_all(pool)
            .await?;
    assert_eq!(stored.len(), 200);
    for (plan_id, envelope) in &stored {
        let entry = entries
            .iter()
            .find(|e| &e.plan_id == plan_id)
            .expect("journaled");
        let envelope: serde_json::Value = serde_json::from_str(envelope)?;
        assert_eq!(envelope, entry.envelope, "{plan_id}");
    }
    let approved: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM plans WHERE status = 'approved'")
        .fetch_one(pool)
        .await?;
    assert_eq!(approved, 200);
    Signer::forget(&gateway.state.gateway_id)?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_longer_than_a_page_arrives_whole() -> anyhow::Result<()> {
    let gateway = TestGateway::start().await?;
    let agent = gateway.agent("ops").await?;
    let code = gateway.invite("Dana").await?;
    let console = Console::enroll(&gateway.url, &code, "Dana").await?;
    for days in 1..=7 {
        agent
            .dry_run(
                CAPABILITY,
                json!({"project": "prj_184", "retention_days": days}),
            )
            .await?;
    }
    let client = console.client();
    let Poll::Changed {
        list: whole, etag, ..
    } = client.pending(None).await?
    else {
        panic!("a first listing is never unchanged");
    };
    let Poll::Changed { list: paged, .. } = client.pending_in_pages(None, Some(2)).await? else {
        panic!("a first listing is never unchanged");
    };
    assert_eq!(whole.items.len(), 7);
    assert_eq!(paged.items, whole.items, "four pages, in the queue's order");
    assert_eq!(paged.next_cursor, None);
    assert!(matches!(
        client.pending(etag.as_deref()).await?,
        Poll::NotModified { .. }
    ));
    Ok(())
}

/// The approver's yes to every confirmation: these tests are about what happens after it.
struct Yes;

impl countersign_console::Confirm for Yes {
    fn confirm(&self, _: &str, _: &str, _: &[String]) -> bool {
        true
    }
}
