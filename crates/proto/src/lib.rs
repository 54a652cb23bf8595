//! The wire contract of `spec/PROTOCOL.md`: types shared by the gateway, the console and the CLI,
//! the canonical digests that bind a plan, and the signed decision that countersigns it.

pub mod agent_call;
pub mod approvals;
pub mod credits;
pub mod decision;
pub mod describe;
pub mod digest;
pub mod dsse;
pub mod enrollment;
pub mod envelope;
pub mod error;
pub mod guard;
pub mod keys;
pub mod loopback;
pub mod mail;
pub mod plan;
pub mod receipt;
pub mod risk;
pub mod rules;
pub mod standing;
pub mod statement;
pub mod stats;
pub mod strict_json;

pub use credits::Credits;
pub use error::ErrorCode;

/// The protocol version this crate speaks.
pub const INTERFACE_VERSION: &str = "1.0";
