//! An upstream tool as a capability: described, evaluated and called through its upstream.

use std::time::Duration;

use countersign_pack::build;
use countersign_pack::{
    ApiError, ApiResult, ApprovalRule, BoxFuture, Called, Definition, EffectProfile, ExternalCall,
    ExternalCapability, Handle, Output, Planned,
};
use countersign_proto::describe::{CostClass, Describe, DryRunMode, Preflight};
use countersign_proto::plan::EffectKind;
use countersign_proto::{Credits, ErrorCode};
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{json, Map, Value};

use crate::preview;
use crate::proxied::Proxied;
use crate::upstream::{text_of, CallError};

/// Characters in one string of a proxied call's arguments: as many as the request body holds.
const MAX_DOCUMENT: usize = 1 << 20;

/// How long an approved call may take before its outcome is unknown.
const CALL_TIMEOUT: Duration = Duration::from_secs(120);

impl Definition for Proxied {
    fn id(&self) -> &'static str {
        self.id
    }

    fn title(&self) -> &'static str {
        self.title
    }

    fn describe(&self) -> Describe {
        // A call the upstream says only reads runs at once, over HTTP and MCP alike; where the
        // gateway's policy asks people for it, it is refused (`approval_required`).
        let dry_run = if self.hints.read_only {
            DryRunMode::NotApplicable
        } else {
            DryRunMode::Required
        };
        build::describe(
            self.id,
            self.title,
            self.schema.clone(),
            dry_run,
            (Preflight::None, CostClass::Free),
            1,
        )
    }

    /// A tool the upstream says only reads declares no effect, so the gateway's own MCP
    /// listing calls it read-only too; its plan still holds the call, for a policy to see.
    fn effects(&self) -> EffectProfile {
        if self.hints.read_only {
            return EffectProfile {
                kinds: &[],
                irreversible: false,
                external: false,
            };
        }
        EffectProfile {
            kinds: &[EffectKind::ExternalCall],
            irreversible: self.hints.destructive,
            external: self.hints.open_world,
        }
    }

    /// A call the upstream says only reads runs at once; any other waits for a person, whatever
    /// flags its plan carries: the annotations are the upstream's word, not ours.
    fn approval(&self) -> ApprovalRule {
        if self.hints.read_only {
            ApprovalRule::WhenRisky
        } else {
            ApprovalRule::Always
        }
    }

    /// A tool's string may be a whole file's text (`write_file`'s `content`): bounded by the
    /// request body's limit (1 MiB), not by the line a native capability's field holds.
    fn max_string(&self) -> usize {
        MAX_DOCUMENT
    }

    /// Its schema, files and repositories are read through the upstream.
    fn reads_remotely(&self) -> bool {
        true
    }

    fn policy_facts(&self) -> Map<String, Value> {
        let mut facts = Map::new();
        let mcp = json!({"upstream": self.upstream.name(), "tool": self.tool,
                         "annotations": self.annotations});
        facts.insert("mcp".to_owned(), mcp);
        facts
    }

    fn plan<'a>(
        &'a self,
        _handle: &'a mut Handle<'_>,
        params: &'a Value,
    ) -> BoxFuture<'a, ApiResult<Planned>> {
        Box::pin(preview::plan(self, params))
    }
}

impl ExternalCapability for Proxied {
    fn ready(&self) -> ApiResult<()> {
        match self.upstream.digest_now(&self.tool) {
            Some(_) => Ok(()),
            None => Err(ApiError::new(
                ErrorCode::ProviderUnavailable,
                format!(
                    "The MCP upstream {} no longer lists {}.",
                    self.upstream.name(),
                    self.tool
                ),
            )
            .from_provider(self.upstream.name())),
        }
    }

    fn call<'a>(&'a self, call: ExternalCall<'a>) -> BoxFuture<'a, ApiResult<Called>> {
        Box::pin(async move {
            let arguments = call.params.as_object().cloned().unwrap_or_default();
            let provider = self.upstream.name();
            let ended = |outcome, nothing_done| Called {
                provider,
                outcome,
                charged: Credits::ZERO,
                nothing_done,
            };
            let failed =
                |code, message: String| Err(ApiError::new(code, message).from_provider(provider));
            Ok(
                match self
                    .upstream
                    .call(&self.tool, arguments, CALL_TIMEOUT)
                    .await
                {
                    Ok(result) if result.is_error == Some(true) => ended(
                        failed(
                            ErrorCode::ProviderRefused,
                            format!("{} answered with an error: {}", self.id, text_of(&result)),
                        ),
                        false,
                    ),
                    Ok(result) => ended(Ok(output(self, result)), false),
                    Err(CallError::NotSent(message)) => {
                        ended(failed(ErrorCode::ProviderUnavailable, message), true)
                    }
                    Err(CallError::Refused(message)) => ended(
                        failed(
                            ErrorCode::ProviderRefused,
                            format!("{provider} refused the call: {message}"),
                        ),
                        true,
                    ),
                    // It may have done its work: a plan that ran into this does not run again.
                    Err(CallError::Lost(message)) => ended(
                        Err(ApiError::new(ErrorCode::ProviderTimeout, message)
                            .with_details(json!({ "outcome": "unknown" }))
                            .from_provider(provider)),
                        false,
                    ),
                },
            )
        })
    }
}

/// Seed 002's envelope for a result: its text as `content`, the upstream and tool in
/// `metadata`, and what else it answered (structured content, other content blocks) there too.
fn output(proxied: &Proxied, result: CallToolResult) -> Output {
    let mut metadata = Map::new();
    metadata.insert("upstream".into(), json!(proxied.upstream.name()));
    metadata.insert("tool".into(), json!(proxied.tool));
    if let Some(structured) = &result.structured_content {
        metadata.insert("structured_content".into(), structured.clone());
    }
    let other: Vec<Value> = result
        .content
        .iter()
        .filter(|c| !matches!(c, ContentBlock::Text(_)))
        .filter_map(|c| serde_json::to_value(c).ok())
        .collect();
    if !other.is_empty() {
        metadata.insert("content_blocks".into(), Value::Array(other));
    }
    Output {
        content: text_of(&result),
        metadata,
        ..Output::default()
    }
}
