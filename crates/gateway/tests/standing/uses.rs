//! A standing approval's use is taken when a plan it approved runs (seed 004: a preview reserves
//! nothing): previews, refreshes and variants use nothing; a plan whose standing approval has no
//! room left, or expired, by the time it is invoked waits for people again and does not run; the
//! count and the credits hold when plans race, on a store whose reads are apart from its writer.

use std::time::Duration;

use axum::http::StatusCode;
use countersign_proto::standing::StandingStatement;
use countersign_proto::Credits;
use serde_json::{json, Value};

use super::{
    agent_id, create, listed, policy, queued, statement, status, upload, EVERY_PLAN, UPLOAD,
};
use crate::common::{assert_error, at_once, retention, Gateway, Reply};

/// A standing approval of `approver`'s for the test agent's retention changes on any of three
/// projects, none of whose plans reads what another's run moves.
fn on_three_projects(
    gw: &Gateway,
    approver: &crate::common::Approver,
    agent: &str,
) -> StandingStatement {
    let mut s = statement(gw, approver, agent);
    s.constraints[0].one_of = Some(PROJECTS.iter().map(|p| json!(p)).collect());
    s.resources = vec!["projects/*".into()];
    s
}

/// Projects of fewer than 25 items, so that no retention change of theirs is bulk.
const PROJECTS: [&str; 3] = ["prj_184", "prj_200", "prj_420"];

/// A retention change on `PROJECTS[n]`.
async fn retention_of(gw: &Gateway, n: usize, days: u32) -> Value {
    gw.dry_run(retention(PROJECTS[n], days)).await
}

/// Runs `plans` at once, each invoked by the test agent; their replies.
async fn run_at_once(gw: &Gateway, plans: &[Value]) -> Vec<Reply> {
    let (state, token) = (gw.state.clone(), gw.agent.clone());
    let plans = plans.to_vec();
    at_once(plans.len(), |i| {
        let gw = Gateway::acting_as(state.clone(), token.clone());
        let plan = plans[i].clone();
        async move { gw.execute(&plan).await }
    })
    .await
}

fn ran(replies: &[Reply]) -> usize {
    replies
        .iter()
        .filter(|r| r.status == StatusCode::OK)
        .count()
}

#[tokio::test]
async fn a_preview_reserves_nothing_and_the_use_is_taken_when_the_plan_runs() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let agent = agent_id(&gw).await;
    let mut s = on_three_projects(&gw, &dana, &agent);
    s.max_plans = 1;
    create(&gw, &dana, &s).await;
    let first = retention_of(&gw, 0, 14).await;
    let second = retention_of(&gw, 1, 15).await;
    // Both approved while it has room; neither used it.
    assert_eq!(first["status"], "approved", "{first}");
    assert_eq!(second["status"], "approved", "{second}");
    let before = listed(&gw, &dana, &s.standing_id).await;
    assert_eq!(
        (before["plans_used"].as_u64(), before["state"].as_str()),
        (Some(0), Some("active"))
    );
    assert_eq!(before["covered"].as_array().unwrap().len(), 2);
    // A refresh and a variant preview use nothing either.
    let uri = format!("/v1/plans/{}/refresh", second["plan_id"].as_str().unwrap());
    let refreshed = gw.call("POST", &uri, Some(&gw.agent), None).await;
    assert_eq!(refreshed.status, StatusCode::OK, "{}", refreshed.body);
    let second = refreshed.body["plan"].clone();
    retention_of(&gw, 2, 16).await;
    assert_eq!(listed(&gw, &dana, &s.standing_id).await["plans_used"], 0);

    assert_eq!(gw.execute(&first).await.status, StatusCode::OK);
    let after = listed(&gw, &dana, &s.standing_id).await;
    assert_eq!(
        (after["plans_used"].as_u64(), after["state"].as_str()),
        (Some(1), Some("used_up"))
    );
    assert_eq!(after["uses"][0]["plan_id"], first["plan_id"]);

    // The other was approved by it alone: invoked now, it waits for a person and does not run.
    let refused = gw.execute(&second).await;
    assert_error(&refused, "approval_required", 409);
    let message = refused.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("all 1 of its plans have run"), "{message}");
    assert_eq!(status(&gw, &dana, &second).await, "pending_approval");
    let lena = gw.enroll("Lena").await;
    let second_id = second["plan_id"].as_str().unwrap().to_owned();
    assert!(queued(&gw, &lena).await.contains(&second_id));
    let executed = "SELECT COUNT(*) FROM execution_audit WHERE plan_id = $1";
    assert_eq!(gw.count(executed, &second_id).await, 0);
    assert_eq!(listed(&gw, &dana, &s.standing_id).await["plans_used"], 1);
    // A person decides it, and then it runs.
    crate::common::approve_by(&gw, &second, &[&lena]).await;
    assert_eq!(gw.execute(&second).await.status, StatusCode::OK);
    assert_eq!(listed(&gw, &dana, &s.standing_id).await["plans_used"], 1);
}

