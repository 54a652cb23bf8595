//! An upstream tool as the gateway serves it: its capability id `NAME.TOOL`, its schema and
//! hints as listed at start, and how its calls can be previewed.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::adapter::Adapter;
use crate::hints::Hints;
use crate::upstream::{Listed, Upstream};
use crate::TOOL_KIND;

pub struct Proxied {
    pub upstream: Arc<Upstream>,
    pub id: &'static str,
    pub title: &'static str,
    /// The tool's name at the upstream.
    pub tool: String,
    pub schema: Value,
    /// The schema's digest when the gateway started, which its describe and validation serve.
    pub digest: String,
    pub hints: Hints,
    /// The boolean parameter that asks the tool for its own preview, if it has one.
    pub dry_run_param: Option<&'static str>,
    /// The adapter that previews this tool's calls, if its server is one an adapter knows.
    pub adapter: Option<Adapter>,
    /// The annotations as the upstream declared them (`null`: none), for a policy to read.
    pub annotations: Value,
}

impl Proxied {
    pub fn new(upstream: Arc<Upstream>, listed: &Listed) -> Proxied {
        let tool = &listed.tool;
        let id = format!("{}.{}", upstream.name(), tool.name);
        let title = tool
            .title
            .clone()
            .or_else(|| tool.annotations.as_ref().and_then(|a| a.title.clone()))
            .unwrap_or_else(|| format!("{} on {}", tool.name, upstream.name()));
        let schema = Value::Object(tool.input_schema.as_ref().clone());
        let dry_run_param = ["dryRun", "dry_run"]
            .into_iter()
            .find(|p| schema.pointer(&format!("/properties/{p}/type")) == Some(&json!("boolean")));
        Proxied {
            // Made once per tool at start, for the process: the registry names capabilities so.
            id: Box::leak(id.into_boxed_str()),
            title: Box::leak(title.into_boxed_str()),
            tool: tool.name.to_string(),
            schema,
            digest: listed.digest.clone(),
            hints: listed.hints,
            dry_run_param,
            adapter: crate::adapter::of(&upstream, &tool.name),
            annotations: serde_json::to_value(&tool.annotations).unwrap_or(Value::Null),
            upstream,
        }
    }

    /// The resource whose revision is this tool's input schema.
    pub fn schema_resource(&self) -> String {
        format!("{TOOL_KIND}/{}", self.id)
    }
}
