//! The demo world: seed 004's workspace-admin domain (people, nested groups, entitlements,
//! projects with items under legal hold, seats, storage quotas, documents) with the ids of
//! `shared/fixtures`, its five capabilities, and a simulated agent that keeps producing plans.
//!
//! A capability pack like any team's: it depends on `countersign-pack` (and what its job needs:
//! sqlx for its tables, reqwest for the simulated agent's calls), never on the engine or the
//! server.

mod capabilities;
mod domain;
mod seed;
pub mod sim;
mod world;

use countersign_pack::Pack;

pub use seed::seed;
pub use world::{bump, project_not_found, table_of, PROJECT};

/// The demo world's capabilities, in the order `GET /v1/capabilities` lists them, and its domain.
pub fn pack() -> Pack {
    Pack::new("world", capabilities::all()).with_domain(domain::World)
}
