//! Amend and re-preview (docs/amend.md): an approver changes a plan's request; the gateway checks
//! it against the schema, the bounds of a dry run and the agent's authorization and previews it
//! as the successor, which names who changed what; the agent sees it over MCP. Whoever writes the
//! request does not approve it: the amender's approval, by hand or standing, does not count.

use crate::common::{approve_by, assert_error, grant, retention, Gateway, Reply, GRANT};
use axum::http::StatusCode;
use countersign_embedded::default_registry;
use countersign_engine::accounts;
use countersign_engine::accounts::scopes::Scope;
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
async fn an_amended_request_is_previewed_as_the_successor_and_approved_by_someone_else() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let plan = gw.dry_run(retention("prj_184", 7)).await;
    let reply = amend(&gw, &dana.token, &plan, retention("prj_184", 14)).await;
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

    // The amender wrote the successor's request: their approval does not count, and the
    // record tells them why.
    let next = &successor["plan"];
    let next_id = next["plan_id"].as_str().unwrap();
    assert_eq!(successor["eligibility"]["eligible"], false);
    assert_eq!(successor["approvals"]["requested_by"], dana.id.as_str());
    let why = successor["eligibility"]["reason"].as_str().unwrap();
    assert!(why.contains("You wrote this request"), "{why}");
    let statement = dana.statement(&gw, next);
    dana.refused(&gw, next_id, &statement, "not_eligible", 403)
        .await;
    assert_error(&gw.execute(next).await, "approval_required", 409);
    let lena = gw.enroll("Lena").await;
    assert_eq!(
        gw.record(&lena.token, next_id).await.body["eligibility"]["eligible"],
        true
    );
    let decided = approve_by(&gw, next, &[&lena]).await;
    assert_eq!(decided.body["status"], "approved");
    assert_eq!(gw.execute(next).await.status, StatusCode::OK);
}

#[tokio::test]
async fn the_amenders_standing_approval_does_not_count_for_what_they_wrote() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let agent = crate::standing::agent_id(&gw).await;
    // Dana's standing approval covers retention of at least 7 days on prj_184.
    let covering = crate::standing::statement(&gw, &dana, &agent);
    crate::standing::create(&gw, &dana, &covering).await;
    let plan = gw.dry_run(retention("prj_184", 3)).await;
    assert!(plan.get("status").is_none(), "{plan}");
    let reply = amend(&gw, &dana.token, &plan, retention("prj_184", 14)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["status"], "pending_approval", "{}", reply.body);
    assert_eq!(reply.body["approvals"]["received"], json!([]));
    // Another approver's amendment into the same request is covered by Dana's.
    let lena = gw.enroll("Lena").await;
    let other = gw.dry_run(retention("prj_184", 2)).await;
    let by_lena = amend(&gw, &lena.token, &other, retention("prj_184", 14)).await;
    assert_eq!(by_lena.body["status"], "approved", "{}", by_lena.body);
}

#[tokio::test]
async fn nobody_amends_a_request_into_a_grant_to_themselves() {
    let gw = Gateway::new().await;
    let sam = gw.enroll_as("Sam", "usr_92").await;
    let plan = gw
        .preview(GRANT, grant("prj_421", "usr_38", "editor"))
        .await;
    let reply = amend(&gw, &sam.token, &plan, grant("prj_421", "usr_92", "editor")).await;
    assert_error(&reply, "not_eligible", 403);
    let message = reply.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("grantee"), "{message}");
    // Nothing of it was kept: the plan waits as it was.
    let record = gw
        .record(&sam.token, plan["plan_id"].as_str().unwrap())
        .await;
    assert_eq!(record.body["status"], "pending_approval");
    assert_eq!(record.body["superseded_by"], Value::Null);
}

