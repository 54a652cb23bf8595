//! MCP 2026-07-28 requests as a client sends them, one POST each: a task is its agent's alone
//! and follows its plan, cancelling it leaves the plan to its approvers, and a URL elicitation
//! is asked for once per plan, its retry answered for that plan and no other.

use crate::common::{approve_by, assert_error, retention, Gateway};
use axum::body::Body;
use axum::http::Request;
use countersign_engine::accounts;
use serde_json::{json, Value};

const SETTINGS: &str = "projects.settings.update";

fn tasks() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
}

fn url_elicitation() -> Value {
    json!({"elicitation": {"url": {}}})
}

/// `method` with `params` at 2026-07-28 as `token`, from a client declaring `capabilities`: the
/// JSON-RPC answer.
async fn modern(
    gw: &Gateway,
    token: &str,
    method: &str,
    params: Value,
    capabilities: Value,
) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    let name = params["name"]
        .as_str()
        .or(params["taskId"].as_str())
        .unwrap_or("");
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": method, "params": params});
    let request = Request::post("/mcp")
        .header("host", "gateway.example")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header("mcp-name", name)
        .header("authorization", format!("Bearer {token}"))
        .body(Body::from(body.to_string()))
        .unwrap();
    gw.send(request).await.body
}

async fn call(gw: &Gateway, token: &str, days: u32, capabilities: Value) -> Value {
    let params = json!({"name": SETTINGS, "arguments": retention("prj_184", days)});
    modern(gw, token, "tools/call", params, capabilities).await["result"].clone()
}

async fn task(gw: &Gateway, token: &str, method: &str, task_id: &str) -> Value {
    modern(gw, token, method, json!({"taskId": task_id}), tasks()).await
}

