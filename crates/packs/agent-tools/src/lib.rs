//! A coding agent's tool calls as plans (docs/agent-hook.md): one capability, `agent.tool_call`,
//! whose request is the call as the agent's `PreToolUse` hook received it (the tool's name, its
//! input, the working directory) and the text of each file the call writes, as the hook read
//! it. The gateway never runs the call: once approved, its execution releases it to the agent,
//! which runs it itself. What a file held when it was previewed is a read revision only the
//! agent can read again (`agent-files/PATH`): its hook says what it observes at release, and a
//! file changed since the preview makes the plan stale.
//!
//! Built on `countersign-pack` alone, like any team's pack.

mod files;
mod shell;
mod words;

use std::collections::BTreeMap;
use std::path::Path;

use countersign_pack::{
    build, parse, ApiResult, Applied, ApprovalRule, BoxFuture, Definition, Domain, EffectProfile,
    Execution, Handle, Kind, Pack, Planned, PlannedEffect, WorldCapability,
};
use countersign_proto::agent_call::absolute;
pub use countersign_proto::agent_call::{resource, revision, ABSENT, FILE_KIND, ID};
use countersign_proto::describe::{CostClass, Describe, DryRunMode, Preflight};
use countersign_proto::plan::{Assumption, Change, Effect, EffectKind, ReadRevision, Severity};
use countersign_proto::Credits;
use serde::Deserialize;
use serde_json::{json, Map, Value};

/// The most characters a file's text, or any other string of a call, may hold.
const MAX_TEXT: usize = 1 << 20;

pub const NO_PREVIEW: &str = "no preview: the effect is whatever the tool does with this input";

/// The pack: the capability, and the domain of the agent's files.
pub fn pack() -> Pack {
    Pack::new("agent-tools", vec![Kind::World(Box::new(ToolCall))]).with_domain(AgentFiles)
}

struct ToolCall;

#[derive(Deserialize)]
struct Call {
    tool_name: String,
    tool_input: Map<String, Value>,
    cwd: String,
    #[serde(default)]
    files: BTreeMap<String, Option<String>>,
}

impl Definition for ToolCall {
    fn id(&self) -> &'static str {
        ID
    }

    fn title(&self) -> &'static str {
        "A coding agent's tool call"
    }

    fn describe(&self) -> Describe {
        let schema = build::params(
            &["tool_name", "tool_input", "cwd"],
            json!({
                "tool_name": {"type": "string", "minLength": 1, "maxLength": 200},
                "tool_input": {"type": "object"},
                "cwd": {"type": "string", "minLength": 1, "maxLength": 4096},
                "files": {"type": "object", "maxProperties": 1,
                          "additionalProperties": {"type": ["string", "null"]}},
            }),
        );
        build::describe(
            ID,
            self.title(),
            schema,
            DryRunMode::Required,
            (Preflight::None, CostClass::Flat),
            1,
        )
    }

    fn effects(&self) -> EffectProfile {
        EffectProfile {
            kinds: &[EffectKind::Create, EffectKind::Update, EffectKind::Job],
            irreversible: true,
            external: true,
        }
    }

    /// Every call that reaches the gateway waits for a person, unless a policy says otherwise
    /// (`examples/policy-coding-agent`): which calls reach it is the agent's hook's to choose.
    fn approval(&self) -> ApprovalRule {
        ApprovalRule::Always
    }

    fn max_string(&self) -> usize {
        MAX_TEXT
    }

    fn plan<'a>(
        &'a self,
        _: &'a mut Handle<'_>,
        params: &'a Value,
    ) -> BoxFuture<'a, ApiResult<Planned>> {
        Box::pin(async move {
            let call: Call = parse(params)?;
            let mut planned = build::nothing(Credits::ZERO);
            let effect = match call.tool_name.as_str() {
                "Bash" => command(&call, &mut planned),
                "Write" | "Edit" | "MultiEdit" => file(&call, &mut planned),
                "NotebookEdit" => notebook(&call, &mut planned),
                _ => Some(other(&call, &mut planned)),
            };
            planned.effects.extend(effect.map(PlannedEffect::new));
            Ok(planned)
        })
    }
}

