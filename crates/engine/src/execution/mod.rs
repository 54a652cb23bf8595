//! Running an approved plan: in one write transaction for a world capability (`invoke`), in
//! three steps around a provider call (`external`); what an agent may keep and spend (`quotas`,
//! `wallet`, the budget `guard`), how many slow requests of one caller run at once
//! (`inflight`), and what a gateway that stops does with what it runs (`shutdown`).

pub mod external;
mod guard;
pub mod inflight;
pub mod invoke;
pub mod quotas;
pub mod shutdown;
pub mod wallet;

pub use guard::pack as builtin_pack;
