//! The capability-pack interface: everything a team's own capability depends on, and nothing else.
//!
//! A capability is a type implementing [`Definition`] (id, description, effects, approval rule,
//! and `plan`, the one evaluation that preview and execution share) and either
//! [`WorldCapability`] (`apply`, inside the engine's write transaction) or
//! [`ExternalCapability`] (`call`, outside it, within the reserved budget). Capabilities ship in
//! a [`Pack`], optionally with the [`Domain`] whose resources they read (revisions, and who may
//! act on what). Reads and writes go through a [`Handle`] on the engine's transaction, which is
//! the same for SQLite and PostgreSQL.
//!
//! This crate depends on `countersign-proto` and on no other workspace crate: never on the
//! engine, the HTTP API, or the server. A pack that builds against it alone can be registered
//! by any gateway.

pub mod build;
mod capability;
mod error;
mod external;
mod handle;
pub mod ids;
mod plan;
mod sql;

pub use capability::{
    BoxFuture, Definition, Domain, ExternalCapability, Kind, Pack, Probe, WorldCapability,
    MAX_STRING,
};
pub use error::{ApiError, ApiResult};
pub use external::{Called, ExternalCall, Output};
pub use handle::Handle;
pub use plan::{
    parse, Applied, ApprovalRule, EffectProfile, Execution, JournalEntry, Planned, PlannedEffect,
    Subject, Target,
};
pub use sql::{Dialect, Flag};
