//! The Countersign console without a window: talks to a gateway, keeps the approver's key in the
//! OS keyring, turns plans into what an approver reviews, and signs decisions.

pub mod amend;
pub mod audit;
pub mod client;
pub mod console;
pub mod error;
pub mod insights;
pub mod live;
pub mod mail;
pub mod private_files;
pub mod review;
pub mod session;
pub mod settings;
pub mod signing;
pub mod standing;
pub mod text;
pub mod transport;
mod wire;

pub use client::GatewayClient;
pub use console::Console;
pub use countersign_proto::decision::Decision;
pub use error::{ConsoleError, ErrorView};
pub use review::batch::{BatchItem, BatchOutcome, BatchView};
pub use settings::{load_settings, save_settings, Settings, SettingsView};
pub use signing::confirm::Confirm;
