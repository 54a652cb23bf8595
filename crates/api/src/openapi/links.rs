//! OpenAPI links: where an answer's ids lead. A preview's `plan_id` opens the plan, its subjects,
//! audit, refresh, decisions and invoke; the queue's and a plan record's lead to the same, so a
//! client (or a stateful test) can walk from a dry run or the queue to everything about a plan.

use serde_json::{json, Map, Value};

/// Where, in one answer, a plan's parts are.
struct Source {
    /// The operation's path; `*` stands for any one segment.
    path: &'static str,
    method: &'static str,
    plan_id: &'static str,
    agent_id: &'static str,
    /// The first effect.
    effect: Option<&'static str>,
    capability_id: Option<&'static str>,
}

const SOURCES: [Source; 3] = [
    Source {
        path: "/v1/capabilities/*/dry_run",
        method: "post",
        plan_id: "/plan_id",
        agent_id: "/caller/agent_id",
        effect: Some("/effects/0"),
        capability_id: Some("/capability_id"),
    },
    Source {
        path: "/v1/approvals",
        method: "get",
        plan_id: "/items/0/plan_id",
        agent_id: "/items/0/caller/agent_id",
        effect: None,
        capability_id: None,
    },
    Source {
        path: "/v1/plans/{id}",
        method: "get",
        plan_id: "/plan/plan_id",
        agent_id: "/plan/caller/agent_id",
        effect: Some("/plan/effects/0"),
        capability_id: Some("/plan/capability_id"),
    },
];

pub fn apply(api: &mut Value) {
    for source in &SOURCES {
        let at = |pointer: &str| format!("$response.body#{pointer}");
        let plan = json!({"path.id": at(source.plan_id)});
        let mut links = Map::new();
        let mut link = |name: &str, operation: &str, parameters: Value, extra: Option<Value>| {
            let mut link = json!({"operationId": operation, "parameters": parameters});
            if let Some(body) = extra {
                link["requestBody"] = body;
            }
            links.insert(name.to_owned(), link);
        };
        link("Plan", "plan", plan.clone(), None);
        link("Refresh", "refresh", plan.clone(), None);
        link("Decide", "decide", plan.clone(), None);
        link(
            "Audit",
            "audit",
            json!({"query.plan_id": at(source.plan_id)}),
            None,
        );
        link(
            "Wallet",
            "wallet",
            json!({"path.id": at(source.agent_id)}),
            None,
        );
        if let Some(effect) = source.effect {
            // The page after the preview's sample: a cursor is opaque, so it is never made up.
            let parameters = json!({
                "path.id": at(source.plan_id),
                "path.effect": at(&format!("{effect}/id")),
                "query.cursor": at(&format!("{effect}/subjects/cursor")),
            });
            link("Subjects", "subjects", parameters, None);
        }
        if let Some(capability) = source.capability_id {
            let body = json!({"plan_id": at(source.plan_id)});
            link(
                "Invoke",
                "invoke",
                json!({"path.id": at(capability)}),
                Some(body),
            );
        }
        let paths = api["paths"].as_object_mut().expect("paths");
        let mut linked = 0;
        for (path, item) in paths.iter_mut() {
            if !matches(source.path, path) {
                continue;
            }
            let answer = &mut item[source.method]["responses"]["200"];
            assert!(answer.is_object(), "{} {path} answers 200", source.method);
            answer["links"] = Value::Object(links.clone());
            linked += 1;
        }
        assert!(linked > 0, "no operation at {}", source.path);
    }
}

fn matches(pattern: &str, path: &str) -> bool {
    let (pattern, path): (Vec<&str>, Vec<&str>) =
        (pattern.split('/').collect(), path.split('/').collect());
    pattern.len() == path.len() && pattern.iter().zip(&path).all(|(p, s)| *p == "*" || p == s)
}
