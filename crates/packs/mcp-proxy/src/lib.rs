//! Countersign in front of any MCP server (docs/mcp-proxy.md).
//!
//! Each upstream server is named (`files`) and reached over stdio (a command the gateway runs)
//! or streamable HTTP. Each of its tools becomes a capability `NAME.TOOL` with the tool's own
//! title and input schema; its annotations become the plan's risk flags; a tool the upstream
//! says only reads runs at once, any other call waits for a signed approval and then runs
//! exactly once with the signed arguments. The tool's input schema is a read revision of every
//! plan, so a plan made before the upstream changed the tool is stale.
//!
//! This crate depends on `countersign-pack` and rmcp's client, never on the engine or a server.

mod adapter;
mod domain;
mod hints;
mod preview;
mod proxied;
mod spec;
mod tool;
mod upstream;

use std::sync::Arc;

use countersign_pack::{BoxFuture, Kind, Pack, Probe};

pub use adapter::{FILE_KIND, GIT_KIND};
pub use spec::{Spec, Target};
pub use upstream::Upstream;

/// The kind of resource whose revision is a tool's input schema: `mcp-tools/files.write_file`.
pub const TOOL_KIND: &str = "mcp-tools";

/// The pack of every tool the `upstreams` listed when they connected, in their order.
pub fn pack(upstreams: &[Arc<Upstream>]) -> Pack {
    let capabilities = upstreams
        .iter()
        .flat_map(|upstream| {
            upstream
                .tools()
                .iter()
                .map(|listed| {
                    Kind::External(Box::new(proxied::Proxied::new(upstream.clone(), listed)))
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let pack = Pack::new("mcp-proxy", capabilities).with_domain(domain::Reads(upstreams.to_vec()));
    upstreams.iter().fold(pack, |pack, upstream| {
        pack.with_probe(Connected(upstream.clone()))
    })
}

/// An upstream's part in the gateway's readiness: `mcp:NAME`, ready while it is connected.
struct Connected(Arc<Upstream>);

impl Probe for Connected {
    fn part(&self) -> String {
        format!("mcp:{}", self.0.name())
    }

    fn check(&self) -> BoxFuture<'_, Result<String, String>> {
        Box::pin(async move {
            self.0.connected().await?;
            Ok(format!("connected, {} tools", self.0.tools().len()))
        })
    }
}
