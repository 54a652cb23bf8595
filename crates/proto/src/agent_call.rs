//! What a coding agent's hook and the gateway agree on for `agent.tool_call`
//! (docs/agent-hook.md): the capability, which file a call writes, and how that file is named and
//! revisioned in a plan's read revisions and an invoke's `observed`.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::digest;

pub const ID: &str = "agent.tool_call";

/// The kind of resource a file of the agent's machine is (`agent-files//home/dana/x.rs`).
pub const FILE_KIND: &str = "agent-files";

/// The revision of a file that does not exist, as the engine reads a missing resource.
pub const ABSENT: &str = "deleted";

/// The resource naming the file at `path`.
pub fn resource(path: &str) -> String {
    format!("{FILE_KIND}/{path}")
}

/// A file's revision: its text's digest, or [`ABSENT`].
pub fn revision(text: Option<&str>) -> String {
    text.map_or_else(|| ABSENT.to_owned(), |t| digest::sha256(t.as_bytes()))
}

/// `path` against the working directory `cwd`, when relative, with `.` and `..` resolved as
/// written: the name a plan shows and a scope matches is the file's, never one that reaches
/// past the working directory while looking inside it (`/srv/app/../../etc/passwd`). Symbolic
/// links are the hook's to resolve: it reads the machine, the gateway cannot.
pub fn absolute(path: &str, cwd: &str) -> String {
    let mut normal = PathBuf::new();
    for part in Path::new(cwd).join(path).components() {
        match part {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    normal.to_string_lossy().into_owned()
}

/// The file a call of `tool_name` with `tool_input` writes, by the path its input names: what
/// the hook reads and sends, and what the plan shows before and after.
pub fn written_files(tool_name: &str, tool_input: &Value, cwd: &str) -> Vec<String> {
    let key = match tool_name {
        "Write" | "Edit" | "MultiEdit" => "file_path",
        "NotebookEdit" => "notebook_path",
        _ => return Vec::new(),
    };
    tool_input[key]
        .as_str()
        .map(|p| vec![absolute(p, cwd)])
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_named_as_the_file_it_reaches() {
        assert_eq!(absolute("src/a.rs", "/srv/app"), "/srv/app/src/a.rs");
        assert_eq!(
            absolute("/srv/app/../../etc/passwd", "/srv/app"),
            "/etc/passwd"
        );
        assert_eq!(absolute("./x/../y", "/srv/app"), "/srv/app/y");
        let input = serde_json::json!({"file_path": "../.bashrc"});
        assert_eq!(
            written_files("Edit", &input, "/home/dana/p"),
            ["/home/dana/.bashrc"]
        );
    }
}
