//! The in-process demo gateway the desktop app starts when no gateway is configured.

use std::time::Duration;

use crate::common::{approval_of, JsonReply};
use countersign_embedded::Embedded;
use countersign_proto::statement::Signed as _;

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
    let (_, token) = countersign_engine::accounts::rotate_agent_token(
        &gateway.state.store,
        "ops",
        Some("usr_lead"),
    )
    .await
    .unwrap();
    let mut agent = countersign_demo_world::sim::AgentSim::new(&gateway.url, &token);
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

/// Dana approves one bulk removal; the demo's co-approver seconds it after its delay, through a
/// signed decision of its own. A plan nobody approved it leaves alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_co_approver_seconds_an_approval_and_never_approves_alone() {
    use countersign_embedded::CoApprover;
    use countersign_proto::decision::Signer;
    use serde_json::{json, Value};

    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("co.db").display());
    let delay = Duration::from_millis(400);
    let co = CoApprover {
        name: "Ada (demo co-approver)".to_owned(),
        delay,
    };
    let gateway = Embedded::start_with(&database, None, Some(co.clone()))
        .await
        .unwrap();
    let ada = gateway.co_approver_id().unwrap().to_owned();
    let (_, agent) = countersign_engine::accounts::rotate_agent_token(
        &gateway.state.store,
        "ops",
        Some("usr_lead"),
    )
    .await
    .unwrap();
    let http = reqwest::Client::new();
    let url = gateway.url.clone();
    let dry_run = || async {
        let plan: Value = http
            .post(format!(
                "{url}/v1/capabilities/groups.members.remove/dry_run"
            ))
            .bearer_auth(&agent)
            .json(&json!({"params": {"group": "grp_support", "filter": {"employment": "contractor"}}}))
            .json_reply()
            .await;
        assert_eq!(plan["would_require_approval"], true, "{plan}");
        plan
    };
    let seconded = dry_run().await;
    let alone = dry_run().await;
    let marker = dry_run().await;

    let key = ed25519_dalek::SigningKey::generate(&mut rand::rngs::OsRng);
    let code = gateway.invite("Dana").await.unwrap();
    let dana: Value = http
        .post(format!("{url}/v1/approvers/enroll"))
        .json(&json!({"enrollment_code": code, "display_name": "Dana",
                      "public_key": countersign_proto::dsse::encode_public_key(&key.verifying_key())}))
        .json_reply()
        .await;
    let token = dana["token"].as_str().unwrap().to_owned();
    let approve = |plan: &Value| {
        let signer = Signer {
            approver_id: dana["approver_id"].as_str().unwrap(),
            key_id: dana["key_id"].as_str().unwrap(),
            audience: gateway.gateway_id(),
        };
        let statement = approval_of(signer, plan);
        let (http, url, token) = (http.clone(), url.clone(), token.clone());
        let signed = statement.sign(&key).unwrap();
        async move {
            let answer: Value = http
                .post(format!("{url}/v1/plans/{}/decisions", statement.plan_id))
                .bearer_auth(&token)
                .json(&signed)
                .json_reply()
                .await;
            assert_eq!(answer["status"], "pending_approval", "{answer}");
        }
    };
    let record = |id: &Value| {
        let (http, url, token) = (http.clone(), url.clone(), token.clone());
        let id = id.as_str().unwrap().to_owned();
        async move {
            http.get(format!("{url}/v1/plans/{id}"))
                .bearer_auth(&token)
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        }
    };
    let (approve, record) = (&approve, &record);
    let seconded_in_time = |plan: Value| async move {
        let approved_at = tokio::time::Instant::now();
        approve(&plan).await;
        let deadline = approved_at + Duration::from_secs(15);
        let done = loop {
            let now = record(&plan["plan_id"]).await;
            if now["status"] == "approved" {
                break now;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no quorum: {}",
                now["approvals"]
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert!(approved_at.elapsed() >= delay, "seconded before its delay");
        done
    };

    let done = seconded_in_time(seconded).await;
    let received = done["approvals"]["received"].as_array().unwrap();
    assert_eq!(received.len(), 2);
    assert_eq!(received[1]["approver_id"], ada.as_str());
    assert_eq!(received[1]["display_name"], "Ada (demo co-approver)");
    assert_eq!(received[1]["decision"], "approve");

    // Once a plan approved after both has been seconded, the co-approver has seen the queue with
    // the plan nobody approved in it, and left that one waiting with no approval at all.
    seconded_in_time(marker).await;
    let untouched = record(&alone["plan_id"]).await;
    assert_eq!(untouched["status"], "pending_approval");
    assert_eq!(untouched["approvals"]["received"], json!([]));

    // A restart enrolls a new co-approver and revokes the one whose key died with the process.
    drop(gateway);
    let again = Embedded::start_with(&database, None, Some(co))
        .await
        .unwrap();
    let fresh = again.co_approver_id().unwrap().to_owned();
    assert_ne!(fresh, ada);
    let revoked: Option<String> =
        sqlx::query_scalar("SELECT revoked_at FROM approvers WHERE id = $1")
            .bind(&ada)
            .fetch_one(again.state.store.pool())
            .await
            .unwrap();
    assert!(revoked.is_some());
}
