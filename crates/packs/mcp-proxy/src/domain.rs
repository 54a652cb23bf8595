//! What the proxy keeps revisions of: each tool's input schema (`mcp-tools/NAME.TOOL`) and each
//! file an adapter previewed (`mcp-files/NAME:PATH`), both read through the upstream now.

use std::sync::Arc;

use countersign_pack::{ApiError, ApiResult, BoxFuture, Domain, Handle, Target};
use countersign_proto::ErrorCode;

use crate::files::{self, FILE_KIND};
use crate::upstream::Upstream;
use crate::TOOL_KIND;

/// The upstreams whose tools and files plans read.
pub struct Reads(pub Vec<Arc<Upstream>>);

impl Domain for Reads {
    fn kinds(&self) -> &'static [&'static str] {
        &[TOOL_KIND, FILE_KIND]
    }

    /// A tool's schema digest as the upstream lists it now, or a file's text digest as the
    /// upstream reads it now; an upstream that does not answer fails the check rather than
    /// calling the file gone.
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
            if kind == TOOL_KIND {
                return Ok(upstream.digest_now(rest));
            }
            match files::read(upstream, rest).await {
                Ok(text) => Ok(files::revision(text.as_deref())),
                Err(files::Unread::Refused(_)) => Ok(None),
                Err(files::Unread::Unavailable(message)) => Err(ApiError::new(
                    ErrorCode::ProviderUnavailable,
                    format!("{} could not be read again: {message}", rest),
                )
                .from_provider(upstream.name())),
            }
        })
    }

    fn may_act<'a>(
        &'a self,
        _handle: &'a mut Handle<'_>,
        _person: &'a str,
        _target: Option<Target>,
        _resource: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<bool>, sqlx::Error>> {
        Box::pin(async { Ok(None) })
    }

    fn address<'a>(
        &'a self,
        _handle: &'a mut Handle<'_>,
        _person: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, sqlx::Error>> {
        Box::pin(async { Ok(None) })
    }
}
