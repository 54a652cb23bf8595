//! The Countersign engine: previews stored as plans, the approval queue, signed decisions,
//! execution of exactly what was approved, accounts and scopes, quotas, revocation, the mail
//! outbox's records, and the store they live in (SQLite, or PostgreSQL for several instances).
//!
//! It knows capabilities only through `countersign-pack`, as the packs a [`Registry`] holds.
//! Every entry point takes an [`Engine`] and answers in the protocol's terms ([`ApiError`] and
//! the wire types of `countersign-proto`), so a test drives it as the HTTP API and MCP do.
//!
//! It never depends on axum, rmcp, lettre or reqwest, nor on any pack or server crate: the
//! transport, delivery and capabilities are composed around it.

pub mod accounts;
pub mod approval;
pub mod execution;
pub mod mail;
pub mod plan;
pub mod queue;
pub mod registry;
pub mod secrets;
pub mod store;
pub mod telemetry;

use std::sync::Arc;

use countersign_proto::describe::{ApprovalNeed, Describe};

pub use accounts::limits::Limits;
pub use countersign_pack::{ids, ApiError, ApiResult};
pub use execution::builtin_pack;
pub use registry::{Capability, Registry};
pub use store::Store;

/// One gateway's engine: its store, identity, caps, and the capabilities it offers.
pub struct Engine {
    pub store: Store,
    pub gateway_id: String,
    /// Signs identity proofs and enrollment receipts; invites carry its fingerprint.
    pub identity: ed25519_dalek::SigningKey,
    pub name: String,
    /// Caps per agent and rates per token.
    pub limits: Limits,
    pub registry: &'static Registry,
    /// Previews being evaluated, per agent.
    pub previews: Arc<execution::inflight::InFlight>,
    /// Who must approve what (`docs/policy.md`).
    pub policy: Arc<countersign_policy::Policy>,
    /// Where the gateway is in stopping.
    pub shutdown: execution::shutdown::Shutdown,
}

impl Engine {
    /// The engine over `store`, its queue rebuilt where an older database lacks summaries, and
    /// its sweeper running for as long as the engine lives.
    pub async fn start(
        store: Store,
        name: &str,
        limits: Limits,
        registry: &'static Registry,
    ) -> anyhow::Result<Arc<Engine>> {
        let policy = countersign_policy::Policy::builtin();
        Engine::start_with_policy(store, name, limits, registry, policy).await
    }

    /// [`Engine::start`] under `policy`; open plans stored under another policy are evaluated
    /// again first (`policy_change`).
    pub async fn start_with_policy(
        store: Store,
        name: &str,
        limits: Limits,
        registry: &'static Registry,
        policy: countersign_policy::Policy,
    ) -> anyhow::Result<Arc<Engine>> {
        let gateway_id = store.gateway_id().await?;
        let identity = accounts::identity::load_or_create(&store).await?;
        queue::backfill(&store, registry)
            .await
            .map_err(|e| anyhow::anyhow!("the queue could not be rebuilt: {}", e.message))?;
        let engine = Arc::new(Engine {
            store,
            gateway_id,
            identity,
            name: name.to_owned(),
            previews: execution::inflight::InFlight::new("previews", limits.max_previews_in_flight),
            limits,
            registry,
            policy: Arc::new(policy),
            shutdown: Default::default(),
        });
        approval::policy_change::activate(&engine)
            .await
            .map_err(|e| {
                anyhow::anyhow!("the open plans could not be evaluated again: {}", e.message)
            })?;
        queue::spawn_sweeper(&engine);
        Ok(engine)
    }

    /// What `describe` tells an agent of `capability` under the policy in force: a policy of
    /// the gateway's own may make any request wait, by rules no description can foresee.
    pub fn describe(&self, capability: Capability) -> Describe {
        let mut describe = capability.describe().clone();
        if !self.policy.is_builtin() {
            describe.approval.needed = ApprovalNeed::DependsOnRequest;
        }
        describe
    }

    /// The registered capability `id`, or `not_found`.
    pub fn capability(&self, id: &str) -> ApiResult<Capability> {
        self.registry
            .get(id)
            .ok_or_else(|| ApiError::not_found("capability"))
    }
}
