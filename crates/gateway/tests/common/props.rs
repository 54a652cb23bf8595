//! What the property tests share: a runtime per case, raw SQL on a bare world, and how many cases.

use std::collections::BTreeSet;

use axum::http::StatusCode;
use serde_json::{json, Value};

use super::{approve_by, journal_rows, world_diff, Gateway};

/// Cases per property: 256 in `make test`, more under `make soak` (`COUNTERSIGN_PROPERTY_CASES`).
pub fn cases() -> u32 {
    std::env::var("COUNTERSIGN_PROPERTY_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(256)
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

pub async fn exec(gw: &Gateway, sql: &str) {
    sqlx::query(sql)
        .execute(gw.state.store.pool())
        .await
        .unwrap();
}

pub async fn ids(gw: &Gateway, sql: &str) -> BTreeSet<String> {
    let rows: Vec<String> = sqlx::query_scalar(sql)
        .fetch_all(gw.state.store.pool())
        .await
        .unwrap();
    rows.into_iter().collect()
}

/// The subject ids of the effect of type `effect_type`, paged from the gateway; empty without one.
pub async fn subject_ids(gw: &Gateway, plan: &Value, effect_type: &str) -> BTreeSet<String> {
    let effect = plan["effects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == effect_type);
    match effect {
        None => BTreeSet::new(),
        Some(e) => gw
            .all_subjects(
                &gw.agent,
                plan["plan_id"].as_str().unwrap(),
                e["id"].as_str().unwrap(),
                7,
            )
            .await
            .into_iter()
            .collect(),
    }
}

/// Runs a plan as the test agent, approved first by as many approvers as it needs, and holds
/// what it wrote against its journal.
pub async fn run(gw: &Gateway, capability: &str, plan: &Value) {
    if plan["would_require_approval"] == true {
        let plan_id = plan["plan_id"].as_str().unwrap();
        let record = gw.record(&gw.agent, plan_id).await;
        let required = record.body["approvals"]["required"].as_u64().unwrap();
        let mut approvers = Vec::new();
        for n in 0..required {
            approvers.push(gw.enroll(&format!("A{n}")).await);
        }
        approve_by(gw, plan, &approvers.iter().collect::<Vec<_>>()).await;
    }
    let before = world_diff::rows(gw.state.store.pool()).await;
    let reply = gw
        .invoke_as(&gw.agent, capability, json!({"plan_id": plan["plan_id"]}))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let after = world_diff::rows(gw.state.store.pool()).await;
    let auditor = gw.enroll("Auditor").await;
    let plan_id = plan["plan_id"].as_str().unwrap();
    let audit = gw
        .call(
            "GET",
            &format!("/v1/audit?plan_id={plan_id}"),
            Some(&auditor.token),
            None,
        )
        .await;
    let journal = audit.body["executions"][0]["journal"].as_array().unwrap();
    let charged = reply.body["metadata"]["charged"]["amount"]
        .as_str()
        .unwrap();
    journal_rows::assert_nothing_else(plan, journal, &before, &after, charged);
}
