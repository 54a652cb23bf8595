//! Live sync: the gateway's event stream first, conditional polling when the stream is down, and
//! an explicit link state (online, degraded, offline) with the last successful sync.

pub mod clock;
pub mod events;
mod link;
pub mod notify;
pub mod reminders;
mod rows;
pub(crate) mod snapshot;
pub mod snooze;
pub mod sync;
pub mod window;

pub use link::*;
