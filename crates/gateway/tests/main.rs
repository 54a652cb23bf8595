//! The gateway's integration tests, one binary: each file beside this one is a module of it, so
//! the shared helpers in `common/` and the gateway's dependencies are compiled and linked once.

mod common;

mod abandoned_begins;
mod accounts;
mod amend;
mod availability;
mod backup;
mod bounds;
mod capabilities;
mod caps;
mod cli;
mod config_file;
mod consequences;
mod decisions;
mod drift;
mod embedded;
mod envelope;
mod error_table;
mod example_pack;
mod health;
mod hostile;
mod instances;
mod lifecycle;
mod mail;
mod mail_remedies;
mod mcp_http;
mod moved_reads;
mod openapi;
mod paired;
mod people;
mod policy;
mod properties;
mod properties_resources;
mod provider_adapters;
mod provider_flow;
mod provider_keys;
mod queue;
mod races;
mod revocation;
mod round_trips;
mod router;
mod scopes;
mod standing;
mod storage_faults;
mod withdrawal;
