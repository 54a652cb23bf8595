//! What an adapter reads ahead for a preview ([`crate::adapter`]).

use countersign_proto::plan::{Change, ReadRevision};

use crate::upstream::Unread;

/// What an adapter read: the effect's resource and description, its changes (none: the call
/// changes nothing, or the tool's own preview shows them), and the revisions the call depends on.
pub struct Previewed {
    pub resource: String,
    pub description: String,
    pub changes: Vec<Change>,
    pub reads: Vec<ReadRevision>,
}

/// The string param `name` of a request the schema accepted.
pub fn text_param<'a>(params: &'a serde_json::Value, name: &str) -> Result<&'a str, Unread> {
    params[name]
        .as_str()
        .ok_or_else(|| Unread::Refused(format!("the request has no string {name}")))
}

/// A read of `resource` at `revision`, where `None` is a resource that does not exist.
pub fn read(resource: String, revision: Option<String>) -> ReadRevision {
    ReadRevision {
        resource,
        revision: revision.unwrap_or_else(|| ABSENT.to_owned()),
    }
}

/// The revision a plan records for a resource that does not exist, as the engine reads `None`.
pub const ABSENT: &str = "deleted";
