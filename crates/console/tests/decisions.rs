//! Decisions against a real gateway: the confirmation before a risky approval, batches that sign
//! each plan's own digest, and the outbox that delivers once the gateway answers again. Run
//! under `tests/with-keyring.sh`.

use std::time::Duration;

use crate::common::retention;
use crate::common::{Recorder, REMOVE, SETTINGS};
use countersign_console::live::sync::Backoff;
use countersign_console::live::{Live, Timing};
use countersign_console::review::batch::BatchItem;
use countersign_console::signing::confirm::short_digest;
use countersign_console::Decision;
use countersign_proto::decision::Statement;
use countersign_proto::dsse::Envelope;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_risky_approval_is_not_signed_when_the_confirmation_is_declined() -> anyhow::Result<()> {
    let (_gateway, agent, dana) = crate::common::approving("Dana").await?;
    let plan_id = agent
        .plan(
            REMOVE,
            json!({"group": "grp_support", "filter": {"employment": "contractor"}}),
        )
        .await?;
    let view = dana.console.plan_view(&plan_id).await?;
    assert!(!view.risk.is_empty(), "{:?}", view.risk);
    assert!(
        view.consequence
            .starts_with("removes 37 members from grp_support"),
        "{}",
        view.consequence
    );

    let no = Recorder::answering(false);
    let refused = dana
        .console
        .approve(&plan_id, &view.digest, None, &no)
        .await
        .unwrap_err();
    assert_eq!(refused.code(), "cancelled");
    let asked = no.asked();
    assert_eq!(asked.len(), 1);
    assert_eq!(
        asked[0].1, view.consequence,
        "the dialog names the consequence"
    );
    assert!(asked[0].2[0].contains(&short_digest(&view.digest)));
    let journal = dana.console.journal().unwrap();
    assert!(journal.entries(None).await?.is_empty(), "nothing signed");
    let after = dana.console.plan_view(&plan_id).await?;
    assert_eq!(after.approvals_received, 0, "nothing sent");

    let yes = Recorder::answering(true);
    let answer = dana
        .console
        .approve(&plan_id, &view.digest, None, &yes)
        .await?;
    assert_eq!(answer.approvals_received, 1);
    assert_eq!(journal.entries(None).await?.len(), 1);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_signs_each_plan_over_its_own_digest() -> anyhow::Result<()> {
    let (_gateway, agent, dana) = crate::common::approving("Dana").await?;
    let mut items = Vec::new();
    for (project, days) in [("prj_184", 14), ("prj_311", 21), ("prj_420", 60)] {
        let plan_id = agent
            .plan(
                SETTINGS,
                json!({"project": project, "retention_days": days}),
            )
            .await?;
        let view = dana.console.plan_view(&plan_id).await?;
        items.push(BatchItem {
            plan_id,
            digest: view.digest,
        });
    }

    let no = Recorder::answering(false);
    let cancelled = dana
        .console
        .decide_batch(Decision::Approve, &items, None, &no)
        .await
        .unwrap_err();
    assert_eq!(cancelled.code(), "cancelled");
    let journal = dana.console.journal().unwrap();
    assert!(journal.entries(None).await?.is_empty());

    let yes = Recorder::answering(true);
    let outcome = dana
        .console
        .decide_batch(Decision::Approve, &items, None, &yes)
        .await?;
    let asked = yes.asked();
    assert_eq!(asked.len(), 1, "one confirmation for the batch");
    for (item, line) in items.iter().zip(&asked[0].2) {
        assert!(line.starts_with(&item.plan_id), "{line}");
        assert!(line.contains(&short_digest(&item.digest)), "{line}");
    }
    let outcomes: Vec<&str> = outcome.results.iter().map(|r| r.outcome.as_str()).collect();
    assert_eq!(outcomes, ["answered", "answered", "answered"]);

    let entries = journal.entries(None).await?;
    assert_eq!(entries.len(), 3, "one envelope per plan");
    let signer = dana.console.signer();
    for (item, entry) in items.iter().zip(&entries) {
        let statement: Statement = entry.verify_with(signer)?;
        assert_eq!(statement.plan_id, item.plan_id);
        assert_eq!(
            statement.plan_digest, item.digest,
            "each over its own digest"
        );
        let envelope: Envelope = serde_json::from_value(entry.envelope.clone())?;
        assert_eq!(envelope.signatures.len(), 1);
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_refuses_a_plan_whose_digest_was_not_the_one_seen() -> anyhow::Result<()> {
    let (_gateway, agent, dana) = crate::common::approving("Dana").await?;
    let good = agent.plan(SETTINGS, retention("prj_184", 14)).await?;
    let digest = dana.console.plan_view(&good).await?.digest;
    let other = agent.plan(SETTINGS, retention("prj_311", 21)).await?;
    let items = [
        BatchItem {
            plan_id: good.clone(),
            digest,
        },
        BatchItem {
            plan_id: other,
            digest: "sha256:00".to_owned(),
        },
    ];
    let blank = dana
        .console
        .decide_batch(
            Decision::Reject,
            &items,
            Some(" ".into()),
            &Recorder::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(blank.code(), "invalid_input", "a rejection needs a reason");
    let outcome = dana
        .console
        .decide_batch(
            Decision::Reject,
            &items,
            Some("Not this quarter.".into()),
            &Recorder::default(),
        )
        .await?;
    assert_eq!(outcome.results[0].outcome, "answered");
    assert_eq!(outcome.results[1].outcome, "refused");
    assert_eq!(
        outcome.results[1].error.as_ref().unwrap().code,
        "digest_mismatch"
    );
    let single = dana
        .console
        .reject(&good, "sha256:00", String::new())
        .await
        .unwrap_err();
    assert_eq!(single.code(), "invalid_input");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_queued_while_offline_goes_out_on_reconnect() -> anyhow::Result<()> {
    let (gateway, agent, dana) = crate::common::approving("Dana").await?;
    let plan_id = agent.plan(SETTINGS, retention("prj_184", 14)).await?;
    let view = dana.console.plan_view(&plan_id).await?;
    let timing = Timing {
        stream_retry: Backoff::new(Duration::from_millis(100), Duration::from_millis(300)),
        offline: Backoff::new(Duration::from_millis(100), Duration::from_millis(300)),
    };
    let mut changes = dana.console.changes();
    let live = tokio::spawn(Live::for_console(dana.console.clone(), timing).run());

    gateway.stop();
    let queued = dana
        .console
        .approve(&plan_id, &view.digest, None, &Recorder::answering(true))
        .await;
    // The plan was fetched before the stop reached every connection, or not: either way the
    // decision is not lost, and if it was signed it waits.
    match queued {
        Err(e) if e.code() == "queued" => {}
        Err(e) if e.code() == "unreachable" => {
            gateway.resume().await?;
            anyhow::bail!("the gateway stopped before the plan was fetched: {e}");
        }
        other => anyhow::bail!("expected a queued decision, got {other:?}"),
    }
    assert_eq!(dana.console.snapshot().outbox, 1);
    assert!(dana.console.snapshot().queued.contains(&plan_id));
    // The window keeps showing the plan, as last fetched, with its decision queued.
    let offline = dana.console.plan_view(&plan_id).await?;
    assert!(offline.last_fetched && offline.queued, "{offline:?}");
    assert_eq!(offline.digest, view.digest);

    gateway.resume().await?;
    let delivered = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if changes.borrow_and_update().outbox == 0 {
                return;
            }
            changes.changed().await.unwrap();
        }
    })
    .await;
    assert!(delivered.is_ok(), "the outbox was not sent on reconnect");
    let after = dana.console.plan_view(&plan_id).await?;
    assert_eq!(after.approvals_received, 1);
    assert!(!after.queued && !after.last_fetched);
    live.abort();
    Ok(())
}
