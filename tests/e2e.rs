//! The end-to-end suites, one binary: each is a module, so the crates under test are linked once.
//! `app` and `demo_plans` are the desktop suites' helpers; `support.rs` (the library) has the rest.

mod app;
mod demo_plans;

mod access;
mod accounts;
mod console;
mod console_agent;
mod console_edges;
mod console_policy;
mod console_proxy;
mod console_standing;
mod credentials;
mod desktop;
mod flow;
mod fuzz_replay;
mod kill;
mod mcp;
mod mcp_tasks;
mod notifications;
mod reads;
mod schemathesis;
mod sync;
