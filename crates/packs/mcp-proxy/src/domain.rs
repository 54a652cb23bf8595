//! What the proxy keeps revisions of: each tool's input schema (`mcp-tools/NAME.TOOL`), each path
//! (`mcp-files/NAME:PATH`) and repository state (`mcp-git/NAME:REPO#PART`) an adapter previewed,
//! all read through the upstream now.

use std::sync::Arc;

use countersign_pack::{ApiResult, BoxFuture, Domain, Handle};

use crate::adapter::{self, FILE_KIND, GIT_KIND};
use crate::upstream::{Unread, Upstream};
use crate::TOOL_KIND;

/// The upstreams whose tools and files plans read.
pub struct Reads(pub Vec<Arc<Upstream>>);

impl Domain for Reads {
    fn kinds(&self) -> &'static [&'static str] {
        &[TOOL_KIND, FILE_KIND, GIT_KIND]
    }

    /// A tool's schema digest as the upstream lists it now, a file's text digest or a
    /// repository's state as the upstream reads it now; an upstream that does not answer fails
    /// the check rather than calling the resource gone.
    fn revision<'a>(
        &'a self,
        _handle: &'a mut Handle<'_>,
        resource: &'a str,
    ) -> BoxFuture<'a, ApiResult<Option<String>>> {
        Box::pin(async move {
            let Some((kind, id)) = resource.split_once('/') else {
                return Ok(None);
            };
            let (upstream, rest) = match kind {
                TOOL_KIND => id.split_once('.'),
                _ => id.split_once(':'),
            }
            .unwrap_or_default();
            let Some(upstream) = self.0.iter().find(|u| u.name() == upstream) else {
                return Ok(None);
            };
            let read = match kind {
                TOOL_KIND => return Ok(upstream.digest_now(rest)),
                FILE_KIND => adapter::entry(upstream, rest)
                    .await
                    .map(|entry| entry.revision()),
                _ => match adapter::parse_git(rest) {
                    Some((repo, part)) => adapter::git_revision(upstream, repo, &part).await,
                    None => return Ok(None),
                },
            };
            match read {
                Ok(revision) => Ok(revision),
                Err(Unread::Refused(_)) => Ok(None),
                Err(Unread::Unavailable(message)) => Err(adapter::unavailable(
                    upstream,
                    format!("{rest} could not be read again: {message}"),
                )),
            }
        })
    }
}
