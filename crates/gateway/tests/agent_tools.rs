//! `agent.tool_call` (docs/agent-hook.md): a coding agent's tool call previewed from what its
//! hook sent, approved by a signed decision, released (never run) at invoke, and stale when a
//! file the agent observes at release is not the one previewed.

use countersign_agent_tools::{resource, revision, ID};
use serde_json::{json, Value};

use countersign_policy::Policy;

use crate::common::{approve_by, assert_error, Gateway};

const CWD: &str = "/home/dana/project";
const FILE: &str = "/home/dana/project/src/lib.rs";

fn edit(before: &str) -> Value {
    json!({"tool_name": "Edit", "cwd": CWD,
           "tool_input": {"file_path": "src/lib.rs", "old_string": "fn a()", "new_string": "fn b()"},
           "files": {FILE: before}})
}

fn bash(command: &str) -> Value {
    json!({"tool_name": "Bash", "cwd": CWD, "tool_input": {"command": command}})
}

fn observed(text: Option<&str>) -> Value {
    json!({ resource(FILE): revision(text) })
}

async fn release(gw: &Gateway, plan: &Value, observed: Option<Value>) -> crate::common::Reply {
    let mut body = json!({"plan_id": plan["plan_id"]});
    if let Some(observed) = observed {
        body["observed"] = observed;
    }
    gw.invoke_as(&gw.agent, ID, body).await
}

#[tokio::test]
async fn an_edit_shows_the_file_before_and_after_and_is_released_once_approved() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let text = "fn a() {}\n";
    let plan = gw.preview(ID, edit(text)).await;
    let effect = &plan["effects"][0];
    assert_eq!(effect["type"], "agent_file_write", "{plan}");
    assert_eq!(effect["resource"], resource(FILE));
    assert_eq!(effect["changes"][0]["before"], text);
    assert_eq!(effect["changes"][0]["after"], "fn b() {}\n");
    assert_eq!(
        plan["read_revisions"],
        json!([{"resource": resource(FILE), "revision": revision(Some(text))}])
    );
    // Under the built-in policy every call waits for a person.
    assert_eq!(plan["would_require_approval"], true);
    let early = release(&gw, &plan, Some(observed(Some(text)))).await;
    assert_error(&early, "approval_required", 409);
    approve_by(&gw, &plan, &[&dana]).await;
    let released = release(&gw, &plan, Some(observed(Some(text)))).await;
    assert_eq!(released.status, 200, "{}", released.body);
    assert_eq!(released.body["metadata"]["release"], "allow");
    assert_eq!(released.body["metadata"]["plan_id"], plan["plan_id"]);
    assert_eq!(
        released.body["metadata"]["plan_digest"],
        plan["plan_digest"]
    );
    let again = release(&gw, &plan, Some(observed(Some(text)))).await;
    assert_error(&again, "plan_already_executed", 409);
}

#[tokio::test]
async fn a_file_changed_since_the_preview_makes_the_plan_stale_for_its_approvers_too() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let plan = gw.preview(ID, edit("fn a() {}\n")).await;
    approve_by(&gw, &plan, &[&dana]).await;
    // A decision is judged without the agent's files: nothing there says they moved.
    let plan_id = plan["plan_id"].as_str().unwrap();
    let record = gw.record(&dana.token, plan_id).await;
    assert_eq!(record.body["status"], "approved", "{}", record.body);

    // Released without saying what the agent sees: the file is not observed.
    let blind = release(&gw, &plan, None).await;
    assert_error(&blind, "plan_stale", 409);
    assert_eq!(
        blind.body["error"]["details"]["moved"][0]["current"],
        "not observed"
    );
    let record = gw.record(&dana.token, plan_id).await;
    assert_eq!(record.body["status"], "stale", "{}", record.body);
    // Stale is final for this plan: the right file now does not bring it back.
    let late = release(&gw, &plan, Some(observed(Some("fn a() {}\n")))).await;
    assert_error(&late, "approval_required", 409);
}

