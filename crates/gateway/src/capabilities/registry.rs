//! Capabilities as packs registered at start-up: the engine (plans, decisions, store, routes)
//! knows a capability only through [`Definition`] and one of its two ways of executing.
//!
//! The registry is process-wide because a capability id is parsed where no gateway exists yet
//! (agent scopes on the admin command line); what differs between gateway instances (provider
//! endpoints and keys) travels in the gateway's state instead, see [`crate::providers`].

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;

use countersign_proto::describe::Describe;
use countersign_proto::plan::ViolationDetail;
use serde_json::Value;
use sqlx::AnyConnection;

use super::{Applied, ApprovalRule, EffectProfile, Execution, Planned, Target};
use crate::error::ApiResult;
use crate::providers::{Called, ProviderCall, Providers};

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

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
    /// Evaluates `params` (already schema-valid) against the state `conn` sees.
    fn plan<'a>(
        &'a self,
        conn: &'a mut AnyConnection,
        params: &'a Value,
    ) -> BoxFuture<'a, ApiResult<Planned>>;
}

/// A capability whose effects are rows of the gateway's own world: applied inside the write
/// transaction that re-derived the plan, so they commit together or not at all.
pub trait WorldCapability: Definition {
    fn apply<'a>(
        &'a self,
        conn: &'a mut AnyConnection,
        params: &'a Value,
        planned: &'a Planned,
        execution: Execution<'a>,
    ) -> BoxFuture<'a, ApiResult<Applied>>;
}

/// A capability whose effect is a call outside the gateway (a model provider). The engine
/// reserves the plan's maximum cost and marks the plan executing before the call, and settles
/// what the provider's usage says after it: no transaction is held across the network.
pub trait ExternalCapability: Definition {
    /// Whether this gateway can make the call at all (an endpoint is configured), asked before
    /// anything is reserved: a plan that cannot run is not used up.
    fn ready(&self, providers: &Providers) -> ApiResult<()>;
    fn call<'a>(&'a self, call: ProviderCall<'a>) -> BoxFuture<'a, ApiResult<Called>>;
}

pub enum Kind {
    World(Box<dyn WorldCapability>),
    External(Box<dyn ExternalCapability>),
}

impl Kind {
    fn definition(&self) -> &dyn Definition {
        match self {
            Kind::World(c) => c.as_ref(),
            Kind::External(c) => c.as_ref(),
        }
    }
}

/// A named set of capabilities a team ships together.
pub struct Pack {
    pub name: &'static str,
    pub capabilities: Vec<Kind>,
}

/// A registered capability with what is derived from it once: its description and compiled
/// input schema (every preview, invoke and listing reads them).
pub struct Registered {
    kind: Kind,
    describe: Describe,
    validator: Result<jsonschema::Validator, String>,
}

static REGISTRY: OnceLock<Vec<&'static Registered>> = OnceLock::new();

/// Registers `packs` for this process; called once at start-up, before the first request.
/// Fails when capabilities were already registered or two capabilities share an id.
pub fn install(packs: Vec<Pack>) -> Result<(), String> {
    let registered = build(packs)?;
    REGISTRY
        .set(registered)
        .map_err(|_| "capabilities were already registered in this process".to_owned())
}

fn build(packs: Vec<Pack>) -> Result<Vec<&'static Registered>, String> {
    let mut registered: Vec<&'static Registered> = Vec::new();
    for pack in packs {
        for kind in pack.capabilities {
            let definition = kind.definition();
            let id = definition.id();
            if registered.iter().any(|r| r.kind.definition().id() == id) {
                return Err(format!(
                    "two capabilities are called {id} (pack {})",
                    pack.name
                ));
            }
            let describe = definition.describe();
            let validator =
                jsonschema::validator_for(&describe.input_schema).map_err(|e| e.to_string());
            // Registered once per process and never dropped: handles are plain references.
            registered.push(Box::leak(Box::new(Registered {
                kind,
                describe,
                validator,
            })));
        }
    }
    Ok(registered)
}

/// The registered capabilities; a process that registered none gets the two packs the
/// gateway ships with their default settings.
fn registry() -> &'static [&'static Registered] {
    REGISTRY.get_or_init(|| {
        build(vec![
            super::world_pack(),
            crate::providers::pack(&crate::providers::PackSettings::default()),
        ])
        .expect("the shipped packs have distinct ids")
    })
}

/// A handle on a registered capability: cheap to copy, compared by id.
#[derive(Clone, Copy)]
pub struct Capability(&'static Registered);

impl PartialEq for Capability {
    fn eq(&self, other: &Capability) -> bool {
        self.id() == other.id()
    }
}

impl Eq for Capability {}

impl fmt::Debug for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl Capability {
    /// Every registered capability, in registration order.
    pub fn all() -> impl Iterator<Item = Capability> {
        registry().iter().map(|r| Capability(r))
    }

    pub fn by_id(id: &str) -> Option<Capability> {
        Capability::all().find(|c| c.id() == id)
    }

    fn definition(self) -> &'static dyn Definition {
        self.0.kind.definition()
    }

    pub fn kind(self) -> &'static Kind {
        &self.0.kind
    }

    pub fn id(self) -> &'static str {
        self.definition().id()
    }

    pub fn title(self) -> &'static str {
        self.definition().title()
    }

    pub fn describe(self) -> &'static Describe {
        &self.0.describe
    }

    pub fn effects(self) -> EffectProfile {
        self.definition().effects()
    }

    pub fn target(self) -> Option<Target> {
        self.definition().target()
    }

    pub fn approval(self) -> ApprovalRule {
        self.definition().approval()
    }

    /// Every field of `params` that violates the input schema, all at once (seed 000).
    pub fn violations(self, params: &Value) -> Vec<ViolationDetail> {
        let validator = match &self.0.validator {
            Ok(v) => v,
            Err(e) => {
                return vec![ViolationDetail {
                    schema_pointer: "/params".to_owned(),
                    message: format!("The capability's schema is unusable: {e}"),
                }]
            }
        };
        let mut details: Vec<ViolationDetail> = validator
            .iter_errors(params)
            .map(|e| ViolationDetail {
                schema_pointer: format!("/params{}", e.instance_path),
                message: e.to_string(),
            })
            .collect();
        details.sort_by(|a, b| a.schema_pointer.cmp(&b.schema_pointer));
        details
    }

    /// Evaluates `params` (already schema-valid) against the state `conn` sees. Writes nothing.
    pub async fn plan(self, conn: &mut AnyConnection, params: &Value) -> ApiResult<Planned> {
        self.definition().plan(conn, params).await
    }
}
