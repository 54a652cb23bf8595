//! Previews of known servers' writes, read ahead through the server's own read-only tools:
//! the filesystem server's `write_file` ([`files`]) and the git server's `git_commit` ([`git`]).
//! An adapter writes nothing and never reaches around its server.

use countersign_pack::{ApiError, ApiResult};
use countersign_proto::ErrorCode;

use crate::previewed::Previewed;
use crate::upstream::{Unread, Upstream};
use crate::{files, git};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Adapter {
    WriteFile,
    GitCommit,
}

impl Adapter {
    /// The adapter for `tool` of `upstream`, if the upstream is a server one knows.
    pub fn of(upstream: &Upstream, tool: &str) -> Option<Adapter> {
        if files::previews(upstream, tool) {
            Some(Adapter::WriteFile)
        } else if git::previews(upstream, tool) {
            Some(Adapter::GitCommit)
        } else {
            None
        }
    }
}

/// The preview of a call through `adapter`; `Err` inside when the upstream says it cannot read
/// what the call would change (the plan's blocker, in its words).
pub async fn preview(
    adapter: Adapter,
    upstream: &Upstream,
    params: &serde_json::Value,
) -> ApiResult<Result<Previewed, String>> {
    let previewed = match adapter {
        Adapter::WriteFile => files::write_file(upstream, params).await,
        Adapter::GitCommit => git::commit(upstream, params).await,
    };
    match previewed {
        Ok(previewed) => Ok(Ok(previewed)),
        Err(Unread::Refused(message)) => Ok(Err(message)),
        Err(Unread::Unavailable(message)) => Err(unavailable(upstream, message)),
    }
}

/// An upstream that did not answer a read: the request may succeed later.
pub fn unavailable(upstream: &Upstream, message: String) -> ApiError {
    ApiError::new(ErrorCode::ProviderUnavailable, message).from_provider(upstream.name())
}
