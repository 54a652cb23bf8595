//! The capabilities a gateway offers, registered as packs when it is composed: the engine (plans,
//! decisions, the store) knows a capability only through `countersign-pack`'s traits, and the
//! state the capabilities act on only through the packs' [`Domain`]s.

use std::fmt;

use countersign_pack::{
    ApprovalRule, Definition, Domain, EffectProfile, Handle, Kind, Pack, Planned, Probe, Target,
};
use countersign_proto::describe::{ApprovalNeed, Describe, DryRunMode};
use countersign_proto::plan::{pointer_token, ViolationDetail};
use jsonschema::error::ValidationErrorKind;
use serde_json::Value;
use sqlx::AnyConnection;

use crate::ApiResult;

/// A registered capability with what is derived from it once: its description and compiled
/// input schema (every preview, invoke and listing reads them).
struct Registered {
    kind: Kind,
    describe: Describe,
    validator: Result<jsonschema::Validator, String>,
}

/// The capabilities and domains of one gateway. A registry lives as long as the process that
/// made it ([`Registry::leak`]): capability handles are plain references into it, and a process
/// makes one (a test binary, a few).
pub struct Registry {
    capabilities: Vec<Registered>,
    domains: Vec<Box<dyn Domain>>,
    probes: Vec<Box<dyn Probe>>,
    /// Some capability reads remotely (plan/ahead.rs): known once, asked on every decision.
    remote: bool,
}

impl Registry {
    /// The capabilities of `packs`, in order; refused when two share an id, or two domains keep
    /// the same kind of resource.
    pub fn new(packs: Vec<Pack>) -> Result<Registry, String> {
        let mut registry = Registry {
            capabilities: Vec::new(),
            domains: Vec::new(),
            probes: Vec::new(),
            remote: false,
        };
        for pack in packs {
            for kind in pack.capabilities {
                let definition = kind.definition();
                registry.remote |= definition.reads_remotely();
                let id = definition.id();
                if registry
                    .capabilities
                    .iter()
                    .any(|r| r.kind.definition().id() == id)
                {
                    return Err(format!(
                        "two capabilities are called {id} (pack {})",
                        pack.name
                    ));
                }
                let mut describe = definition.describe();
                describe.approval.needed = builtin_need(definition);
                // Seed 000: `dry_run` is required exactly when an invoke without a plan can
                // fail for the want of one, and such an invoke always waits for a person.
                if definition.approval() == ApprovalRule::Always
                    && describe.dry_run != DryRunMode::Required
                {
                    return Err(format!(
                        "{id} always needs approval, so it runs only a previewed plan: its \
                         describe must say dry_run: required (pack {})",
                        pack.name
                    ));
                }
                let validator =
                    jsonschema::validator_for(&describe.input_schema).map_err(|e| e.to_string());
                registry.capabilities.push(Registered {
                    kind,
                    describe,
                    validator,
                });
            }
            registry.probes.extend(pack.probes);
            if let Some(domain) = pack.domain {
                let shared = domain
                    .kinds()
                    .iter()
                    .find(|kind| registry.domains.iter().any(|d| d.kinds().contains(kind)));
                if let Some(kind) = shared {
                    return Err(format!(
                        "two domains keep revisions of {kind} (pack {})",
                        pack.name
                    ));
                }
                registry.domains.push(domain);
            }
        }
        Ok(registry)
    }

    /// This registry for the rest of the process.
    pub fn leak(self) -> &'static Registry {
        Box::leak(Box::new(self))
    }

    /// The outside parts the packs need, for the readiness check.
    /// Whether any capability reads its state from a server of its own (plan/ahead.rs).
    pub fn reads_remotely(&self) -> bool {
        self.remote
    }

    pub fn probes(&self) -> &[Box<dyn Probe>] {
        &self.probes
    }

    /// Every registered capability, in registration order.
    pub fn all(&'static self) -> impl Iterator<Item = Capability> {
        self.capabilities.iter().map(Capability)
    }

    pub fn get(&'static self, id: &str) -> Option<Capability> {
        self.all().find(|c| c.id() == id)
    }

    /// A capability's human title; an id this gateway does not know names itself.
    pub fn title(&'static self, capability_id: &str) -> String {
        self.get(capability_id)
            .map_or_else(|| capability_id.to_owned(), |c| c.title().to_owned())
    }

    fn domain_of(&self, resource: &str) -> Option<&dyn Domain> {
        let (kind, _) = resource.split_once('/')?;
        self.domains
            .iter()
            .find(|d| d.kinds().contains(&kind))
            .map(|d| d.as_ref())
    }

    /// Whether `resource`'s revision is the calling agent's to observe, never read here
    /// ([`Domain::observed_by_caller`]).
    pub fn observed_by_caller(&self, resource: &str) -> bool {
        self.domain_of(resource)
            .is_some_and(|domain| domain.observed_by_caller())
    }

    /// The current revision of `resource`, or `None` when it does not exist or no domain keeps it.
    pub async fn revision(
        &self,
        conn: &mut AnyConnection,
        resource: &str,
    ) -> ApiResult<Option<String>> {
        match self.domain_of(resource) {
            Some(domain) => domain.revision(&mut Handle::new(conn), resource).await,
            None => Ok(None),
        }
    }

    /// Whether `person` may have an agent act for them on `resource`: the first domain that knows
    /// the person decides, and a person no domain knows may have nothing done for them.
    pub async fn may_act(
        &self,
        conn: &mut AnyConnection,
        person: &str,
        target: Option<Target>,
        resource: Option<&str>,
    ) -> Result<bool, sqlx::Error> {
        let mut handle = Handle::new(conn);
        for domain in &self.domains {
            if let Some(may) = domain
                .may_act(&mut handle, person, target, resource)
                .await?
            {
                return Ok(may);
            }
        }
        Ok(false)
    }

    /// Where mail for `person` goes now, as the first domain that knows them says.
    pub async fn address(
        &self,
        conn: &mut AnyConnection,
        person: &str,
    ) -> Result<Option<String>, sqlx::Error> {
        let mut handle = Handle::new(conn);
        for domain in &self.domains {
            if let Some(address) = domain.address(&mut handle, person).await? {
                return Ok(Some(address));
            }
        }
        Ok(None)
    }
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

    pub fn reads_remotely(self) -> bool {
        self.definition().reads_remotely()
    }

    pub fn max_string(self) -> usize {
        self.definition().max_string()
    }

    pub fn policy_facts(self) -> serde_json::Map<String, Value> {
        self.definition().policy_facts()
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
        let mut details = violations_of(validator, params, "/params");
        details.sort_by(|a, b| a.schema_pointer.cmp(&b.schema_pointer));
        details
    }

    /// Evaluates `params` (already schema-valid) against the state `conn` sees. Writes nothing.
    pub async fn plan(self, conn: &mut AnyConnection, params: &Value) -> ApiResult<Planned> {
        self.definition().plan(&mut Handle::new(conn), params).await
    }
}

