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
