//! What an adapter reads ahead for a preview ([`crate::adapter`]).

use countersign_proto::plan::{Change, ReadRevision};

use crate::upstream::Unread;

/// What an adapter read: the effect's resource and description, its change, and the revisions
/// the call depends on.
pub struct Previewed {
    pub resource: String,
    pub description: String,
    pub change: Change,
    pub reads: Vec<ReadRevision>,
}

/// The string param `name` of a request the schema accepted.
pub fn text_param<'a>(params: &'a serde_json::Value, name: &str) -> Result<&'a str, Unread> {
    params[name]
        .as_str()
        .ok_or_else(|| Unread::Refused(format!("the request has no string {name}")))
}
