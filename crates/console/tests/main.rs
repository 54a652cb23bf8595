//! The console's integration tests, one binary: each file beside this one is a module of it, so
//! the shared helpers in `common/` and the console's dependencies are compiled and linked once.

mod common;

mod decisions;
mod hostile_plans;
mod notify;
mod outbox;
mod plans;
mod review;
mod session;
mod settings;
mod ts_types;
mod window;
