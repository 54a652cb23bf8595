//! "Request as signed": the parameters the agent sent, which the plan's digest covers
//! (`request.params`). For a provider capability they are the prompt and input text that leave
//! for an outside service, so an approver reads them before signing, like every other signed word.

use countersign_proto::plan::{EffectKind, Preview, MCP_TOOL_CALL};
use serde::Serialize;
use serde_json::Value;
use ts_rs::TS;

use crate::review::diff::{value_diff_within, Budget, ValueChange};

/// A value longer than this many characters, or of more lines, is shown collapsed, with an expand.
const LONG_CHARS: usize = 240;
const LONG_LINES: usize = 4;

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct RequestView {
    /// Each value of the parameters, by JSON pointer (`/messages/0/content`), in document order.
    pub params: Vec<ParamView>,
    /// The plan calls an outside service: these parameters are what leaves for it.
    pub leaves: bool,
    /// The plan calls a tool of an MCP server the gateway stands in front of: these parameters
    /// are the tool's arguments.
    pub mcp: Option<McpCallView>,
}

/// Which server's tool a proxied plan calls, read from the signed plan: an effect of type
/// `mcp_tool_call`, and the capability id `UPSTREAM.TOOL` (docs/mcp-proxy.md).
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct McpCallView {
    pub upstream: String,
    pub tool: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct ParamView {
    pub path: String,
    /// Strings as they are, anything else as JSON.
    pub text: String,
    /// Shown collapsed until expanded.
    pub long: bool,
}

pub fn request_view(plan: &Preview) -> RequestView {
    RequestView {
        params: leaves(&plan.request.params)
            .into_iter()
            .map(|(path, value)| {
                let text = match value {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let long = text.chars().count() > LONG_CHARS || text.lines().count() > LONG_LINES;
                ParamView { path, text, long }
            })
            .collect(),
        // The request itself leaves only for a call to an outside service: an email a plan
        // sends, external too, carries its own words, never the request's.
        leaves: plan
            .effects
            .iter()
            .any(|e| e.kind == EffectKind::ExternalCall),
        mcp: mcp_call(plan),
    }
}

fn mcp_call(plan: &Preview) -> Option<McpCallView> {
    if !plan.effects.iter().any(|e| e.effect_type == MCP_TOOL_CALL) {
        return None;
    }
    let (upstream, tool) = plan.capability_id.split_once('.')?;
    Some(McpCallView {
        upstream: upstream.to_owned(),
        tool: tool.to_owned(),
    })
}

/// How the request of `new` differs from the one of `old` it replaces, value by value (line
/// diffs for long text). A refresh asks again with the same parameters, so anything here is a
/// gateway's doing, and an approver must see it.
pub fn request_changes(old: &Preview, new: &Preview, budget: &Budget) -> Vec<ValueChange> {
    let before = leaves(&old.request.params);
    let after = leaves(&new.request.params);
    let mut paths: Vec<&String> = before.iter().chain(after.iter()).map(|(p, _)| p).collect();
    paths.sort();
    paths.dedup();
    let value = |side: &[(String, &Value)], path: &str| {
        side.iter()
            .find(|(p, _)| p == path)
            .map_or(Value::Null, |(_, v)| (*v).clone())
    };
    paths
        .into_iter()
        .filter_map(|path| {
            let (b, a) = (value(&before, path), value(&after, path));
            (b != a).then(|| ValueChange {
                path: path.clone(),
                diff: value_diff_within(&b, &a, budget),
            })
        })
        .collect()
}

/// The scalar values in `params` with their JSON pointers; an empty object or array counts as a
/// value of its own. Iterative: a deeply nested request cannot exhaust the stack.
fn leaves(params: &Value) -> Vec<(String, &Value)> {
    let mut out = Vec::new();
    let mut stack = vec![(String::new(), params)];
    while let Some((path, value)) = stack.pop() {
        match value {
            Value::Object(map) if !map.is_empty() => {
                for (key, member) in map.iter().rev() {
                    stack.push((format!("{path}/{}", escape(key)), member));
                }
            }
            Value::Array(items) if !items.is_empty() => {
                for (index, item) in items.iter().enumerate().rev() {
                    stack.push((format!("{path}/{index}"), item));
                }
            }
            _ => out.push((
                if path.is_empty() {
                    "/".to_owned()
                } else {
                    path
                },
                value,
            )),
        }
    }
    out
}

/// A key as a JSON pointer token (RFC 6901).
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plan(params: Value) -> Preview {
        let path = format!(
            "{}/../../../shared/fixtures/plan-small.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let mut plan: Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        plan["request"]["params"] = params;
        serde_json::from_value(plan).unwrap()
    }

    #[test]
    fn every_value_of_the_request_is_listed_by_pointer_and_long_text_collapses() {
        let long = "Write a haiku.\n".repeat(10);
        let view = request_view(&plan(json!({
            "model": "small",
            "messages": [{"role": "user", "content": long}],
            "a/b": {}, "max_tokens": 200
        })));
        let shown: Vec<(&str, &str, bool)> = view
            .params
            .iter()
            .map(|p| (p.path.as_str(), p.text.as_str(), p.long))
            .collect();
        assert_eq!(
            shown,
            [
                ("/a~1b", "{}", false),
                ("/max_tokens", "200", false),
                ("/messages/0/content", long.as_str(), true),
                ("/messages/0/role", "user", false),
                ("/model", "small", false),
            ]
        );
    }

    #[test]
    fn the_request_leaves_only_for_a_call_to_an_outside_service() {
        let bulk = format!(
            "{}/../../../shared/fixtures/plan-bulk.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let bulk: Preview = serde_json::from_str(&std::fs::read_to_string(bulk).unwrap()).unwrap();
        assert!(bulk.effects.iter().any(|e| e.external), "it emails people");
        assert!(!request_view(&bulk).leaves);
        let mut call = bulk.clone();
        call.effects[0].kind = EffectKind::ExternalCall;
        assert!(request_view(&call).leaves);
    }

    #[test]
    fn a_changed_request_is_diffed_value_by_value() {
        let budget = Budget::new(std::time::Duration::from_secs(5));
        let old = plan(json!({"prompt": "a cat\non a mat", "n": 1}));
        let same = request_changes(&old, &old, &budget);
        assert!(same.is_empty());
        let new = plan(json!({"prompt": "a cat\non a hat", "seed": 7}));
        let changes = request_changes(&old, &new, &budget);
        let changed: Vec<&str> = changes.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(changed, ["/n", "/prompt", "/seed"]);
    }

    #[test]
    fn a_call_through_the_mcp_proxy_names_its_server_and_tool_and_a_native_plan_none() {
        let native = plan(json!({"project_id": "prj_1"}));
        assert_eq!(request_view(&native).mcp, None);
        let mut proxied = plan(json!({"path": "/srv/a.txt", "content": "x"}));
        proxied.capability_id = "files.write_file".to_owned();
        proxied.effects[0].effect_type = MCP_TOOL_CALL.to_owned();
        assert_eq!(
            request_view(&proxied).mcp,
            Some(McpCallView {
                upstream: "files".to_owned(),
                tool: "write_file".to_owned()
            })
        );
    }
}