impl WorldCapability for ToolCall {
    /// Releases the call to the agent: nothing of the gateway's world changes.
    fn apply<'a>(
        &'a self,
        _: &'a mut Handle<'_>,
        params: &'a Value,
        _: &'a Planned,
        _: Execution<'a>,
    ) -> BoxFuture<'a, ApiResult<Applied>> {
        Box::pin(async move {
            let tool = params["tool_name"].as_str().unwrap_or_default();
            let mut metadata = Map::new();
            metadata.insert("release".into(), json!("allow"));
            Ok(Applied {
                content: format!("Released the {tool} call to the agent, which runs it itself."),
                metadata,
                ..Applied::default()
            })
        })
    }
}

fn blocker(planned: &mut Planned, refusal: files::Refusal) -> Option<Effect> {
    planned.validation.push(build::blocker(
        refusal.code,
        "/params/tool_input",
        refusal.message,
        refusal.repair,
    ));
    None
}

fn input<'a>(call: &'a Call, name: &str) -> Option<&'a str> {
    call.tool_input.get(name).and_then(Value::as_str)
}

/// `Bash`: the exact command, where it runs, and what its words show (`shell`).
fn command(call: &Call, planned: &mut Planned) -> Option<Effect> {
    let Some(command) = input(call, "command") else {
        return blocker(planned, missing("command"));
    };
    let reading = shell::read(command, &call.cwd);
    let mut description = format!("Runs a shell command in {}: {command}", call.cwd);
    if let Some(said) = input(call, "description") {
        description.push_str(&format!(" (the agent says: {said})"));
    }
    let mut effect = build::effect(
        1,
        "agent_command",
        EffectKind::Job,
        format!("agent-shell/{}", call.cwd),
        description,
    );
    effect.reversible = reading.irreversible.is_empty();
    effect.external = !reading.external.is_empty();
    for (code, why) in reading
        .irreversible
        .iter()
        .map(|w| ("command_irreversible", w))
        .chain(reading.external.iter().map(|w| ("command_external", w)))
    {
        planned.validation.push(build::note(
            Severity::Warning,
            code,
            "/params/tool_input/command",
            format!("The command {why}."),
        ));
    }
    if !reading.unknown.is_empty() {
        planned.assumptions.push(Assumption {
            dependency: "shell".to_owned(),
            description: format!(
                "The command runs {}: what that does beyond its words is not previewed.",
                reading.unknown.join(", ")
            ),
            execution_can_proceed_without: true,
        });
    }
    Some(effect)
}

/// `Write`, `Edit`, `MultiEdit`: the file's whole text before and after.
fn file(call: &Call, planned: &mut Planned) -> Option<Effect> {
    let Some(path) = input(call, "file_path") else {
        return blocker(planned, missing("file_path"));
    };
    let path = absolute(path, &call.cwd);
    let before = match read_before(call, &path, planned) {
        Ok(before) => before,
        Err(refusal) => return blocker(planned, refusal),
    };
    let after = match call.tool_name.as_str() {
        "Write" => match input(call, "content") {
            Some(content) => Ok(content.to_owned()),
            None => Err(missing("content")),
        },
        "Edit" => parse::<files::Edit>(&Value::Object(call.tool_input.clone()))
            .map_err(|_| missing("old_string and new_string"))
            .and_then(|e| files::edit(&path, before.as_deref(), &[e])),
        _ => match call.tool_input.get("edits").map(parse::<Vec<files::Edit>>) {
            Some(Ok(edits)) if !edits.is_empty() => files::edit(&path, before.as_deref(), &edits),
            _ => Err(missing("edits")),
        },
    };
    let after = match after {
        Ok(after) => after,
        Err(refusal) => return blocker(planned, refusal),
    };
    let (kind, description) = match (&before, call.tool_name.as_str()) {
        (None, _) => (
            EffectKind::Create,
            format!("Creates {path} with the text shown."),
        ),
        (Some(_), "Write") => (
            EffectKind::Update,
            format!("Writes the whole text of {path}, as shown."),
        ),
        (Some(_), _) => (EffectKind::Update, format!("Edits {path}, as shown.")),
    };
    let mut effect = build::effect(1, "agent_file_write", kind, resource(&path), description);
    effect.changes.push(Change {
        path: "/content".to_owned(),
        before: before.map_or(Value::Null, Value::String),
        after: Value::String(after),
    });
    Some(effect)
}