#[tokio::test]
async fn a_standing_approval_expired_by_the_time_its_plan_runs_no_longer_approves_it() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let agent = agent_id(&gw).await;
    let mut s = statement(&gw, &dana, &agent);
    s.expires_at = chrono::Utc::now() + chrono::Duration::seconds(2);
    create(&gw, &dana, &s).await;
    let plan = gw.dry_run(retention("prj_184", 14)).await;
    assert_eq!(plan["status"], "approved", "{plan}");
    // The gateway's clock reads whole seconds.
    while chrono::Utc::now() <= s.expires_at + chrono::Duration::seconds(1) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let refused = gw.execute(&plan).await;
    assert_error(&refused, "approval_required", 409);
    assert!(refused.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("expired"));
    assert_eq!(status(&gw, &dana, &plan).await, "pending_approval");
}

/// Rounds of each race: one round can pass by the luck of who ran first.
const ROUNDS: usize = 4;

#[tokio::test]
async fn its_count_holds_when_two_covered_plans_run_at_once() {
    for round in 0..ROUNDS {
        let gw =
            Gateway::serving_apart(Default::default(), countersign_embedded::default_registry())
                .await;
        let dana = gw.enroll("Dana").await;
        let agent = agent_id(&gw).await;
        let mut s = on_three_projects(&gw, &dana, &agent);
        s.max_plans = 1;
        create(&gw, &dana, &s).await;
        let mut plans = Vec::new();
        for n in [0, 1] {
            let plan = retention_of(&gw, n, 14).await;
            assert_eq!(plan["status"], "approved");
            plans.push(plan);
        }
        let replies = run_at_once(&gw, &plans).await;
        assert_eq!(ran(&replies), 1, "round {round}: one use, one plan run");
        let refused = replies.iter().find(|r| r.status != StatusCode::OK).unwrap();
        assert_error(refused, "approval_required", 409);
        let used = listed(&gw, &dana, &s.standing_id).await;
        assert_eq!(used["plans_used"], 1, "round {round}");
    }
}

#[tokio::test]
async fn its_credits_cap_holds_when_covered_plans_run_at_once() {
    for round in 0..ROUNDS {
        let gw = Gateway::with_policy_apart(policy(EVERY_PLAN)).await;
        let dana = gw.enroll("Dana").await;
        // Uploads to projects of two storage quotas: neither reads what the other's run moves.
        let uploads = [upload_to("prj_184", 1), upload_to("prj_200", 2)];
        let first = gw.preview(UPLOAD, uploads[0].clone()).await;
        let agent = first["caller"]["agent_id"].as_str().unwrap().to_owned();
        assert_eq!(first["estimated_cost"]["amount_max"], "0.09");
        let mut s = statement(&gw, &dana, &agent);
        s.capability_id = UPLOAD.into();
        s.constraints.clear();
        s.resources.clear();
        s.max_cost_per_plan = Credits::cents(9);
        s.max_cost_total = Credits::cents(10);
        create(&gw, &dana, &s).await;
        let mut plans = Vec::new();
        for params in uploads {
            let plan = gw.preview(UPLOAD, params).await;
            assert_eq!(plan["status"], "approved", "{plan}");
            plans.push(plan);
        }
        let replies = run_at_once(&gw, &plans).await;
        let bodies: Vec<&Value> = replies.iter().map(|r| &r.body).collect();
        assert_eq!(
            ran(&replies),
            1,
            "round {round}: one upload of 0.09 fits in 0.10, two do not: {bodies:?}"
        );
        let used = listed(&gw, &dana, &s.standing_id).await;
        assert_eq!(used["credits_used"], "0.09");
        assert_eq!(used["plans_used"], 1);
    }
}

fn upload_to(project: &str, n: usize) -> Value {
    let mut params = upload(n);
    params["project"] = json!(project);
    params
}
