//! Bearer tokens and enrollment codes: made random, stored only as their SHA-256.

use sha2::{Digest, Sha256};

use crate::ids;

/// A bearer token or enrollment code: 32 random bytes, prefixed so leaks are recognisable.
pub fn new_secret(prefix: &str) -> String {
    ids::random_id(prefix, 32)
}

pub fn secret_hash(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// `url` with any password in it replaced, fit for an error or a log line: database and SMTP
/// URLs may carry credentials, and those never leave in a message.
pub fn redacted_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        Ok(parsed) => parsed.to_string(),
        // Not a URL: nothing of it is repeated, since it could be anything.
        Err(_) => "(an address that does not parse)".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_in_urls_are_never_repeated() {
        let shown = redacted_url("postgres://app:hunter2@db.internal:5432/countersign");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("app:***@db.internal"), "{shown}");
        let shown = redacted_url("smtps://mail:hunter2@relay.example");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert_eq!(
            redacted_url("sqlite:///var/lib/gw.db"),
            "sqlite:///var/lib/gw.db"
        );
        assert!(!redacted_url("postgres://a:hunter2@[bad").contains("hunter2"));
    }
}
