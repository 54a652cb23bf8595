//! The filesystem server's writes previewed through its own read tools (see [`crate::adapter`]):
//! `write_file` (the file's text before and after), `edit_file` (the file's revision beside the
//! tool's own preview), `move_file` (the path before and after) and `create_directory`. What a
//! path holds is a read revision (`mcp-files/NAME:PATH`): a file by its text's digest, a
//! directory by its tree of names, a missing path as missing, so a path changed between preview
//! and execution makes the plan stale. Nothing reaches around the server: a file is read only
//! with the upstream's `read_text_file`, a directory with its `directory_tree`.

use countersign_proto::digest;
use countersign_proto::plan::Change;
use serde_json::{json, Value};

use super::kind::Adapter;
use super::previewed::{read, text_param, Previewed};
use crate::upstream::{Unread, Upstream};

/// The kind of resource whose revision is what a path holds, read through its upstream.
pub const FILE_KIND: &str = "mcp-files";

/// The upstream's read-only tools an adapter reads a path with.
const READ: &str = "read_text_file";
const TREE: &str = "directory_tree";

/// The adapter for `tool` of `upstream`, when the server lists the read-only `read_text_file`
/// and `directory_tree`, each taking a `path`, and the tool is one of its writes.
pub fn adapter(upstream: &Upstream, tool: &str) -> Option<Adapter> {
    if ![READ, TREE]
        .iter()
        .all(|read| upstream.reads_with(read, &["path"]))
    {
        return None;
    }
    Some(match tool {
        "write_file" => Adapter::WriteFile,
        "edit_file" => Adapter::EditFile,
        "move_file" => Adapter::MoveFile,
        "create_directory" => Adapter::CreateDirectory,
        _ => return None,
    })
}

/// The resource naming `path` at `upstream`.
pub fn resource(upstream: &str, path: &str) -> String {
    format!("{FILE_KIND}/{upstream}:{path}")
}

/// What a path holds, as the upstream reads it.
pub enum Entry {
    Absent,
    File(String),
    /// A directory, with its tree of names as the upstream lists it.
    Directory(String),
}

impl Entry {
    /// Its revision: a file's text digest, a directory's tree digest, `None` when absent.
    pub fn revision(&self) -> Option<String> {
        match self {
            Entry::Absent => None,
            Entry::File(text) => Some(digest::sha256(text.as_bytes())),
            Entry::Directory(tree) => {
                Some(format!("directory:{}", digest::sha256(tree.as_bytes())))
            }
        }
    }
}

/// What `path` holds now, read through the upstream.
pub async fn entry(upstream: &Upstream, path: &str) -> Result<Entry, Unread> {
    match upstream.read(READ, json!({ "path": path })).await {
        Ok(text) => Ok(Entry::File(text)),
        // The server answers with Node's error codes; anything else it cannot read (outside its
        // directories) it would not write either.
        Err(Unread::Refused(message)) if message.contains("ENOENT") => Ok(Entry::Absent),
        Err(Unread::Refused(message)) if message.contains("EISDIR") => {
            let tree = upstream.read(TREE, json!({ "path": path })).await?;
            Ok(Entry::Directory(tree))
        }
        Err(unread) => Err(unread),
    }
}

pub async fn preview(
    adapter: Adapter,
    upstream: &Upstream,
    params: &Value,
) -> Result<Previewed, Unread> {
    match adapter {
        Adapter::WriteFile => write_file(upstream, params).await,
        Adapter::EditFile => edit_file(upstream, params).await,
        Adapter::MoveFile => move_file(upstream, params).await,
        _ => create_directory(upstream, params).await,
    }
}

/// `write_file`: the file's text before (`null`: it does not exist) and after.
async fn write_file(upstream: &Upstream, params: &Value) -> Result<Previewed, Unread> {
    let path = text_param(params, "path")?;
    let content = text_param(params, "content")?;
    let before = match entry(upstream, path).await? {
        Entry::Directory(_) => return Err(directory(path)),
        before => before,
    };
    let resource = resource(upstream.name(), path);
    Ok(Previewed {
        description: format!(
            "Writes the whole text of {path} through {}'s write_file, as shown.",
            upstream.name()
        ),
        reads: vec![read(resource.clone(), before.revision())],
        resource,
        changes: vec![Change {
            path: "/content".to_owned(),
            before: match before {
                Entry::File(text) => Value::String(text),
                _ => Value::Null,
            },
            after: Value::String(content.to_owned()),
        }],
    })
}

/// `edit_file`: the tool's own dry run shows the edit (docs/mcp-proxy.md, first in order); this
/// adds the file's revision, so an edit previewed against one text never lands on another.
async fn edit_file(upstream: &Upstream, params: &Value) -> Result<Previewed, Unread> {
    let path = text_param(params, "path")?;
    let file = entry(upstream, path).await?;
    let resource = resource(upstream.name(), path);
    Ok(Previewed {
        description: format!(
            "Edits {path} through {}'s edit_file, as the tool's own preview shows.",
            upstream.name()
        ),
        reads: vec![read(resource.clone(), file.revision())],
        resource,
        changes: Vec::new(),
    })
}

/// `move_file`: the path before and after. The server refuses to move over anything, so a
/// destination that exists blocks the plan, as a missing source does.
async fn move_file(upstream: &Upstream, params: &Value) -> Result<Previewed, Unread> {
    let source = text_param(params, "source")?;
    let destination = text_param(params, "destination")?;
    let from = entry(upstream, source).await?;
    let what = match from {
        Entry::Absent => return Err(Unread::Refused(format!("{source} does not exist"))),
        Entry::File(_) => "the file",
        Entry::Directory(_) => "the directory, with everything in it,",
    };
    let to = entry(upstream, destination).await?;
    if !matches!(to, Entry::Absent) {
        return Err(Unread::Refused(format!(
            "{destination} exists: the server moves nothing over it"
        )));
    }
    let name = upstream.name();
    let resource = self::resource(name, source);
    Ok(Previewed {
        description: format!(
            "Moves {what} {source} to {destination} through {name}'s move_file; its content \
             stays as it is."
        ),
        reads: vec![
            read(resource.clone(), from.revision()),
            read(self::resource(name, destination), None),
        ],
        resource,
        changes: vec![Change {
            path: "/path".to_owned(),
            before: Value::String(source.to_owned()),
            after: Value::String(destination.to_owned()),
        }],
    })
}

/// `create_directory`: a directory where there was none (with any missing parents), or nothing
/// at all when it exists; a file in its place blocks the plan, as the server would fail.
async fn create_directory(upstream: &Upstream, params: &Value) -> Result<Previewed, Unread> {
    let path = text_param(params, "path")?;
    let now = entry(upstream, path).await?;
    let name = upstream.name();
    let (description, changes) = match now {
        Entry::File(_) => {
            return Err(Unread::Refused(format!(
                "{path} is a file: no directory can be created there"
            )))
        }
        Entry::Directory(_) => (
            format!("{path} exists already: {name}'s create_directory changes nothing."),
            Vec::new(),
        ),
        Entry::Absent => (
            format!(
                "Creates the directory {path}, and any missing directories above it, through \
                 {name}'s create_directory."
            ),
            vec![Change {
                path: "/directory".to_owned(),
                before: Value::Null,
                after: Value::String(path.to_owned()),
            }],
        ),
    };
    let resource = resource(name, path);
    Ok(Previewed {
        description,
        reads: vec![read(resource.clone(), now.revision())],
        resource,
        changes,
    })
}

fn directory(path: &str) -> Unread {
    Unread::Refused(format!("{path} is a directory, not a file"))
}
