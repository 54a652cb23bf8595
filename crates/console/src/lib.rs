//! The Countersign console without a window: talks to a gateway, keeps the approver's key in the
//! OS keyring, turns plans into what an approver reviews, and signs decisions.

pub mod changed;
pub mod client;
pub mod console;
pub mod diff;
pub mod error;
pub mod events;
pub mod journal;
pub mod live;
pub mod notify;
pub mod os_keyring;
pub mod private_files;
pub mod review;
pub mod session;
pub mod signer;
pub mod sync;
pub mod transport;

pub use client::GatewayClient;
pub use console::Console;
pub use error::ConsoleError;
