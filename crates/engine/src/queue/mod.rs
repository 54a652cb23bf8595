//! The approval queue kept ready to serve. Every change a console should see goes through
//! [`publish`] (or [`mark_stale_readers`]), which rewrites the plan's stored summary and logs an
//! event; a listing then reads stored summaries, and a conditional poll needs only the revision.

pub mod cursors;
pub mod events;
mod listing;
mod sweeper;

pub use listing::*;

pub(crate) use sweeper::spawn as spawn_sweeper;