#[tokio::test]
async fn an_amendment_is_held_to_the_bounds_of_a_dry_run() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let plan = gw.dry_run(retention("prj_184", 7)).await;
    let mut deep = json!(1);
    for _ in 0..12 {
        deep = json!([deep]);
    }
    let nested = amend(
        &gw,
        &dana.token,
        &plan,
        json!({"project": "prj_184", "retention_days": 14, "note": deep}),
    )
    .await;
    assert_error(&nested, "validation_error", 422);
    let message = nested.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("nest at most"), "{message}");
    let long = amend(
        &gw,
        &dana.token,
        &plan,
        json!({"project": "x".repeat(5000), "retention_days": 14}),
    )
    .await;
    assert_error(&long, "validation_error", 422);
    let pointer = &long.body["error"]["details"]["violations"][0]["schema_pointer"];
    assert_eq!(pointer, "/params/project", "{}", long.body);
}

#[tokio::test]
async fn over_mcp_wait_answers_with_the_amended_plan_and_who_changed_what() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let plan = gw.dry_run(retention("prj_184", 7)).await;
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
    // The wait is open (its slot taken, its answer not given) before the amendment.
    while gw.state.waits.open("agt_ops") == 0 {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(
        !waiting.is_finished(),
        "the wait was open before the amendment"
    );
    let reply = amend(&gw, &dana.token, &plan, retention("prj_184", 14)).await;
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
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let scope: Vec<Scope> = vec![default_registry()
        .scope("projects.settings.update:prj_184")
        .unwrap()];
    let (_, token) = accounts::add_scoped_agent(&gw.state.store, "scoped", None, &scope)
        .await
        .unwrap();
    let scoped = Gateway::acting_as(gw.state.clone(), token);
    let plan = scoped.dry_run(retention("prj_184", 60)).await;
    // Narrower is fine; another project is not the agent's to touch.
    let narrower = amend(&gw, &dana.token, &plan, retention("prj_184", 14)).await;
    assert_eq!(narrower.status, StatusCode::OK, "{}", narrower.body);
    let successor = &narrower.body["plan"];
    let elsewhere = amend(&gw, &dana.token, successor, retention("prj_200", 14)).await;
    assert_error(&elsewhere, "forbidden", 403);
    let wrong = amend(
        &gw,
        &dana.token,
        successor,
        json!({"project": "prj_184", "retention_days": "x"}),
    )
    .await;
    assert_error(&wrong, "validation_error", 422);
    let same = amend(&gw, &dana.token, successor, retention("prj_184", 14)).await;
    assert_error(&same, "validation_error", 422);
    // Nothing of the refused ones was stored: the successor still stands.
    let record = gw
        .record(&dana.token, successor["plan_id"].as_str().unwrap())
        .await;
    assert_eq!(record.body["status"], "pending_approval");
    // The agent cannot amend its own plan.
    let by_agent = amend(&gw, &scoped.agent, successor, retention("prj_184", 20)).await;
    assert_error(&by_agent, "forbidden", 403);
}

#[tokio::test]
async fn over_mcp_the_amenders_own_approval_leaves_the_agent_waiting() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let plan = gw.dry_run(retention("prj_184", 7)).await;
    let reply = amend(&gw, &dana.token, &plan, retention("prj_184", 14)).await;
    let next = reply.body["plan"].clone();
    let next_id = next["plan_id"].as_str().unwrap().to_owned();
    let (state, token) = (gw.state.clone(), gw.agent.clone());
    let waited_on = next_id.clone();
    let waiting = tokio::spawn(async move {
        let gw = Gateway::acting_as(state, token);
        gw.tool(
            &gw.agent,
            "countersign_wait",
            json!({"plan_id": waited_on, "timeout_seconds": 30}),
        )
        .await
    });
    let statement = dana.statement(&gw, &next);
    dana.refused(&gw, &next_id, &statement, "not_eligible", 403)
        .await;
    let lena = gw.enroll("Lena").await;
    approve_by(&gw, &next, &[&lena]).await;
    // The wait ends on the approval that counts, which is Lena's alone.
    let answer = waiting.await.unwrap();
    let result = &answer["result"]["structuredContent"];
    assert_eq!(result["status"], "approved", "{answer}");
    let received = result["approvals"]["received"].as_array().unwrap();
    assert_eq!(received.len(), 1, "{answer}");
    assert_eq!(received[0]["approver_id"], lena.id.as_str());
    let tool = gw
        .tool(
            &gw.agent,
            "countersign_execute",
            json!({"plan_id": next_id}),
        )
        .await;
    assert_ne!(tool["result"]["isError"], true, "{tool}");
}
