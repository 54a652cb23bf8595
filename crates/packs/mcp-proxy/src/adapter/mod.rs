//! Previews of known servers' writes, read ahead through the server's own read-only tools:
//! the filesystem server's ([`files`]) and the git server's ([`git`], reading a repository
//! through [`repo`]). An adapter writes nothing and never reaches around its server.

mod files;
mod git;
mod kind;
mod previewed;
mod repo;

use countersign_pack::{ApiError, ApiResult};
use countersign_proto::ErrorCode;

pub use files::{entry, FILE_KIND};
pub use kind::Adapter;
pub use previewed::Previewed;
pub use repo::{parse as parse_git, revision as git_revision, GIT_KIND};

use crate::upstream::{Unread, Upstream};

/// The adapter for `tool` of `upstream`, if the upstream is a server one knows.
pub fn of(upstream: &Upstream, tool: &str) -> Option<Adapter> {
    files::adapter(upstream, tool).or_else(|| git::adapter(upstream, tool))
}

/// The preview of a call through `adapter`; `Err` inside when the upstream says it cannot read
/// what the call would change, or the call cannot do what it asks (the plan's blocker, in the
/// upstream's words or ours).
pub async fn preview(
    adapter: Adapter,
    upstream: &Upstream,
    params: &serde_json::Value,
) -> ApiResult<Result<Previewed, String>> {
    let previewed = if adapter.reads_files() {
        files::preview(adapter, upstream, params).await
    } else {
        git::preview(adapter, upstream, params).await
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
