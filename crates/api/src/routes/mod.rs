//! HTTP handlers, one file per part of the API; each is one engine call, and carries the
//! OpenAPI description of its operation.

pub mod agent;
pub mod approver;
pub mod decisions;
pub mod events;
pub mod health;
pub mod invoke;
pub mod mail;
pub mod plans;
pub mod standing;
pub mod stats;
