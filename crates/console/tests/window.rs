//! The queue window over a real gateway: the console hands out the rows in view with the counts,
//! and tells each change as what moved within them, with the plans that arrived elsewhere.

use std::time::Duration;

use countersign_console::console::Console;
use countersign_console::live::clock::Clock;
use countersign_console::live::window::WindowAsk;
use countersign_console::review::window::{Facet, QueueQuery};
use countersign_console::signing::signer::Signer;

use crate::common::{require_secret_service, retention, Gateway, SETTINGS};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_window_holds_its_rows_and_is_told_only_what_moved_within_them() -> anyhow::Result<()> {
    require_secret_service();
    let gateway = Gateway::start().await?;
    let agent = gateway.agent("ops").await?;
    let dana = gateway.console("Dana").await?;
    let console = &dana.console;
    let mut plans = Vec::new();
    // A second apart, so that they expire in the order they were made (expiry is kept to the
    // second; equal ones go by plan id).
    for days in [10, 11, 12] {
        plans.push(agent.plan(SETTINGS, retention("prj_184", days)).await?);
        tokio::time::sleep(Duration::from_millis(1100)).await;
    }
    console.sync().await?;
    assert!(console.queue_change(&[]).is_none(), "no window asked yet");

    // The second row alone, and the first plan pinned wherever it is.
    let ask = WindowAsk {
        query: QueueQuery::default(),
        offset: 1,
        limit: 1,
        pins: vec![plans[0].clone()],
    };
    let window = console.queue_window(ask.clone())?;
    assert_eq!(window.items.len(), 1);
    assert_eq!(window.items[0].plan_id, plans[1]);
    assert_eq!((window.counts.matching, window.counts.all), (3, 3));
    assert_eq!(window.pinned.len(), 1);
    assert_eq!(window.pinned[0].at, Some(0));

    // A plan arrives after them: the row in view did not move, the counts did.
    let fourth = agent.plan(SETTINGS, retention("prj_184", 13)).await?;
    console.sync().await?;
    let change = console
        .queue_change(std::slice::from_ref(&fourth))
        .expect("a window asked");
    assert_eq!(change.from, window.generation);
    assert!(change.upserted.is_empty() && change.removed.is_empty());
    assert_eq!((change.total, change.counts.matching), (1, 4));
    assert_eq!(change.arrivals, 1);
    let arrival = change.first_arrival.expect("the one arrival named");
    assert_eq!(arrival.agent_id, "agt_ops");

    // The approver signs the plan in view and it leaves the queue: the row after it takes its
    // place, whole, and nothing else crosses.
    let view = console.plan_view(&plans[1]).await?;
    console
        .approve(
            &plans[1],
            &view.digest,
            None,
            &crate::common::Recorder::answering(true),
        )
        .await?;
    console.sync().await?;
    let next = console.queue_change(&[]).expect("a window asked");
    assert_eq!(next.from, change.to);
    let moved: Vec<(u32, &str)> = next
        .upserted
        .iter()
        .map(|p| (p.at, p.item.plan_id.as_str()))
        .collect();
    assert_eq!(moved, [(0, plans[2].as_str())]);
    assert_eq!(next.removed, [plans[1].clone()]);
    assert_eq!(next.counts.all, 3);
    plans.remove(1);

    // A range and a filter are the console's too.
    plans.push(fourth);
    assert_eq!(
        console.queue_between(&QueueQuery::default(), &plans[2], &plans[0])?,
        plans
    );
    let words = QueueQuery {
        text: plans[2].clone(),
        ..QueueQuery::default()
    };
    let found = console.queue_window(WindowAsk {
        query: words,
        offset: 0,
        limit: 10,
        pins: Vec::new(),
    })?;
    assert_eq!(found.items.len(), 1);
    assert_eq!(found.counts.matching, 1);
    let none = QueueQuery {
        facet: Facet::Stale,
        ..QueueQuery::default()
    };
    assert!(console
        .queue_between(&none, &plans[0], &plans[2])?
        .is_empty());

    let too_many = console.queue_window(WindowAsk { limit: 501, ..ask });
    assert_eq!(
        too_many.map(|_| ()).map_err(|e| e.view().code),
        Err("invalid_input".to_owned())
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snooze_that_ends_brings_its_row_back_at_the_next_ask() -> anyhow::Result<()> {
    require_secret_service();
    let gateway = Gateway::start().await?;
    let agent = gateway.agent("ops").await?;
    let snoozed = agent.plan(SETTINGS, retention("prj_184", 10)).await?;
    let code = gateway.invite("Dana").await?;
    // A minute of this clock is a second: the snooze ends while the test waits.
    let console = Console::enroll(&gateway.url, &code, "Dana")
        .await?
        .with_clock(Clock::test(Duration::ZERO, 60)?);
    let gateway_id = console.signer().gateway_id().to_owned();
    let outcome = async {
        console.sync().await?;
        console.snooze(&snoozed, 1)?;
        let ask = WindowAsk {
            limit: 10,
            ..WindowAsk::default()
        };
        let asleep = console.queue_window(ask.clone())?;
        assert!(asleep.items.is_empty());
        assert_eq!((asleep.counts.matching, asleep.counts.all), (0, 1));
        tokio::time::sleep(Duration::from_millis(1500)).await;
        // Nothing else moved: no listing, no reminder looked for.
        let awake = console.queue_window(ask)?;
        let shown: Vec<&str> = awake.items.iter().map(|i| i.plan_id.as_str()).collect();
        assert_eq!(shown, [snoozed.as_str()]);
        assert_eq!(awake.items[0].snoozed_until, None);
        anyhow::Ok(())
    }
    .await;
    Signer::forget(&gateway_id)?;
    outcome
}
