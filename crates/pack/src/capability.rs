//! The traits a capability implements, and the pack it ships in.

use std::future::Future;
use std::pin::Pin;

use countersign_proto::describe::Describe;
use serde_json::{Map, Value};

use crate::error::ApiResult;
use crate::external::{Called, ExternalCall};
use crate::handle::Handle;
use crate::plan::{Applied, ApprovalRule, EffectProfile, Execution, Planned, Target};

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Characters in any string value of a request's params, unless its capability says otherwise
/// ([`Definition::max_string`]).
pub const MAX_STRING: usize = 1000;

/// What every capability declares and how it evaluates a request. `plan` is the one evaluation
/// that preview and execution share; it writes nothing.
pub trait Definition: Send + Sync + 'static {
    fn id(&self) -> &'static str;
    fn title(&self) -> &'static str;
    fn describe(&self) -> Describe;
    fn effects(&self) -> EffectProfile;
    /// The kind of resource a request names, for scopes; `None` acts on no named resource.
    fn target(&self) -> Option<Target> {
        None
    }
    fn approval(&self) -> ApprovalRule {
        ApprovalRule::WhenRisky
    }
    /// The most characters any one string of a request may hold (every string may reach an
    /// approver). A capability whose requests carry a whole document the approver reads (a
    /// file's text through the MCP proxy) raises it; the request body's own limit still holds.
    fn max_string(&self) -> usize {
        MAX_STRING
    }
    /// Whether its plan and its resources' revisions are read from a server of its own, over
    /// the network (an MCP upstream): the engine reads them before it takes the store's writer,
    /// never while holding it.
    fn reads_remotely(&self) -> bool {
        false
    }
    /// What an approval policy may read of the capability beside its id, title and rule, as
    /// members of `input.capability` (the MCP upstream and tool a proxied capability calls).
    fn policy_facts(&self) -> Map<String, Value> {
        Map::new()
    }
    /// Evaluates `params` (already schema-valid) against the state `handle` sees.
    fn plan<'a>(
        &'a self,
        handle: &'a mut Handle<'_>,
        params: &'a Value,
    ) -> BoxFuture<'a, ApiResult<Planned>>;
}

/// A capability whose effects are rows of the gateway's own world: applied inside the write
/// transaction that derived `planned` (again, for a stored plan), so they commit together or not
/// at all, and what `planned` read is what the transaction holds.
pub trait WorldCapability: Definition {
    fn apply<'a>(
        &'a self,
        handle: &'a mut Handle<'_>,
        params: &'a Value,
        planned: &'a Planned,
        execution: Execution<'a>,
    ) -> BoxFuture<'a, ApiResult<Applied>>;
}

/// A capability whose effect is a call outside the gateway (a model provider). The engine
/// reserves the plan's maximum cost and marks the plan executing before the call, and settles
/// what the call says it spent after it: no transaction is held across the network.
pub trait ExternalCapability: Definition {
    /// Whether this gateway can make the call at all (an endpoint is configured), asked before
    /// anything is reserved: a plan that cannot run is not used up.
    fn ready(&self) -> ApiResult<()>;
    fn call<'a>(&'a self, call: ExternalCall<'a>) -> BoxFuture<'a, ApiResult<Called>>;
}

/// The state a pack's capabilities act on, as far as the engine must know it: the revision of
/// each resource a plan read, so that a plan whose reads moved is refused; whether the person an
/// agent acts for may act on the resource a request names; and where a person's mail goes.
pub trait Domain: Send + Sync + 'static {
    /// The kinds of resource (`projects` in `projects/prj_184`) whose revisions this domain keeps.
    fn kinds(&self) -> &'static [&'static str];
    /// Whether this domain's resources are read by the agent that calls, never by the gateway
    /// (a coding agent's files, on the agent's machine): their revisions are compared only with
    /// what the agent's invoke says it observed just now (`InvokeRequest::observed`), and are
    /// skipped wherever no agent speaks (a decision, the queue). [`Domain::revision`] is then
    /// never asked.
    fn observed_by_caller(&self) -> bool {
        false
    }
    /// The current revision of `resource`, or `None` when it does not exist (or has none); an
    /// error when it cannot be read now (the store, or a server the domain reads through).
    fn revision<'a>(
        &'a self,
        handle: &'a mut Handle<'_>,
        resource: &'a str,
    ) -> BoxFuture<'a, ApiResult<Option<String>>>;
    /// Whether `person` may have an agent act for them on `resource` (of kind `target`); `None`
    /// when this domain does not know the person.
    fn may_act<'a>(
        &'a self,
        _handle: &'a mut Handle<'_>,
        _person: &'a str,
        _target: Option<Target>,
        _resource: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<bool>, sqlx::Error>> {
        Box::pin(async { Ok(None) })
    }
    /// Where mail for `person` goes now, checked again right before a message leaves (seed
    /// 004); `None` when this domain does not know the person (a domain that knows nobody).
    fn address<'a>(
        &'a self,
        _handle: &'a mut Handle<'_>,
        _person: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, sqlx::Error>> {
        Box::pin(async { Ok(None) })
    }
}

/// A part outside the gateway a pack's capabilities need in order to serve (an upstream server),
/// reported by the gateway's readiness check (`/readyz`).
pub trait Probe: Send + Sync + 'static {
    /// The part's name in the report (`mcp:files`).
    fn part(&self) -> String;
    /// Whether it can serve now, and what was found; never a secret, since anyone may ask.
    fn check(&self) -> BoxFuture<'_, Result<String, String>>;
}

pub enum Kind {
    World(Box<dyn WorldCapability>),
    External(Box<dyn ExternalCapability>),
}

impl Kind {
    pub fn definition(&self) -> &dyn Definition {
        match self {
            Kind::World(c) => c.as_ref(),
            Kind::External(c) => c.as_ref(),
        }
    }
}

/// A named set of capabilities a team ships together, with the domain they act on, if any.
pub struct Pack {
    pub name: &'static str,
    pub capabilities: Vec<Kind>,
    pub domain: Option<Box<dyn Domain>>,
    pub probes: Vec<Box<dyn Probe>>,
}

impl Pack {
    pub fn new(name: &'static str, capabilities: Vec<Kind>) -> Pack {
        Pack {
            name,
            capabilities,
            domain: None,
            probes: Vec::new(),
        }
    }

    pub fn with_probe(mut self, probe: impl Probe) -> Pack {
        self.probes.push(Box::new(probe));
        self
    }

    pub fn with_domain(mut self, domain: impl Domain) -> Pack {
        self.domain = Some(Box::new(domain));
        self
    }
}
