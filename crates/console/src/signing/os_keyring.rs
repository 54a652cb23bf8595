//! The keyring crate falls back to an in-memory mock when a build enables no backend for its
//! platform: the key would vanish with the process, silently. Every keyring use goes through
//! [`require`], which refuses that, and [`call`], which waits out a Secret Service restart.

use std::time::Duration;

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

/// How long [`call`] waits before each new attempt: 1.5 s in all, long enough for a session
/// manager (or tests/with-keyring.sh) to start a keyring daemon again.
const RETRY_PAUSES: [Duration; 4] = [
    Duration::from_millis(100),
    Duration::from_millis(200),
    Duration::from_millis(400),
    Duration::from_millis(800),
];

/// Runs a keyring read, write or delete, again after a pause when the store could not be
/// reached. gnome-keyring 42 aborts now and then when a client goes away in the middle of a
/// request (GNOME/gnome-keyring#196), and systemd starts it again; a signature should not fail
/// for that. Each of the three calls is idempotent, so a repeat after a lost answer is harmless.
/// An answer of the store (no entry, locked, denied) is returned at once.
pub fn call<T>(op: impl FnMut() -> keyring::Result<T>) -> keyring::Result<T> {
    call_with_pauses(&RETRY_PAUSES, op)
}

fn call_with_pauses<T>(
    pauses: &[Duration],
    mut op: impl FnMut() -> keyring::Result<T>,
) -> keyring::Result<T> {
    let mut pauses = pauses.iter();
    loop {
        match op() {
            Err(keyring::Error::PlatformFailure(e)) => match pauses.next() {
                Some(pause) => {
                    tracing::warn!("the OS keyring could not be reached ({e}); trying again");
                    std::thread::sleep(*pause);
                }
                None => return Err(keyring::Error::PlatformFailure(e)),
            },
            answer => return answer,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unreachable_store() -> keyring::Error {
        keyring::Error::PlatformFailure("Message recipient disconnected from message bus".into())
    }

    /// Runs [`call_with_pauses`] over `answers`, one per attempt; its result and the attempts.
    fn attempts(
        answers: Vec<keyring::Result<&'static str>>,
    ) -> (keyring::Result<&'static str>, usize) {
        let mut answers = answers.into_iter();
        let mut made = 0;
        let result = call_with_pauses(&[Duration::ZERO; 4], || {
            made += 1;
            answers.next().expect("an answer for every attempt")
        });
        (result, made)
    }

    #[test]
    fn a_store_that_comes_back_is_asked_again() {
        let (result, made) = attempts(vec![
            Err(unreachable_store()),
            Err(unreachable_store()),
            Ok("key"),
        ]);
        assert_eq!(result.unwrap(), "key");
        assert_eq!(made, 3);
    }

    #[test]
    fn the_stores_own_answer_is_not_repeated() {
        let (result, made) = attempts(vec![Err(keyring::Error::NoEntry)]);
        assert!(matches!(result, Err(keyring::Error::NoEntry)));
        assert_eq!(made, 1);
    }

    #[test]
    fn a_store_that_stays_away_fails_after_the_last_pause() {
        let (result, made) = attempts((0..5).map(|_| Err(unreachable_store())).collect());
        assert!(matches!(result, Err(keyring::Error::PlatformFailure(_))));
        assert_eq!(made, 5);
    }

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
