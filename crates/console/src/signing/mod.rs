//! Signing and the outbox: the approver's key and token in the OS keyring (`signer`, `os_keyring`),
//! the explicit yes before a risky signature (`confirm`), signed decisions (`decide`), and the
//! journal that keeps each envelope until the gateway answers it definitively (`journal`).

pub mod confirm;
pub(crate) mod decide;
pub mod journal;
pub mod os_keyring;
pub mod signer;

pub(crate) use decide::Checked;
