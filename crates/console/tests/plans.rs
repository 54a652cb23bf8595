//! Plans as the console shows them, against a real gateway: all subjects with search and what
//! else happens to each, the batch summary, an executed plan's result, and the history. Run under
//! `tests/with-keyring.sh`.

use countersign_proto::statement::Signed as _;

use crate::common::{retention, Recorder, REMOVE, SETTINGS};
use serde_json::json;

/// Seed 004: a retention change names its consequences, not counts: each item's expiry before
/// → after, and the items legal hold keeps as they are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retention_change_names_each_item_s_new_expiry_and_the_items_held() -> anyhow::Result<()>
{
    let (_gateway, agent, dana) = crate::common::approving("Dana").await?;
    let plan_id = agent.plan(SETTINGS, retention("prj_184", 14)).await?;
    let view = dana.console.plan_view(&plan_id).await?;
    let held = view
        .validation
        .iter()
        .find(|v| v.code == "legal_hold_items_skipped")
        .expect("prj_184 has items under legal hold");
    assert!(!held.items.is_empty());
    assert_eq!(held.items_total, held.items.len() as u64);
    for item in &held.items {
        let detail = item.detail.as_deref().unwrap_or_default();
        assert!(
            detail.starts_with("expires 20") && detail.ends_with("legal hold"),
            "{detail}"
        );
        assert!(!item.label.is_empty());
    }

    let recalculated = view
        .effects
        .iter()
        .find(|e| e.effect_type == "expiry_recalculated")
        .unwrap();
    let page = dana
        .console
        .subjects_page(&plan_id, &recalculated.id, "", 0, 500)
        .await?;
    assert!(page.check.matches);
    assert!(!page.rows.is_empty());
    for row in &page.rows {
        let detail = row.detail.as_deref().unwrap_or_default();
        let (before, after) = detail
            .strip_prefix("expires ")
            .and_then(|d| d.split_once(" → "))
            .unwrap_or_else(|| panic!("{detail}"));
        // 30 days of retention become 14: every item expires sooner.
        assert!(after < before, "{detail}");
    }
    let held_ids: Vec<&str> = held.items.iter().map(|i| i.id.as_str()).collect();
    assert!(page.rows.iter().all(|r| !held_ids.contains(&r.id.as_str())));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subjects_are_paged_searched_checked_and_say_what_else_happens() -> anyhow::Result<()> {
    let (_gateway, agent, dana) = crate::common::approving("Dana").await?;
    let plan_id = agent
        .plan(
            REMOVE,
            json!({"group": "grp_support", "filter": {"employment": "contractor"}}),
        )
        .await?;
    let view = dana.console.plan_view(&plan_id).await?;
    let direct = view
        .effects
        .iter()
        .find(|e| e.effect_type == "direct_membership_removed")
        .unwrap();

    let all = dana
        .console
        .subjects_page(&plan_id, &direct.id, "", 0, 10)
        .await?;
    assert_eq!((all.total, all.matched, all.rows.len()), (37, 37, 10));
    assert!(all.check.matches, "{:?}", all.check);
    assert!(
        all.rows.iter().all(|r| r.label.is_some()),
        "names, not only ids"
    );

    let tail = dana
        .console
        .subjects_page(&plan_id, &direct.id, "", 30, 10)
        .await?;
    assert_eq!(tail.rows.len(), 7);
    assert_eq!(tail.rows.last().unwrap().id, "usr_37");

    let one = dana
        .console
        .subjects_page(&plan_id, &direct.id, "USR_02", 0, 10)
        .await?;
    assert_eq!(one.matched, 1, "case-insensitive search of the ids");
    let row = &one.rows[0];
    assert!(
        row.also.iter().any(|a| a == "loses on-call"),
        "{:?}",
        row.also
    );
    let kept = dana
        .console
        .subjects_page(&plan_id, &direct.id, "usr_08", 0, 10)
        .await?;
    assert!(
        kept.rows[0]
            .also
            .iter()
            .any(|a| a.starts_with("keeps access")),
        "{:?}",
        kept.rows[0].also
    );
    let label = row.label.clone().unwrap();
    let by_name = dana
        .console
        .subjects_page(&plan_id, &direct.id, &label.to_uppercase(), 0, 10)
        .await?;
    assert!(by_name.rows.iter().any(|r| r.id == "usr_02"), "by label");

    let too_many = dana
        .console
        .subjects_page(&plan_id, &direct.id, "", 0, 501)
        .await
        .unwrap_err();
    assert_eq!(too_many.code(), "invalid_input");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_view_counts_distinct_subjects_and_shows_overlaps() -> anyhow::Result<()> {
    let (_gateway, agent, dana) = crate::common::approving("Dana").await?;
    let contractors = agent
        .plan(
            REMOVE,
            json!({"group": "grp_support", "filter": {"employment": "contractor"}}),
        )
        .await?;
    let two = agent
        .plan(
            REMOVE,
            json!({"group": "grp_support", "filter": {"users": ["usr_02", "usr_03"]}}),
        )
        .await?;
    let settings = agent.plan(SETTINGS, retention("prj_184", 14)).await?;
    let ids = vec![contractors.clone(), two.clone(), settings.clone()];
    let batch = dana.console.batch_view(&ids).await?;
    assert_eq!(batch.plans.len(), 3);
    assert_eq!(
        batch.plans[0].subjects, 37,
        "distinct, not summed over effects"
    );
    assert_eq!(batch.plans[1].subjects, 2);
    assert!(!batch.plans[0].consequence.is_empty());
    assert_eq!(batch.overlaps.len(), 1, "{:?}", batch.overlaps);
    let overlap = &batch.overlaps[0];
    assert_eq!(overlap.plans, [contractors, two]);
    assert_eq!(overlap.subjects, 2);
    assert_eq!(overlap.sample, ["usr_02", "usr_03"]);
    assert!(batch.distinct_subjects >= 37);
    let credits: rust_decimal::Decimal = batch.total_credits.parse()?;
    let sum: rust_decimal::Decimal = batch
        .plans
        .iter()
        .map(|p| p.credits_max.parse::<rust_decimal::Decimal>().unwrap())
        .sum();
    assert_eq!(credits, sum);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_executed_plan_shows_its_result_and_no_stale_banner() -> anyhow::Result<()> {
    let (_gateway, agent, dana) = crate::common::approving("Dana").await?;
    let plan_id = agent.plan(SETTINGS, retention("prj_184", 14)).await?;
    let view = dana.console.plan_view(&plan_id).await?;
    assert!(view.execution.is_none());
    dana.console
        .approve(&plan_id, &view.digest, None, &Recorder::answering(true))
        .await?;
    let executed = agent.invoke(SETTINGS, &plan_id).await?;
    assert_eq!(executed["success"], true, "{executed}");

    let after = dana.console.plan_view(&plan_id).await?;
    assert_eq!(after.status, "executed");
    assert!(after.stale.is_empty(), "its own writes are no staleness");
    let execution = after.execution.expect("the execution record");
    assert!(execution.executed_at.is_some());
    // The seed 002 envelope the agent received, not only the gateway's bookkeeping.
    assert_eq!(execution.content, executed["content"].as_str().unwrap());
    assert!(!execution.content.is_empty());
    let trace = executed["metadata"]["trace_id"].as_str().unwrap();
    assert!(
        execution
            .metadata
            .iter()
            .any(|(k, v)| k == "trace_id" && v == trace),
        "{:?}",
        execution.metadata
    );
    assert!(
        execution
            .journal
            .iter()
            .any(|r| r.resource == "projects/prj_184/retention_days"
                && r.before == "30"
                && r.after == "14"),
        "{:?}",
        execution.journal
    );
    assert_eq!(after.approvals.len(), 1);
    assert_eq!(after.approvals[0].display_name, "Dana");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_is_newest_first_verified_offline_and_exported_privately() -> anyhow::Result<()> {
    let (gateway, agent, dana) = crate::common::approving("Dana").await?;
    let first = agent.plan(SETTINGS, retention("prj_184", 14)).await?;
    let second = agent.plan(SETTINGS, retention("prj_311", 21)).await?;
    let view = dana.console.plan_view(&first).await?;
    dana.console
        .approve(&first, &view.digest, None, &Recorder::answering(true))
        .await?;
    let view = dana.console.plan_view(&second).await?;
    dana.console
        .reject(&second, &view.digest, "Too short.".into())
        .await?;

    let history = dana.console.history().await?;
    let order: Vec<&str> = history.iter().map(|h| h.plan_id.as_str()).collect();
    assert_eq!(order, [second.as_str(), first.as_str()], "newest first");
    assert!(history.iter().all(|h| h.verified), "{history:?}");
    assert_eq!(history[0].reason.as_deref(), Some("Too short."));
    assert_eq!(history[0].plan_digest, view.digest);
    assert_eq!(history[0].state, "answered");

    // A row whose envelope someone else signed does not verify, whatever it claims.
    let journal = dana.console.journal().unwrap();
    let forged = countersign_proto::decision::Statement {
        plan_id: first.clone(),
        ..serde_json::from_slice(
            &serde_json::from_value::<countersign_proto::dsse::Envelope>(
                history[1].envelope.clone(),
            )?
            .payload_bytes()?,
        )?
    };
    let other = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
    let envelope = forged.sign(&other)?;
    journal
        .record(
            &dana.gateway_id,
            &first,
            countersign_console::Decision::Approve,
            &envelope,
            &countersign_proto::dsse::encode_public_key(&other.verifying_key()),
        )
        .await?;
    let history = dana.console.history().await?;
    assert!(!history[0].verified);
    assert!(history[0].verify_error.is_some());

    let path = gateway.dir.path().join("history.jsonl");
    dana.console.export_history(&path).await?;
    let text = std::fs::read_to_string(&path)?;
    assert_eq!(text.lines().count(), 3);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(
            std::fs::metadata(&path)?.permissions().mode() & 0o777,
            0o600
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_plan_refreshes_into_one_that_says_what_changed() -> anyhow::Result<()> {
    let (_gateway, agent, dana) = crate::common::approving("Dana").await?;
    let old = agent.plan(SETTINGS, retention("prj_184", 14)).await?;
    let other = agent.plan(SETTINGS, retention("prj_184", 21)).await?;
    let view = dana.console.plan_view(&other).await?;
    dana.console
        .approve(&other, &view.digest, None, &Recorder::answering(true))
        .await?;
    agent.invoke(SETTINGS, &other).await?;

    let stale = dana.console.plan_view(&old).await?;
    assert_eq!(stale.status, "stale");
    assert!(!stale.stale.is_empty(), "a stale plan lists what moved");
    assert!(!stale.approvable);

    let refreshed = dana.console.refresh(&old).await?;
    assert_eq!(refreshed.plan.supersedes.as_deref(), Some(old.as_str()));
    assert_eq!(refreshed.changed.from_plan, old);
    assert_eq!(refreshed.changed.to_plan, refreshed.plan.plan_id);
    assert!(!refreshed.changed.moved.is_empty());
    assert!(
        refreshed.plan.approvable,
        "{:?}",
        refreshed.plan.not_approvable_reason
    );
    let superseded = dana.console.plan_view(&old).await?;
    assert_eq!(
        superseded.superseded_by.as_deref(),
        Some(refreshed.plan.plan_id.as_str())
    );
    Ok(())
}