async fn plan_status(gw: &Gateway, plan_id: &str) -> String {
    sqlx::query_scalar("SELECT status FROM plans WHERE id = $1")
        .bind(plan_id)
        .fetch_one(gw.state.store.pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn a_task_is_its_agents_alone_and_ends_as_its_plan_does() {
    let gw = Gateway::new().await;
    let created = call(&gw, &gw.agent, 14, tasks()).await;
    assert_eq!(created["resultType"], "task", "{created}");
    assert_eq!(created["status"], "working");
    let task_id = created["taskId"].as_str().unwrap();
    assert!(created["statusMessage"]
        .as_str()
        .unwrap()
        .starts_with(&format!("Plan {task_id} waits on 1 approver;")));

    // Another agent's task is no task to it; a client that declared no tasks is told it must.
    let (_, other) = accounts::add_agent(&gw.state.store, "other", Some("usr_lead"))
        .await
        .unwrap();
    for method in ["tasks/get", "tasks/cancel"] {
        let refused = task(&gw, &other, method, task_id).await;
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        assert_eq!(
            refused["error"]["message"],
            format!("There is no task {task_id}.")
        );
    }
    let params = json!({"taskId": task_id});
    let undeclared = modern(&gw, &gw.agent, "tasks/get", params, json!({})).await;
    assert_eq!(undeclared["error"]["code"], -32021, "{undeclared}");
    let waiting = task(&gw, &gw.agent, "tasks/get", task_id).await["result"].clone();
    assert_eq!(waiting["status"], "working", "{waiting}");
    assert_eq!(waiting["statusMessage"], created["statusMessage"]);
    assert_eq!(waiting["pollIntervalMs"], 2000);
    assert_eq!(plan_status(&gw, task_id).await, "pending_approval");

    // Approved: two looks at once run the plan once, and every look reads the same answer.
    let approver = gw.enroll("Dana").await;
    let plan = gw.record(&gw.agent, task_id).await.body["plan"].clone();
    approve_by(&gw, &plan, &[&approver]).await;
    let (done, twin) = tokio::join!(
        task(&gw, &gw.agent, "tasks/get", task_id),
        task(&gw, &gw.agent, "tasks/get", task_id)
    );
    let done = done["result"].clone();
    assert_eq!(done["status"], "completed", "{done}");
    let envelope = &done["result"]["structuredContent"];
    assert_eq!(envelope["success"], true, "{done}");
    assert_eq!(envelope["metadata"]["plan_id"], task_id);
    assert_eq!(twin["result"]["result"], done["result"], "{twin}");
    let again = task(&gw, &gw.agent, "tasks/get", task_id).await["result"].clone();
    assert_eq!(again["result"], done["result"]);
    assert_eq!(plan_status(&gw, task_id).await, "executed");
    let runs = "SELECT COUNT(*) FROM execution_audit WHERE plan_id = $1";
    assert_eq!(gw.count(runs, task_id).await, 1);
    let late = task(&gw, &gw.agent, "tasks/cancel", task_id).await;
    assert_eq!(late["error"]["code"], -32602, "{late}");
    assert!(late["error"]["message"]
        .as_str()
        .unwrap()
        .contains("has ended (its plan is executed)"));

    // Cancelled: the task ends, the plan waits on; a second cancel keeps the first one's time.
    let second = call(&gw, &gw.agent, 21, tasks()).await;
    let second_id = second["taskId"].as_str().unwrap();
    let ack = task(&gw, &gw.agent, "tasks/cancel", second_id).await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    let cancelled = task(&gw, &gw.agent, "tasks/get", second_id).await["result"].clone();
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    let message = cancelled["statusMessage"].as_str().unwrap();
    assert!(
        message.contains(&format!("did not cancel plan {second_id}"))
            && message.contains("a person may still decide it"),
        "{message}"
    );
    task(&gw, &gw.agent, "tasks/cancel", second_id).await;
    let still = task(&gw, &gw.agent, "tasks/get", second_id).await["result"].clone();
    assert_eq!(still["lastUpdatedAt"], cancelled["lastUpdatedAt"]);
    assert_eq!(plan_status(&gw, second_id).await, "pending_approval");
    // A person still decides it, and the cancelled task does not run it.
    let plan = gw.record(&gw.agent, second_id).await.body["plan"].clone();
    approve_by(&gw, &plan, &[&approver]).await;
    let after = task(&gw, &gw.agent, "tasks/get", second_id).await["result"].clone();
    assert_eq!(after["status"], "cancelled");
    assert_eq!(plan_status(&gw, second_id).await, "approved");
    // Not even a look that read the task before the cancel landed: the task's own execution asks
    // again under the writer.
    let body = json!({"plan_id": second_id, "idempotency_key": format!("mcp-task:{second_id}")});
    let late = gw.invoke_as(&gw.agent, SETTINGS, body).await;
    assert_error(&late, "plan_not_pending", 409);
    assert_eq!(late.body["error"]["details"]["task_cancelled"], true);
    assert_eq!(plan_status(&gw, second_id).await, "approved");
}

#[tokio::test]
async fn the_plans_link_is_asked_for_once_and_the_retry_answers_for_that_plan() {
    let gw = Gateway::new().await;
    let first = call(&gw, &gw.agent, 14, url_elicitation()).await;
    assert_eq!(first["resultType"], "input_required", "{first}");
    let plan_id = first["requestState"].as_str().unwrap();
    let asked = &first["inputRequests"]["countersign_open_plan"];
    assert_eq!(asked["method"], "elicitation/create", "{first}");
    assert_eq!(asked["params"]["mode"], "url");
    assert_eq!(
        asked["params"]["url"],
        format!("countersign://plan/{plan_id}")
    );
    let message = asked["params"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("projects.settings.update: Change retention_days from 30 to 14"),
        "{message}"
    );
    let plans = "SELECT COUNT(*) FROM plans WHERE capability_id = $1";
    let before = gw.count(plans, SETTINGS).await;

    // The user declined: the retry answers for the same plan, which still waits.
    let retry = |arguments: Value, state: &str| {
        json!({"name": SETTINGS, "arguments": arguments, "requestState": state,
               "inputResponses": {"countersign_open_plan": {"action": "decline"}}})
    };
    let again = modern(
        &gw,
        &gw.agent,
        "tools/call",
        retry(retention("prj_184", 14), plan_id),
        url_elicitation(),
    )
    .await;
    let again = &again["result"];
    assert_eq!(
        again["structuredContent"]["status"], "pending_approval",
        "{again}"
    );
    assert_eq!(again["structuredContent"]["plan_id"], plan_id);
    assert_eq!(gw.count(plans, SETTINGS).await, before, "no second plan");

    // A request state that names the plan of other params, or of another agent, is refused.
    let other = modern(
        &gw,
        &gw.agent,
        "tools/call",
        retry(retention("prj_184", 21), plan_id),
        url_elicitation(),
    )
    .await;
    assert_eq!(other["result"]["isError"], true, "{other}");
    assert_eq!(
        other["result"]["structuredContent"]["error"]["code"],
        "validation_error"
    );
    let (_, stranger) = accounts::add_agent(&gw.state.store, "other", Some("usr_lead"))
        .await
        .unwrap();
    let theirs = modern(
        &gw,
        &stranger,
        "tools/call",
        retry(retention("prj_184", 14), plan_id),
        url_elicitation(),
    )
    .await;
    assert_eq!(
        theirs["result"]["structuredContent"]["error"]["code"], "not_found",
        "{theirs}"
    );

    // Approved between the two rounds: the retry says so, as countersign_wait would.
    let plan = gw.record(&gw.agent, plan_id).await.body["plan"].clone();
    let approver = gw.enroll("Dana").await;
    approve_by(&gw, &plan, &[&approver]).await;
    let late = retry(retention("prj_184", 14), plan_id);
    let late = modern(&gw, &gw.agent, "tools/call", late, url_elicitation()).await;
    assert_eq!(
        late["result"]["structuredContent"]["status"], "approved",
        "{late}"
    );

    // A client that declares both: the link first, then the task on the retry.
    let both =
        json!({"elicitation": {"url": {}}, "extensions": {"io.modelcontextprotocol/tasks": {}}});
    let first = call(&gw, &gw.agent, 21, both.clone()).await;
    let plan_id = first["requestState"].as_str().unwrap();
    let retried = modern(
        &gw,
        &gw.agent,
        "tools/call",
        retry(retention("prj_184", 21), plan_id),
        both,
    )
    .await;
    assert_eq!(retried["result"]["resultType"], "task", "{retried}");
    assert_eq!(retried["result"]["taskId"], plan_id);
}

#[tokio::test]
async fn a_plan_is_a_task_only_if_a_task_was_answered_for_it_and_shows_how_it_ran_elsewhere() {
    let gw = Gateway::new().await;
    let approver = gw.enroll("Dana").await;
    // A plan made over the HTTP API, approved: no task was answered for it, so none runs it.
    let plan = gw
        .approved_by(SETTINGS, retention("prj_184", 14), &[&approver])
        .await;
    let plan_id = plan["plan_id"].as_str().unwrap();
    let none = task(&gw, &gw.agent, "tasks/get", plan_id).await;
    assert_eq!(
        none["error"]["message"],
        format!("There is no task {plan_id}."),
        "{none}"
    );
    assert_eq!(plan_status(&gw, plan_id).await, "approved");

    // A task's plan run by countersign_execute: the task completes with what that call answered.
    let created = call(&gw, &gw.agent, 21, tasks()).await;
    let task_id = created["taskId"].as_str().unwrap();
    let plan = gw.record(&gw.agent, task_id).await.body["plan"].clone();
    approve_by(&gw, &plan, &[&approver]).await;
    let params = json!({"name": "countersign_execute", "arguments": {"plan_id": task_id}});
    let executed = modern(&gw, &gw.agent, "tools/call", params, json!({})).await;
    assert_eq!(
        executed["result"]["structuredContent"]["success"], true,
        "{executed}"
    );
    let done = task(&gw, &gw.agent, "tasks/get", task_id).await["result"].clone();
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["isError"], false, "{done}");
    assert_eq!(
        done["result"]["structuredContent"],
        executed["result"]["structuredContent"]
    );
    let runs = "SELECT COUNT(*) FROM execution_audit WHERE plan_id = $1";
    assert_eq!(gw.count(runs, task_id).await, 1);

    // Rejected while its task waited: the reason, and the task has ended.
    let created = call(&gw, &gw.agent, 30, tasks()).await;
    let task_id = created["taskId"].as_str().unwrap();
    let plan = gw.record(&gw.agent, task_id).await.body["plan"].clone();
    let mut reject = approver.statement(&gw, &plan);
    reject.decision = countersign_proto::decision::Decision::Reject;
    reject.reason = Some("Too short".into());
    let sent = approver.send(&gw, task_id, &approver.sign(&reject)).await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    let done = task(&gw, &gw.agent, "tasks/get", task_id).await["result"].clone();
    let error = &done["result"]["structuredContent"]["error"];
    assert_eq!(error["code"], "plan_not_pending", "{done}");
    assert_eq!(error["details"]["rejections"][0]["reason"], "Too short");

    // Two approved tasks on one project: the first runs, and what the second read has moved.
    let mut ids = Vec::new();
    for days in [40, 50] {
        let created = call(&gw, &gw.agent, days, tasks()).await;
        let task_id = created["taskId"].as_str().unwrap().to_owned();
        let plan = gw.record(&gw.agent, &task_id).await.body["plan"].clone();
        approve_by(&gw, &plan, &[&approver]).await;
        ids.push(task_id);
    }
    let first = task(&gw, &gw.agent, "tasks/get", &ids[0]).await["result"].clone();
    assert_eq!(
        first["result"]["structuredContent"]["success"], true,
        "{first}"
    );
    let second = task(&gw, &gw.agent, "tasks/get", &ids[1]).await["result"].clone();
    assert_eq!(second["status"], "completed", "{second}");
    let error = &second["result"]["structuredContent"]["error"];
    assert_eq!(error["code"], "plan_stale", "{second}");
    assert_eq!(error["details"]["moved"][0]["resource"], "projects/prj_184");
    let record = gw.record(&gw.agent, &ids[1]).await;
    assert_eq!(record.body["status"], "stale");
}
