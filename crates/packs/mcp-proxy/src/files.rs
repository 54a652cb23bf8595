//! The filesystem server's `write_file` previewed through its own read tool: the file's text
//! before and after, and the text's digest as a read revision (`mcp-files/NAME:PATH`), so a
//! file changed between preview and execution makes the plan stale. Nothing reaches around the
//! server: the file is read only with the upstream's `read_text_file`.

use std::time::Duration;

use countersign_pack::{ApiError, ApiResult};
use countersign_proto::digest;
use countersign_proto::plan::{Change, ReadRevision};
use countersign_proto::ErrorCode;
use serde_json::{json, Value};

use crate::upstream::{text_of, CallError, Upstream};

/// The kind of resource whose revision is a file's text, read through its upstream.
pub const FILE_KIND: &str = "mcp-files";

/// The upstream's read-only tool an adapter reads a file with.
const READ: &str = "read_text_file";

const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Whether `tool` of `upstream` is a write this module previews: the server lists a read-only
/// `read_text_file` taking a `path`, and the tool is its `write_file`.
pub fn previews(upstream: &Upstream, tool: &str) -> bool {
    tool == "write_file"
        && upstream.tools().iter().any(|listed| {
            listed.tool.name == READ
                && listed.hints.read_only
                && listed
                    .tool
                    .input_schema
                    .get("properties")
                    .and_then(|p| p.get("path"))
                    .is_some()
        })
}

/// The resource naming `path` at `upstream`.
pub fn resource(upstream: &str, path: &str) -> String {
    format!("{FILE_KIND}/{upstream}:{path}")
}

/// Why a file could not be read.
pub enum Unread {
    /// The upstream answered that it cannot read it (outside its directories, a directory).
    Refused(String),
    /// The upstream did not answer.
    Unavailable(String),
}

/// What a file holds now, read through the upstream: `None` when it does not exist.
pub async fn read(upstream: &Upstream, path: &str) -> Result<Option<String>, Unread> {
    let arguments = json!({ "path": path });
    let arguments = arguments.as_object().cloned().unwrap_or_default();
    match upstream.call(READ, arguments, READ_TIMEOUT).await {
        Ok(result) if result.is_error == Some(true) => {
            let message = text_of(&result);
            // The server answers a missing file with Node's ENOENT; anything else it cannot read
            // (outside its directories, a directory) it would not write either.
            match message.contains("ENOENT") {
                true => Ok(None),
                false => Err(Unread::Refused(message)),
            }
        }
        Ok(result) => Ok(Some(text_of(&result))),
        Err(CallError::Refused(e)) => Err(Unread::Refused(e)),
        Err(CallError::NotSent(e) | CallError::Lost(e)) => Err(Unread::Unavailable(e)),
    }
}

/// The revision of a file's text: its digest, or `None` when it does not exist.
pub fn revision(text: Option<&str>) -> Option<String> {
    text.map(|t| digest::sha256(t.as_bytes()))
}

/// The preview of a `write_file`: the file's read revision and the change of its text; an
/// error the upstream gave for reading the file, as the plan's blocker.
pub async fn write_file(
    upstream: &Upstream,
    params: &Value,
) -> ApiResult<Result<(ReadRevision, Change, String), String>> {
    let (Some(path), Some(content)) = (params["path"].as_str(), params["content"].as_str()) else {
        return Err(ApiError::validation(
            "/params",
            "write_file takes a path and a content, both strings.",
        ));
    };
    let before = match read(upstream, path).await {
        Ok(before) => before,
        Err(Unread::Refused(message)) => return Ok(Err(message)),
        Err(Unread::Unavailable(message)) => {
            return Err(ApiError::new(ErrorCode::ProviderUnavailable, message)
                .from_provider(upstream.name()))
        }
    };
    let resource = resource(upstream.name(), path);
    let read = ReadRevision {
        resource: resource.clone(),
        revision: revision(before.as_deref()).unwrap_or_else(|| "deleted".to_owned()),
    };
    let change = Change {
        path: "/content".to_owned(),
        before: before.map_or(Value::Null, Value::String),
        after: Value::String(content.to_owned()),
    };
    Ok(Ok((read, change, resource)))
}
