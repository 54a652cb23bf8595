//! What an agent may touch: its scopes, and what the person it acts for may do in the demo world.
//! A refusal is `forbidden` before anything is evaluated, the same for an existing and a missing
//! resource; subject pages and MCP tools answer the same way.

use crate::common::{assert_error, retention, Gateway, Reply};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use countersign_embedded::default_registry;
use countersign_engine::accounts;
use countersign_engine::accounts::scopes::Scope;
use serde_json::{json, Value};

const SETTINGS: &str = "projects.settings.update";
const REMOVE: &str = "groups.members.remove";

async fn scoped_agent(gw: &Gateway, name: &str, person: Option<&str>, scopes: &[&str]) -> String {
    let scopes: Vec<Scope> = scopes
        .iter()
        .map(|s| default_registry().scope(s).unwrap())
        .collect();
    accounts::add_scoped_agent(&gw.state.store, name, person, &scopes)
        .await
        .unwrap()
        .1
}

async fn dry_run(gw: &Gateway, token: &str, capability: &str, params: Value) -> Reply {
    gw.call(
        "POST",
        &format!("/v1/capabilities/{capability}/dry_run"),
        Some(token),
        Some(json!({ "params": params })),
    )
    .await
}

async fn plan_count(gw: &Gateway) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM plans")
        .fetch_one(gw.state.store.pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn a_scoped_agent_previews_only_its_capabilities_and_resources() {
    let gw = Gateway::new().await;
    let token = scoped_agent(
        &gw,
        "retention",
        Some("usr_lead"),
        &["projects.settings.update:prj_184", "storage.quota.update"],
    )
    .await;
    let ok = dry_run(&gw, &token, SETTINGS, retention("prj_184", 14)).await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.body);
    let quota = dry_run(
        &gw,
        &token,
        "storage.quota.update",
        json!({"quota": "sq_finance", "quota_bytes": 600_000_000}),
    )
    .await;
    assert_eq!(quota.status, StatusCode::OK, "{}", quota.body);

    let before = plan_count(&gw).await;
    let other_project = dry_run(&gw, &token, SETTINGS, retention("prj_200", 14)).await;
    assert_error(&other_project, "forbidden", 403);
    let other_capability = dry_run(
        &gw,
        &token,
        REMOVE,
        json!({"group": "grp_support", "filter": {"employment": "contractor"}}),
    )
    .await;
    assert_error(&other_capability, "forbidden", 403);
    assert_eq!(
        plan_count(&gw).await,
        before,
        "nothing was evaluated or stored"
    );
}

#[tokio::test]
async fn a_forbidden_preview_says_the_same_for_existing_and_missing_resources() {
    let gw = Gateway::new().await;
    let token = scoped_agent(&gw, "narrow", None, &["groups.members.remove:grp_support"]).await;
    let filter = json!({"employment": "contractor"});
    let existing = dry_run(
        &gw,
        &token,
        REMOVE,
        json!({"group": "grp_all_staff", "filter": filter}),
    )
    .await;
    let missing = dry_run(
        &gw,
        &token,
        REMOVE,
        json!({"group": "grp_nowhere", "filter": filter}),
    )
    .await;
    assert_error(&existing, "forbidden", 403);
    assert_eq!(existing.body["error"], missing.body["error"]);
    let text = existing.body.to_string();
    assert!(
        !text.contains("100000") && !text.contains("All staff"),
        "{text}"
    );
}

#[tokio::test]
async fn an_agent_without_scopes_keeps_full_access() {
    let gw = Gateway::new().await;
    let plan = gw
        .preview(
            REMOVE,
            json!({"group": "grp_support", "filter": {"employment": "contractor"}}),
        )
        .await;
    assert_eq!(plan["valid"], true);
}

#[tokio::test]
async fn a_scoped_agent_cannot_invoke_outside_its_scopes() {
    let gw = Gateway::new().await;
    let token = scoped_agent(
        &gw,
        "uploader",
        None,
        &["documents.document.upload:prj_421"],
    )
    .await;
    let upload = |project: &str| {
        json!({"params": {"project": project, "filename": "a.md", "mime_type": "text/markdown",
                          "size_bytes": 10}})
    };
    let ok = gw
        .invoke_as(&token, "documents.document.upload", upload("prj_421"))
        .await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.body);
    let refused = gw
        .invoke_as(&token, "documents.document.upload", upload("prj_420"))
        .await;
    assert_error(&refused, "forbidden", 403);
    let guard = gw
        .invoke_as(
            &token,
            "wallet.agent_budget.guard.check",
            json!({"params": {"estimated_cost_credits": 1}}),
        )
        .await;
    assert_error(&guard, "forbidden", 403);
}

