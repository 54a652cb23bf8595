//! What an approver reviews, computed in Rust from the plan as fetched: the queue rows and the
//! plan's changes, effects, validation, cost, and whether it may be approved (and why not).

pub mod batch;
mod causes;
pub mod changed;
pub mod diff;
pub mod execution;
pub mod media;
pub(crate) mod overlap;
pub mod queue;
pub mod request;
pub mod rules;
pub mod sample;
pub(crate) mod subject_sets;
pub mod subjects;
mod view;
pub mod window;
pub mod words;

pub use view::*;

pub(crate) use overlap::Pages;
pub(crate) use subject_sets::SubjectCache;
pub use subject_sets::SubjectCheck;
