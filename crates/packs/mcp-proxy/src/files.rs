//! The filesystem server's `write_file` previewed through its own read tool (see [`crate::adapter`]):
//! the file's text before and after, and the text's digest as a read revision (`mcp-files/NAME:PATH`), so a
//! file changed between preview and execution makes the plan stale. Nothing reaches around the
//! server: the file is read only with the upstream's `read_text_file`.

use countersign_proto::digest;
use countersign_proto::plan::{Change, ReadRevision};
use serde_json::{json, Value};

use crate::previewed::{text_param, Previewed};
use crate::upstream::{Unread, Upstream};

/// The kind of resource whose revision is a file's text, read through its upstream.
pub const FILE_KIND: &str = "mcp-files";

/// The upstream's read-only tool an adapter reads a file with.
const READ: &str = "read_text_file";

/// Whether `tool` of `upstream` is a write this module previews: the server lists a read-only
/// `read_text_file` taking a `path`, and the tool is its `write_file`.
pub fn previews(upstream: &Upstream, tool: &str) -> bool {
    tool == "write_file" && upstream.reads_with(READ, &["path"])
}

/// The resource naming `path` at `upstream`.
pub fn resource(upstream: &str, path: &str) -> String {
    format!("{FILE_KIND}/{upstream}:{path}")
}

/// What a file holds now, read through the upstream: `None` when it does not exist.
pub async fn read(upstream: &Upstream, path: &str) -> Result<Option<String>, Unread> {
    match upstream.read(READ, json!({ "path": path })).await {
        Ok(text) => Ok(Some(text)),
        // The server answers a missing file with Node's ENOENT; anything else it cannot read
        // (outside its directories, a directory) it would not write either.
        Err(Unread::Refused(message)) if message.contains("ENOENT") => Ok(None),
        Err(unread) => Err(unread),
    }
}

/// The revision of a file's text: its digest, or `None` when it does not exist.
pub fn revision(text: Option<&str>) -> Option<String> {
    text.map(|t| digest::sha256(t.as_bytes()))
}

/// The preview of a `write_file`: the file's text before (`null`: it does not exist) and
/// after, and the text's digest as a read revision.
pub async fn write_file(upstream: &Upstream, params: &Value) -> Result<Previewed, Unread> {
    let path = text_param(params, "path")?;
    let content = text_param(params, "content")?;
    let before = read(upstream, path).await?;
    let resource = resource(upstream.name(), path);
    let read = ReadRevision {
        resource: resource.clone(),
        revision: revision(before.as_deref()).unwrap_or_else(|| "deleted".to_owned()),
    };
    Ok(Previewed {
        description: format!(
            "Writes the whole text of {path} through {}'s write_file, as shown.",
            upstream.name()
        ),
        resource,
        change: Change {
            path: "/content".to_owned(),
            before: before.map_or(Value::Null, Value::String),
            after: Value::String(content.to_owned()),
        },
        reads: vec![read],
    })
}
