//! The in-process demo gateway the desktop app starts when no gateway is configured.

use std::time::Duration;

use countersign_gateway::embedded::Embedded;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarts_on_its_own_store_and_its_agent_keeps_previewing() {
    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("demo.db").display());
    let limit = Duration::from_secs(20);

    let first = tokio::time::timeout(limit, Embedded::start(&database, None))
        .await
        .expect("first start hangs")
        .unwrap();
    let gateway_id = first.gateway_id().to_owned();
    drop(first);

    let again = tokio::time::timeout(
        limit,
        Embedded::start(&database, Some(Duration::from_millis(50))),
    )
    .await
    .expect("a restart over the same store hangs")
    .unwrap();
    assert_eq!(again.gateway_id(), gateway_id, "the gateway keeps its id");
    assert!(again.invite("Dana").await.unwrap().starts_with("cse_"));

    let pool = again.state.store.pool();
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let plans: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM plans")
            .fetch_one(pool)
            .await
            .unwrap();
        if plans >= 2 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the simulated agent made no plans"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_simulated_agent_mixes_capabilities_and_executes_what_needs_nobody() {
    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("sim.db").display());
    let gateway = Embedded::start(&database, None).await.unwrap();
    let (_, token) = countersign_gateway::accounts::rotate_agent_token(
        &gateway.state.store,
        "ops",
        Some("usr_lead"),
    )
    .await
    .unwrap();
    let mut agent = countersign_gateway::sim::AgentSim::new(&gateway.url, &token);
    for _ in 0..120 {
        agent.step().await.unwrap();
    }
    let pool = gateway.state.store.pool();
    let capabilities: Vec<String> = sqlx::query_scalar("SELECT DISTINCT capability_id FROM plans")
        .fetch_all(pool)
        .await
        .unwrap();
    assert!(capabilities.len() >= 4, "{capabilities:?}");
    let pending: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM plans WHERE status = 'pending_approval'")
            .fetch_one(pool)
            .await
            .unwrap();
    assert!(pending > 0);
    let executed: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM execution_audit")
        .fetch_one(pool)
        .await
        .unwrap();
    assert!(
        executed > 0,
        "uploads and quota changes run without approval"
    );
}