#[tokio::test]
async fn a_file_the_agent_sees_changed_is_refused_and_recorded_stale() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let plan = gw.preview(ID, edit("fn a() {}\n")).await;
    approve_by(&gw, &plan, &[&dana]).await;
    let moved = release(&gw, &plan, Some(observed(Some("fn a() { changed }\n")))).await;
    assert_error(&moved, "plan_stale", 409);
    let record = gw
        .record(&dana.token, plan["plan_id"].as_str().unwrap())
        .await;
    assert_eq!(record.body["status"], "stale", "{}", record.body);
}

fn coding_agent_policy() -> Policy {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/policy-coding-agent"
    );
    Policy::load(std::path::Path::new(dir)).unwrap()
}

#[test]
fn the_coding_agent_policys_own_tests_pass() {
    let outcomes = coding_agent_policy().run_tests();
    assert!(outcomes.len() >= 6);
    assert!(outcomes.iter().all(|o| o.passed), "{outcomes:?}");
}

#[tokio::test]
async fn a_call_the_policy_lets_through_is_released_at_once_with_its_plan_kept() {
    let gw = Gateway::with_policy(coding_agent_policy()).await;
    let reads = gw.preview(ID, bash("git status")).await;
    assert_eq!(reads["would_require_approval"], false, "{reads}");
    let released = release(&gw, &reads, Some(json!({}))).await;
    assert_eq!(
        released.body["metadata"]["release"], "allow",
        "{}",
        released.body
    );
    let hidden = gw.preview(ID, bash("git status; rm -rf ~")).await;
    assert_eq!(hidden["would_require_approval"], true, "{hidden}");
}

#[tokio::test]
async fn what_a_command_visibly_does_decides_its_flags() {
    let gw = Gateway::new().await;

    let push = gw
        .preview(
            ID,
            json!({"tool_name": "Bash", "cwd": CWD,
        "tool_input": {"command": "git push --force origin main", "description": "ship it"}}),
        )
        .await;
    let effect = &push["effects"][0];
    assert_eq!(
        (effect["reversible"].clone(), effect["external"].clone()),
        (json!(false), json!(true))
    );
    assert!(effect["description"]
        .as_str()
        .unwrap()
        .contains("the agent says: ship it"));
    assert_eq!(push["would_require_approval"], true);

    let mcp = gw
        .preview(
            ID,
            json!({"tool_name": "mcp__github__create_issue", "cwd": CWD,
        "tool_input": {"title": "x"}}),
        )
        .await;
    assert_eq!(
        mcp["assumptions"][0]["description"],
        countersign_agent_tools::NO_PREVIEW
    );
    assert!(mcp["effects"][0]["description"]
        .as_str()
        .unwrap()
        .contains("MCP server github"));
    assert_eq!(mcp["would_require_approval"], true);
}

#[tokio::test]
async fn a_file_tool_without_the_files_text_is_blocked() {
    let gw = Gateway::new().await;
    let mut params = edit("x");
    params["files"] = json!({});
    let plan = gw.preview(ID, params).await;
    assert_eq!(plan["executable"], false);
    assert_eq!(plan["validation"][0]["code"], "file_not_sent", "{plan}");
    let mut params = edit("fn a() fn a()");
    params["tool_input"]["file_path"] = json!(FILE);
    let plan = gw.preview(ID, params).await;
    assert_eq!(plan["validation"][0]["code"], "edit_not_unique", "{plan}");
}

#[tokio::test]
async fn an_mcp_agent_releases_with_what_it_observes() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let text = "fn a() {}\n";
    let plan = gw.preview(ID, edit(text)).await;
    approve_by(&gw, &plan, &[&dana]).await;
    let arguments = json!({"plan_id": plan["plan_id"], "observed": observed(Some(text))});
    let released = gw.tool(&gw.agent, "countersign_execute", arguments).await;
    let result = &released["result"]["structuredContent"];
    assert_eq!(result["metadata"]["release"], "allow", "{released}");
}
