//! The Countersign console without a window: talks to a gateway, keeps the approver's key in the
//! OS keyring, turns plans into what an approver reviews, and signs decisions.

pub mod batch;
mod causes;
pub mod changed;
pub mod client;
pub mod confirm;
pub mod console;
mod decide;
pub mod diff;
pub mod error;
pub mod events;
pub mod execution;
pub mod history;
pub mod journal;
pub mod live;
pub mod media;
pub mod notify;
pub mod os_keyring;
mod overlap;
pub mod private_files;
pub mod queue;
pub mod request;
pub mod review;
pub mod rules;
pub mod sample;
pub mod session;
pub mod settings;
pub mod signer;
mod snapshot;
mod subject_sets;
pub mod subjects;
pub mod sync;
pub mod text;
pub mod transport;
mod wire;
pub mod words;

pub use batch::{BatchItem, BatchOutcome, BatchView};
pub use client::GatewayClient;
pub use confirm::Confirm;
pub use console::Console;
pub use countersign_proto::decision::Decision;
pub use error::{ConsoleError, ErrorView};
pub use settings::{load_settings, save_settings, Settings, SettingsView};
