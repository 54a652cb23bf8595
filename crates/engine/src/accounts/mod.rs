//! Agents, approvers, their keys and enrollment codes.

pub mod callers;
mod enrollment;
pub mod identity;
pub mod limits;
mod names;
pub mod scopes;

pub use enrollment::*;
