//! Amend and re-preview (docs/amend.md): an approver changes a plan's request; the gateway checks
//! it against the schema and the agent's authorization and previews it as the successor, which
//! names who changed what; the agent sees it over MCP.

use crate::common::{approve_by, assert_error, Gateway, Reply};
use axum::http::StatusCode;
use countersign_embedded::default_registry;
use countersign_engine::accounts;
use countersign_engine::scopes::Scope;
use serde_json::{json, Value};

async fn amend(gw: &Gateway, token: &str, plan: &Value, params: Value) -> Reply {
    let plan_id = plan["plan_id"].as_str().unwrap();
    gw.call(
        "POST",
        &format!("/v1/plans/{plan_id}/amend"),
        Some(token),
        Some(json!({ "params": params })),
    )
    .await
}

#[tokio::test]
async fn an_amended_request_is_previewed_as_the_successor_and_signed_by_its_amender() {
    let gw = Gateway::new().await;
    let dana = gw.enroll("Dana").await;
    let plan = gw
        .dry_run(json!({"project": "prj_184", "retention_days": 7}))
        .await;
    let reply = amend(
        &gw,
        &dana.token,
        &plan,
        json!({"project": "prj_184", "retention_days": 14}),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let successor = &reply.body;
    assert_eq!(successor["supersedes"], plan["plan_id"]);
    assert_eq!(successor["status"], "pending_approval");
    assert_eq!(successor["plan"]["request"]["params"]["retention_days"], 14);
    let amendment = &successor["amendment"];
    assert_eq!(amendment["approver_id"], dana.id.as_str());
    assert_eq!(amendment["amends"], plan["plan_id"]);
    assert_eq!(
        amendment["summary"],
        "Dana changed retention_days from 7 to 14."
    );
    assert_eq!(
        amendment["changes"],
        json!([{"param": "/retention_days", "before": 7, "after": 14}])
    );
    let old = gw
        .record(&dana.token, plan["plan_id"].as_str().unwrap())
        .await;
    assert_eq!(old.body["status"], "superseded");
    assert_eq!(old.body["superseded_by"], successor["plan"]["plan_id"]);

    // The amender signs the successor as one approver among others.
    let next = &successor["plan"];
    let decided = approve_by(&gw, next, &[&dana]).await;
    assert_eq!(
        decided.body["approvals"]["received"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(decided.body["status"], "approved");
    assert_eq!(gw.execute(next).await.status, StatusCode::OK);
}

#[tokio::test]
async fn over_mcp_wait_answers_with_the_amended_plan_and_who_changed_what() {
    let gw = Gateway::new().await;
    let dana = gw.enroll("Dana").await;
    let plan = gw
        .dry_run(json!({"project": "prj_184", "retention_days": 7}))
        .await;
    let plan_id = plan["plan_id"].as_str().unwrap().to_owned();
    let (state, token) = (gw.state.clone(), gw.agent.clone());
    let waiting = tokio::spawn(async move {
        let gw = Gateway::acting_as(state, token);
        gw.tool(
            &gw.agent,
            "countersign_wait",
            json!({"plan_id": plan_id, "timeout_seconds": 30}),
        )
        .await
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let reply = amend(
        &gw,
        &dana.token,
        &plan,
        json!({"project": "prj_184", "retention_days": 14}),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let answer = waiting.await.unwrap();
    let result = &answer["result"];
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("Dana changed retention_days from 7 to 14."),
        "{text}"
    );
    let amended = &result["structuredContent"]["amended_plan"];
    assert_eq!(amended["plan_id"], reply.body["plan"]["plan_id"]);
    assert_eq!(amended["status"], "pending_approval");
    assert_eq!(result["structuredContent"]["status"], "superseded");
}

#[tokio::test]
async fn an_amendment_the_agent_may_not_make_or_the_schema_refuses_is_refused() {
    let gw = Gateway::new().await;
    let dana = gw.enroll("Dana").await;
    let scope: Vec<Scope> = vec![default_registry()
        .scope("projects.settings.update:prj_184")
        .unwrap()];
    let (_, token) = accounts::add_scoped_agent(&gw.state.store, "scoped", None, &scope)
        .await
        .unwrap();
    let scoped = Gateway::acting_as(gw.state.clone(), token);
    let plan = scoped
        .dry_run(json!({"project": "prj_184", "retention_days": 60}))
        .await;
    // Narrower is fine; another project is not the agent's to touch.
    let narrower = amend(
        &gw,
        &dana.token,
        &plan,
        json!({"project": "prj_184", "retention_days": 14}),
    )
    .await;
    assert_eq!(narrower.status, StatusCode::OK, "{}", narrower.body);
    let successor = &narrower.body["plan"];
    let elsewhere = amend(
        &gw,
        &dana.token,
        successor,
        json!({"project": "prj_200", "retention_days": 14}),
    )
    .await;
    assert_error(&elsewhere, "forbidden", 403);
    let wrong = amend(
        &gw,
        &dana.token,
        successor,
        json!({"project": "prj_184", "retention_days": "x"}),
    )
    .await;
    assert_error(&wrong, "validation_error", 422);
    let same = amend(
        &gw,
        &dana.token,
        successor,
        json!({"project": "prj_184", "retention_days": 14}),
    )
    .await;
    assert_error(&same, "validation_error", 422);
    // Nothing of the refused ones was stored: the successor still stands.
    let record = gw
        .record(&dana.token, successor["plan_id"].as_str().unwrap())
        .await;
    assert_eq!(record.body["status"], "pending_approval");
    // The agent cannot amend its own plan.
    let by_agent = amend(
        &gw,
        &scoped.agent,
        successor,
        json!({"project": "prj_184", "retention_days": 20}),
    )
    .await;
    assert_error(&by_agent, "forbidden", 403);
}
