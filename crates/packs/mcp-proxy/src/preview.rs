//! What a proxied call's plan says, in the order of docs/mcp-proxy.md: a tool that only reads
//! has no effect; a tool with a boolean `dryRun` (or `dry_run`) parameter is asked for its own
//! preview; a write a known server's adapter reads ahead ([`adapter`]) shows what it changes
//! (beside the tool's own preview, the adapter adds what the call depends on); any other call
//! is the exact call, with no preview, and says so.

use std::time::Duration;

use countersign_pack::build;
use countersign_pack::{ApiError, ApiResult, Planned, PlannedEffect};
use countersign_proto::plan::{Assumption, Change, EffectKind, ReadRevision, MCP_TOOL_CALL};
use countersign_proto::{Credits, ErrorCode};
use serde_json::Value;

use crate::adapter;
use crate::proxied::Proxied;
use crate::upstream::{text_of, CallError};

/// How long a preview may wait for the upstream's own dry run.
const PREVIEW_TIMEOUT: Duration = Duration::from_secs(30);

/// The path under which a plan signs the tool's own preview of the call.
pub const OWN_PREVIEW: &str = "/tool_preview";

pub const NO_PREVIEW: &str =
    "no preview: the effect is whatever the tool does with these arguments";

pub async fn plan(proxied: &Proxied, params: &Value) -> ApiResult<Planned> {
    let upstream = proxied.upstream.name();
    let mut planned = build::nothing(Credits::ZERO);
    let now = proxied.upstream.digest_now(&proxied.tool);
    planned.read_revisions.push(ReadRevision {
        resource: proxied.schema_resource(),
        revision: now.clone().unwrap_or_else(|| "deleted".to_owned()),
    });
    if now.as_deref() != Some(proxied.digest.as_str()) {
        planned.validation.push(build::blocker(
            "tool_changed",
            "/params",
            format!(
                "{upstream} changed or removed {} since this gateway started; a request checked \
                 against the schema it serves could mean something else to the tool now.",
                proxied.tool
            ),
            "Restart the gateway to serve the upstream's tools as they are now.",
        ));
    }
    if !proxied.hints.declared {
        planned.assumptions.push(Assumption {
            dependency: upstream.to_owned(),
            description: format!(
                "{} declares no annotations: it is read as the MCP specification's defaults, \
                 destructive and open-world.",
                proxied.tool
            ),
            execution_can_proceed_without: true,
        });
    }
    let mut effect = build::effect(
        1,
        MCP_TOOL_CALL,
        EffectKind::ExternalCall,
        format!("mcp/{upstream}/{}", proxied.tool),
        format!(
            "Calls {} on the MCP server {upstream} once, with the arguments as signed.",
            proxied.tool
        ),
    );
    if proxied.hints.read_only {
        // The upstream's word that the call changes nothing: no flag, so the built-in policy
        // lets it run; a policy of the gateway's own that names the tool still sees the call.
        effect.description = format!(
            "Calls {} on the MCP server {upstream}, which says the tool only reads.",
            proxied.tool
        );
        planned.effects.push(PlannedEffect::new(effect));
        return Ok(planned);
    }
    effect.reversible = !proxied.hints.destructive;
    effect.external = proxied.hints.open_world;
    // The adapter reads first: what it records as read is what the tool's own preview saw, or
    // older, never newer (a change in between makes the plan stale, not wrongly current).
    let adapted = match proxied.adapter {
        Some(adapter) => Some(adapter::preview(adapter, &proxied.upstream, params).await?),
        None => None,
    };
    let mut refusal = None;
    if let Some(param) = proxied.dry_run_param {
        match own_preview(proxied, param, params).await? {
            Ok(change) => effect.changes.push(change),
            Err(why) => {
                refusal = Some(format!(
                    "{upstream}'s own preview of {} failed: {why}",
                    proxied.tool
                ))
            }
        }
    }
    match adapted {
        // The tool's own preview has said why it cannot run: the adapter has nothing to add.
        Some(_) if refusal.is_some() => {}
        Some(Ok(previewed)) => {
            effect.description = previewed.description;
            effect.resource = previewed.resource;
            effect.changes.extend(previewed.changes);
            planned.read_revisions.extend(previewed.reads);
        }
        Some(Err(why)) => refusal = Some(format!("{upstream} cannot preview the call: {why}")),
        None if proxied.dry_run_param.is_none() => planned.assumptions.push(Assumption {
            dependency: upstream.to_owned(),
            description: NO_PREVIEW.to_owned(),
            execution_can_proceed_without: true,
        }),
        None => {}
    }
    if let Some(refusal) = refusal {
        planned.validation.push(build::blocker(
            "tool_preview_failed",
            "/params",
            refusal,
            "Change the arguments so that the tool can preview the call.",
        ));
    }
    planned.effects.push(PlannedEffect::new(effect));
    Ok(planned)
}

/// The upstream's answer to the same call with its dry-run parameter set: what the tool itself
/// says it would do, or why it would not (an error result, or a refusal of the arguments).
/// An agent's own `dryRun: true` is previewed the same way and, approved, runs as a dry run.
async fn own_preview(
    proxied: &Proxied,
    param: &str,
    params: &Value,
) -> ApiResult<Result<Change, String>> {
    let mut arguments = params.as_object().cloned().unwrap_or_default();
    arguments.insert(param.to_owned(), Value::Bool(true));
    let upstream = proxied.upstream.name();
    let unavailable = |message: String| {
        ApiError::new(ErrorCode::ProviderUnavailable, message).from_provider(upstream)
    };
    let result = match proxied
        .upstream
        .call(&proxied.tool, arguments, PREVIEW_TIMEOUT)
        .await
    {
        Ok(result) => result,
        Err(CallError::Refused(message)) => return Ok(Err(message)),
        Err(CallError::NotSent(message) | CallError::Lost(message)) => {
            return Err(unavailable(message))
        }
    };
    if result.is_error == Some(true) {
        return Ok(Err(text_of(&result)));
    }
    Ok(Ok(Change {
        path: OWN_PREVIEW.to_owned(),
        before: Value::Null,
        after: Value::String(text_of(&result)),
    }))
}