#[tokio::test]
async fn on_behalf_of_follows_the_persons_employment_and_roles() {
    let gw = Gateway::new().await;
    let settings = retention("prj_184", 14);
    // usr_05 is a contractor with no project role; usr_50 is suspended; usr_ghost is nobody.
    for person in ["usr_05", "usr_50", "usr_ghost"] {
        let token = scoped_agent(&gw, &format!("for_{}", &person[4..]), Some(person), &[]).await;
        let reply = dry_run(&gw, &token, SETTINGS, settings.clone()).await;
        assert_error(&reply, "forbidden", 403);
    }
    let contractor = scoped_agent(&gw, "contractor", Some("usr_05"), &[]).await;
    let group = dry_run(
        &gw,
        &contractor,
        REMOVE,
        json!({"group": "grp_support", "filter": {"users": ["usr_01"]}}),
    )
    .await;
    assert_error(&group, "forbidden", 403);
    sqlx::query(
        "INSERT INTO project_members (project_id, user_id, role) VALUES ('prj_184', 'usr_05', 'editor')",
    )
    .execute(gw.state.store.pool())
    .await
    .unwrap();
    let with_role = dry_run(&gw, &contractor, SETTINGS, settings).await;
    assert_eq!(with_role.status, StatusCode::OK, "{}", with_role.body);
    let employee = scoped_agent(&gw, "employee", Some("usr_92"), &[]).await;
    let reply = dry_run(&gw, &employee, SETTINGS, retention("prj_311", 20)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
}

/// What an agent is told about a plan id: the HTTP status and error, or the MCP tool's error,
/// without the trace id that differs on every answer.
fn told(reply: &Reply) -> (u16, Value) {
    let mut error = reply.body["error"].clone();
    if let Some(error) = error.as_object_mut() {
        error.remove("trace_id");
    }
    (reply.status.as_u16(), error)
}

fn tool_told(answer: &Value) -> Value {
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    answer["result"]["structuredContent"]["error"].clone()
}

/// Every route that takes a plan id answers another agent's plan exactly as a plan that is not
/// there: an agent learns nothing of what other agents asked for, not even that it exists.
#[tokio::test]
async fn another_agents_plan_answers_as_a_missing_one_on_every_route() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let plan = gw
        .approved_by(
            REMOVE,
            json!({"group": "grp_support", "filter": {"employment": "contractor"}}),
            &[&dana],
        )
        .await;
    let theirs = plan["plan_id"].as_str().unwrap();
    // Same principal, same scopes: only the agent differs.
    let (_, other) = accounts::add_agent(&gw.state.store, "other", Some("usr_lead"))
        .await
        .unwrap();
    let before = gw.snapshot().await;
    for missing in ["plan_0000000000000000", "plan_missing"] {
        let routes = |id: &str| {
            [
                ("GET", format!("/v1/plans/{id}"), None),
                (
                    "GET",
                    format!("/v1/plans/{id}/effects/eff_1/subjects"),
                    None,
                ),
                ("POST", format!("/v1/plans/{id}/refresh"), None),
                ("GET", format!("/v1/audit?plan_id={id}"), None),
                (
                    "POST",
                    format!("/v1/capabilities/{REMOVE}/invoke"),
                    Some(json!({"plan_id": id})),
                ),
            ]
        };
        for ((method, to_theirs, body), (_, to_missing, missing_body)) in
            routes(theirs).into_iter().zip(routes(missing))
        {
            let a = gw.call(method, &to_theirs, Some(&other), body).await;
            let b = gw
                .call(method, &to_missing, Some(&other), missing_body)
                .await;
            let (status, error) = told(&a);
            assert_eq!(status, 404, "{to_theirs}: {}", a.body);
            assert_eq!((status, error), told(&b), "{to_theirs}");
        }
        for tool in ["countersign_execute", "countersign_wait"] {
            let arguments = |id: &str| match tool {
                "countersign_wait" => json!({"plan_id": id, "timeout_seconds": 1}),
                _ => json!({"plan_id": id}),
            };
            let a = tool_told(&gw.tool(&other, tool, arguments(theirs)).await);
            let b = tool_told(&gw.tool(&other, tool, arguments(missing)).await);
            assert_eq!(a["code"], "not_found", "{tool}: {a}");
            assert_eq!(a, b, "{tool}");
        }
    }
    assert_eq!(gw.snapshot().await, before, "nothing ran");
}

#[tokio::test]
async fn mcp_tools_go_through_the_same_scope_check() {
    let gw = Gateway::new().await;
    let token = scoped_agent(
        &gw,
        "mcp_narrow",
        None,
        &["projects.settings.update:prj_184"],
    )
    .await;
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": REMOVE,
        "arguments": {"group": "grp_support", "filter": {"employment": "contractor"}}}});
    let request = Request::post("/mcp")
        .header("host", "gateway.example")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .header("authorization", format!("Bearer {token}"))
        .body(Body::from(call.to_string()))
        .unwrap();
    let before = plan_count(&gw).await;
    let reply = gw.send(request).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let result = &reply.body["result"];
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(result["structuredContent"]["error"]["code"], "forbidden");
    assert_eq!(plan_count(&gw).await, before);
}

#[test]
fn scopes_name_known_capabilities_and_well_formed_resources() {
    assert!(default_registry()
        .scope("projects.settings.update:prj_184")
        .is_ok());
    assert!(default_registry()
        .scope("projects.settings.update:grp_support")
        .is_err());
    assert!(default_registry().scope("no.such.capability").is_err());
}
