//! A capability a team adds without touching the engine: `projects.rename`, the example pack
//! built on `countersign-pack` alone (crates/packs/example), registered by a test gateway beside
//! the packs the gateway ships (README, "Writing a capability pack"). It previews, waits for
//! approval, executes, makes the plans that read what it moved stale, and answers in the envelope
//! like any other.

use crate::common::{assert_error, Gateway};
use countersign_engine::{Limits, Registry};
use countersign_providers::Providers;
use serde_json::json;

/// The shipped packs, and the example pack after them.
fn with_example() -> &'static Registry {
    Registry::new(vec![
        countersign_demo_world::pack(),
        countersign_engine::builtin_pack(),
        countersign_providers::pack(&Default::default(), Providers::none()),
        countersign_example_pack::pack(),
    ])
    .unwrap()
    .leak()
}

#[tokio::test]
async fn a_third_pack_runs_through_the_same_plans_approvals_and_envelope() {
    let gw = Gateway::serving(Limits::default(), with_example()).await;
    let ids = gw.capability_ids().await;
    assert_eq!(ids.len(), 11);
    assert_eq!(ids.last().map(String::as_str), Some("projects.rename"));
    assert!(ids.iter().any(|id| id == "text.generate"));

    let params = json!({"project": "prj_184", "name": "Support tools"});
    let plan = gw.approved("projects.rename", params.clone()).await;
    assert_eq!(
        plan["effects"][0]["changes"][0]["before"],
        "Support tooling"
    );
    let reply = gw.execute(&plan).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.body["content"], "Renamed prj_184 to Support tools.");
    assert_eq!(reply.body["usage"]["credits"], "0.01");

    // The engine's staleness covers it too: the rename moved what this plan read, and the queue
    // says so before anyone tries to run it.
    let second = gw
        .approved(
            "projects.rename",
            json!({"project": "prj_184", "name": "B"}),
        )
        .await;
    let stale = gw
        .approved(
            "projects.rename",
            json!({"project": "prj_184", "name": "C"}),
        )
        .await;
    assert_eq!(gw.execute(&second).await.status, 200);
    let stale_id = stale["plan_id"].as_str().unwrap();
    let summary: String = sqlx::query_scalar("SELECT summary FROM plans WHERE id = $1")
        .bind(stale_id)
        .fetch_one(gw.state.store.pool())
        .await
        .unwrap();
    let summary: serde_json::Value = serde_json::from_str(&summary).unwrap();
    assert_eq!(summary["status"], "stale", "{summary}");
    assert_error(&gw.execute(&stale).await, "plan_stale", 409);
}

#[test]
fn two_capabilities_with_one_id_are_refused() {
    let refused = Registry::new(vec![
        countersign_example_pack::pack(),
        countersign_example_pack::pack(),
    ])
    .err()
    .unwrap();
    assert!(
        refused.contains("two capabilities are called projects.rename"),
        "{refused}"
    );
}