/// `NotebookEdit`: the cell's source before and after.
fn notebook(call: &Call, planned: &mut Planned) -> Option<Effect> {
    let edit = match parse::<files::NotebookEdit>(&Value::Object(call.tool_input.clone())) {
        Ok(edit) => edit,
        Err(_) => return blocker(planned, missing("notebook_path")),
    };
    let path = absolute(&edit.notebook_path, &call.cwd);
    let before = match read_before(call, &path, planned) {
        Ok(before) => before,
        Err(refusal) => return blocker(planned, refusal),
    };
    let cell = match files::notebook(before.as_deref(), &edit) {
        Ok(cell) => cell,
        Err(refusal) => return blocker(planned, refusal),
    };
    let mut effect = build::effect(
        1,
        "agent_notebook_edit",
        EffectKind::Update,
        resource(&path),
        cell.description,
    );
    effect.changes.push(Change {
        path: cell.path,
        before: cell.before.map_or(Value::Null, Value::String),
        after: cell.after.map_or(Value::Null, Value::String),
    });
    Some(effect)
}

/// Any other tool, an MCP server's (`mcp__server__tool`) included: the exact input, and no
/// preview.
fn other(call: &Call, planned: &mut Planned) -> Effect {
    let name = &call.tool_name;
    let description = match name.strip_prefix("mcp__").and_then(|t| t.split_once("__")) {
        Some((server, tool)) => {
            format!("Calls {tool} of the agent's MCP server {server}, with the input as signed.")
        }
        None => format!("Calls the agent's tool {name}, with the input as signed."),
    };
    planned.assumptions.push(Assumption {
        dependency: name.clone(),
        description: NO_PREVIEW.to_owned(),
        execution_can_proceed_without: true,
    });
    build::effect(
        1,
        "agent_tool_call",
        EffectKind::Job,
        format!("agent-tools/{name}"),
        description,
    )
}

/// The text of `path` as the hook sent it (`None`: the file does not exist), recorded as a read
/// revision; a warning when it lies outside the working directory.
fn read_before(
    call: &Call,
    path: &str,
    planned: &mut Planned,
) -> Result<Option<String>, files::Refusal> {
    let Some(before) = call.files.get(path) else {
        return Err(files::Refusal {
            code: "file_not_sent",
            message: format!(
                "The request carries no text for {path}: the gateway cannot read the agent's \
                 files, and shows none it was not sent."
            ),
            repair: "Send the file's text in files, keyed by its absolute path (the hook does).",
        });
    };
    planned.read_revisions.push(ReadRevision {
        resource: resource(path),
        revision: revision(before.as_deref()),
    });
    if !Path::new(path).starts_with(absolute(&call.cwd, "/")) {
        planned.validation.push(build::note(
            Severity::Warning,
            "outside_working_directory",
            "/params/tool_input",
            format!("{path} lies outside the working directory {}.", call.cwd),
        ));
    }
    Ok(before.clone())
}

fn missing(what: &str) -> files::Refusal {
    files::Refusal {
        code: "input_incomplete",
        message: format!("The tool's input has no {what}."),
        repair: "Send the tool's input as the agent gave it.",
    }
}

/// The agent's files: their revisions are what the agent observes, never read here.
struct AgentFiles;

impl Domain for AgentFiles {
    fn kinds(&self) -> &'static [&'static str] {
        &[FILE_KIND]
    }

    fn observed_by_caller(&self) -> bool {
        true
    }

    fn revision<'a>(
        &'a self,
        _: &'a mut Handle<'_>,
        _: &'a str,
    ) -> BoxFuture<'a, ApiResult<Option<String>>> {
        Box::pin(async { Ok(None) })
    }
}
