//! The keyring crate falls back to an in-memory mock when a build enables no backend for its
//! platform: the key would vanish with the process, silently. Every keyring use goes through
//! [`require`], which refuses that.

use crate::error::ConsoleError;

/// The keyring service every Countersign secret is filed under; the account is the gateway id.
pub const KEYRING_SERVICE: &str = "countersign";

/// Fails unless `entry` is kept by a real OS store.
pub fn require(entry: keyring::Entry) -> Result<keyring::Entry, ConsoleError> {
    if entry.get_credential().is::<keyring::mock::MockCredential>() {
        return Err(ConsoleError::Keyring(
            "this build has no OS keyring backend (only an in-memory mock); keys would be lost"
                .to_owned(),
        ));
    }
    Ok(entry)
}

/// Checks at start-up that the keyring is a real store, before anything is enrolled or signed.
pub fn check() -> Result<(), ConsoleError> {
    require(keyring::Entry::new(KEYRING_SERVICE, "start-up check")?).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_build_has_a_real_keyring_backend() {
        assert!(check().is_ok(), "{:?}", check());
    }

    #[test]
    fn a_mock_keyring_is_refused() {
        let mock = keyring::Entry::new_with_credential(
            keyring::mock::default_credential_builder()
                .build(None, "countersign", "x")
                .unwrap(),
        );
        assert!(matches!(require(mock), Err(ConsoleError::Keyring(_))));
    }
}
