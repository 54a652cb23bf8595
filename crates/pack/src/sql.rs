//! What SQL written once for both stores needs.

mod dialect;
mod flag;

pub use dialect::Dialect;
pub use flag::Flag;
