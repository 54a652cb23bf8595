//! The demo world's plans the console tests ask for, and what the gateway holds of their
//! decisions.

use countersign_e2e::{Agent, TestGateway};
use serde_json::{json, Value};

pub const REMOVE: &str = "groups.members.remove";
pub const SETTINGS: &str = "projects.settings.update";

pub async fn preview(agent: &Agent, capability: &str, params: Value) -> anyhow::Result<String> {
    let preview = agent.dry_run(capability, params).await?;
    Ok(preview["plan_id"].as_str().unwrap().to_owned())
}

pub async fn contractors_of_support(agent: &Agent) -> anyhow::Result<String> {
    preview(
        agent,
        REMOVE,
        json!({"group": "grp_support", "filter": {"employment": "contractor"}}),
    )
    .await
}

pub async fn retention_plan(agent: &Agent, project: &str, days: u32) -> anyhow::Result<String> {
    preview(agent, SETTINGS, countersign_e2e::retention(project, days)).await
}

pub async fn received(agent: &Agent, plan_id: &str) -> anyhow::Result<Vec<Value>> {
    let record = agent.plan(plan_id).await?;
    Ok(record["approvals"]["received"]
        .as_array()
        .cloned()
        .unwrap_or_default())
}

pub async fn status(agent: &Agent, plan_id: &str) -> anyhow::Result<String> {
    Ok(agent.plan(plan_id).await?["status"]
        .as_str()
        .unwrap_or_default()
        .to_owned())
}

/// Each decision on `plan_id` is signed over the plan's own digest.
pub async fn signed_over_its_digest(
    gateway: &TestGateway,
    agent: &Agent,
    plan_id: &str,
) -> anyhow::Result<usize> {
    let digest = agent.plan(plan_id).await?["plan"]["plan_digest"].clone();
    let decisions = gateway.decisions(plan_id).await?;
    for (_, _, payload) in &decisions {
        assert_eq!(payload["plan_digest"], digest, "{plan_id}: {payload}");
        assert_eq!(payload["plan_id"], plan_id);
    }
    Ok(decisions.len())
}

/// Approves `plan_id`, open in `app`, with the approve button (answering the confirmation if
/// one is asked), and waits until the gateway has it approved.
pub async fn approve_in_window(
    app: &crate::app::App,
    agent: &Agent,
    plan_id: &str,
) -> anyhow::Result<()> {
    app.click("[data-testid='approve']").await?;
    crate::app::answer_if_asked(app, "[data-testid='decision-state'][data-state='answered']")
        .await?;
    crate::app::eventually("the approval", || async {
        Ok(status(agent, plan_id).await? == "approved")
    })
    .await
}
