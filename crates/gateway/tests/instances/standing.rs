//! Standing approvals over two instances on one PostgreSQL database: a plan needing two people
//! keeps one who decided it whichever instance each standing approval was signed at, and a
//! standing approval's last use goes to one plan when two instances run covered plans at once.

use axum::http::StatusCode;
use countersign_embedded::{default_registry, seed_demo};
use countersign_engine::Store;
use serde_json::{json, Value};

use super::{shared_database, unlimited};
use crate::common::{approve_by, assert_error, at_once, retention, Gateway, Reply};
use crate::standing::{agent_id, create, listed, policy, statement, EVERY_PLAN};

/// A rule of two people, which standing approvals may sit in.
const TWO: &str = r#"package countersign.approval
import rego.v1
rules contains {"id": "two", "count": 2, "standing": true} if count(input.plan.effects) > 0
"#;

/// Two instances on `url` under the policy `text`, acting as one agent.
async fn pair(url: &str, text: &str) -> (Gateway, Gateway) {
    let instance = |seed: bool| async move {
        let store = Store::open(url).await.unwrap();
        if seed {
            seed_demo(&store).await.unwrap();
        }
        countersign_embedded::state_with_policy(
            store,
            "Test",
            unlimited(),
            default_registry(),
            policy(text),
        )
        .await
        .unwrap()
    };
    let one = Gateway::from_state(instance(true).await).await;
    let two = Gateway::acting_as(instance(false).await, one.agent.clone());
    (one, two)
}

#[tokio::test]
async fn standing_approvals_signed_at_two_instances_fill_one_seat_of_a_rule_of_two() {
    let db = shared_database().await;
    let (one, two) = pair(&db.url, TWO).await;
    let agent = agent_id(&one).await;
    let dana = one.enroll("Dana").await;
    let lena = two.enroll("Lena").await;
    create(&one, &dana, &statement(&one, &dana, &agent)).await;
    create(&two, &lena, &statement(&two, &lena, &agent)).await;
    let plan = one.dry_run(retention("prj_184", 14)).await;
    assert!(plan.get("status").is_none(), "{plan}");
    let plan_id = plan["plan_id"].as_str().unwrap();
    let tom = two.enroll("Tom").await;
    let record = two.record(&tom.token, plan_id).await;
    assert_eq!(record.body["status"], "pending_approval");
    assert_eq!(
        record.body["approvals"]["received"]
            .as_array()
            .unwrap()
            .len(),
        1,
        "{}",
        record.body
    );
    assert_error(&one.execute(&plan).await, "approval_required", 409);
    let decided = approve_by(&two, &plan, &[&tom]).await;
    assert_eq!(decided.body["status"], "approved");
    assert_eq!(one.execute(&plan).await.status, StatusCode::OK);
}

#[tokio::test]
async fn a_standing_approvals_last_use_goes_to_one_plan_when_two_instances_run_at_once() {
    for round in 0..4 {
        let db = shared_database().await;
        let (one, two) = pair(&db.url, EVERY_PLAN).await;
        let agent = agent_id(&one).await;
        let dana = one.enroll("Dana").await;
        let mut s = statement(&one, &dana, &agent);
        s.constraints[0].one_of = Some(vec![json!("prj_184"), json!("prj_200")]);
        s.resources = vec!["projects/*".into()];
        s.max_plans = 1;
        create(&one, &dana, &s).await;
        let mut plans: Vec<Value> = Vec::new();
        for project in ["prj_184", "prj_200"] {
            let plan = one
                .dry_run(json!({"project": project, "retention_days": 14}))
                .await;
            assert_eq!(plan["status"], "approved", "{plan}");
            plans.push(plan);
        }
        let instances = [one.state.clone(), two.state.clone()];
        let token = one.agent.clone();
        let replies: Vec<Reply> = at_once(2, |i| {
            let gw = Gateway::acting_as(instances[i].clone(), token.clone());
            let plan = plans[i].clone();
            async move { gw.execute(&plan).await }
        })
        .await;
        let ran = replies
            .iter()
            .filter(|r| r.status == StatusCode::OK)
            .count();
        assert_eq!(ran, 1, "round {round}: one use, one plan run");
        assert_eq!(listed(&two, &dana, &s.standing_id).await["plans_used"], 1);
    }
}