/// Every place `value` breaks the schema `validator` checks, in seed 000's detail form, each
/// pointer under `prefix`. Each member the schema does not know is its own violation, pointing at
/// that member rather than at the object holding it.
pub fn violations_of(
    validator: &jsonschema::Validator,
    value: &Value,
    prefix: &str,
) -> Vec<ViolationDetail> {
    validator
        .iter_errors(value)
        .flat_map(|e| {
            let at = format!("{prefix}{}", e.instance_path);
            match &e.kind {
                ValidationErrorKind::AdditionalProperties { unexpected } => unexpected
                    .iter()
                    .map(|name| ViolationDetail {
                        schema_pointer: format!("{at}/{}", pointer_token(name)),
                        message: format!(
                            "'{name}' is not allowed here: the schema names no such member."
                        ),
                    })
                    .collect(),
                _ => vec![ViolationDetail {
                    schema_pointer: at,
                    message: e.to_string(),
                }],
            }
        })
        .collect()
}

/// When the built-in policy makes a capability's requests wait: its rule, and never for one
/// that changes nothing (that policy holds only plans with effects).
fn builtin_need(definition: &dyn Definition) -> ApprovalNeed {
    if definition.effects().kinds.is_empty() {
        ApprovalNeed::Never
    } else if definition.approval() == ApprovalRule::Always {
        ApprovalNeed::Always
    } else {
        ApprovalNeed::DependsOnRequest
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::OnceLock;

    use super::Registry;

    use countersign_pack::{
        build, Applied, ApprovalRule, BoxFuture, Definition, EffectProfile, Execution, Handle,
        Kind, Pack, Planned, WorldCapability,
    };
    use countersign_proto::describe::{CostClass, Describe, DryRunMode, Preflight};
    use countersign_proto::Credits;
    use serde_json::{json, Value};

    /// A capability that always waits for approval, describing its preview as given.
    struct AlwaysAsks(DryRunMode);

    impl Definition for AlwaysAsks {
        fn id(&self) -> &'static str {
            "test.always"
        }
        fn title(&self) -> &'static str {
            "Always asks"
        }
        fn describe(&self) -> Describe {
            let schema = json!({"type": "object"});
            build::describe(
                "test.always",
                "Always asks",
                schema,
                self.0,
                (Preflight::None, CostClass::Free),
                1,
            )
        }
        fn effects(&self) -> EffectProfile {
            EffectProfile {
                kinds: &[],
                irreversible: false,
                external: false,
            }
        }
        fn approval(&self) -> ApprovalRule {
            ApprovalRule::Always
        }
        fn plan<'a>(
            &'a self,
            _: &'a mut Handle<'_>,
            _: &'a Value,
        ) -> BoxFuture<'a, countersign_pack::ApiResult<Planned>> {
            Box::pin(async { Ok(build::nothing(Credits::cents(0))) })
        }
    }

    impl WorldCapability for AlwaysAsks {
        fn apply<'a>(
            &'a self,
            _: &'a mut Handle<'_>,
            _: &'a Value,
            _: &'a Planned,
            _: Execution<'a>,
        ) -> BoxFuture<'a, countersign_pack::ApiResult<Applied>> {
            Box::pin(async { Ok(Applied::default()) })
        }
    }

    fn registry_of(mode: DryRunMode) -> Result<Registry, String> {
        Registry::new(vec![Pack::new(
            "test",
            vec![Kind::World(Box::new(AlwaysAsks(mode)))],
        )])
    }

    #[test]
    fn a_capability_that_always_asks_must_say_its_dry_run_is_required() {
        let refused = registry_of(DryRunMode::Supported).err().expect("refused");
        assert!(
            refused.contains("test.always") && refused.contains("dry_run: required"),
            "{refused}"
        );
        assert!(registry_of(DryRunMode::Required).is_ok());
    }

    /// The demo world's capabilities and the engine's own, once per test binary.
    pub fn demo_registry() -> &'static Registry {
        static REGISTRY: OnceLock<&'static Registry> = OnceLock::new();
        REGISTRY.get_or_init(|| {
            Registry::new(vec![countersign_demo_world::pack(), crate::builtin_pack()])
                .expect("distinct ids")
                .leak()
        })
    }
}
