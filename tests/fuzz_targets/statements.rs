//! Targets that read signed and reviewed things: a plan record as the console receives it, a
//! decision's or a standing approval's envelope, a line of an exported in-toto audit.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use chrono::{TimeZone, Utc};
use countersign_console::audit::intoto::{self, InTotoStatement};
use countersign_console::client::parse_plan;
use countersign_console::review::{groups, plan_view};
use countersign_proto::decision::Statement;
use countersign_proto::dsse::{decode_public_key, Envelope};
use countersign_proto::standing::StandingStatement;
use countersign_proto::statement::Signed;
use ed25519_dalek::VerifyingKey;
use serde_json::Value;

use super::{signed, Depth};

/// A plan record as the console receives it: parsed, reviewed, grouped. An approvable view must
/// be one whose digest the console computed and found matching.
pub fn plan(bytes: &[u8]) -> Depth {
    let Ok(fetched) = parse_plan("plan_fuzz", bytes) else {
        return Depth::Refused;
    };
    let now = Utc.with_ymd_and_hms(2026, 11, 30, 10, 5, 0).unwrap();
    let view = plan_view(&fetched, None, Some("apr_fuzz"), now);
    assert!(
        !view.approvable || view.digest_matches,
        "approvable without its digest"
    );
    groups(&fetched.record.plan.effects);
    match view.digest_matches {
        true => Depth::Through,
        false => Depth::Parsed,
    }
}

/// A decision envelope, with or without the key to check it with (`{"public_key", "envelope"}`):
/// opening it either fails or yields a statement sealed by its signature ([`sealed`]).
pub fn envelope(bytes: &[u8]) -> Depth {
    opened::<Statement>(bytes)
}

/// A standing approval's envelope, as [`envelope`] a decision's.
pub fn standing(bytes: &[u8]) -> Depth {
    opened::<StandingStatement>(bytes)
}

fn opened<S: Signed>(bytes: &[u8]) -> Depth {
    let (key, envelope) = match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(mut pair)) if pair.contains_key("envelope") => {
            let key = pair
                .get("public_key")
                .and_then(Value::as_str)
                .and_then(|k| decode_public_key(k).ok());
            (key, pair.remove("envelope").unwrap_or_default())
        }
        Ok(other) => (None, other),
        Err(_) => return Depth::Refused,
    };
    let Ok(envelope) = serde_json::from_value::<Envelope>(envelope) else {
        return Depth::Refused;
    };
    let _ = envelope.signature();
    let _ = envelope.signature_bytes();
    if let Ok(payload) = envelope.payload_bytes() {
        if let Ok(statement) = S::from_payload(&payload) {
            let _ = statement.canonical_bytes();
        }
    }
    let Some(key) = key else {
        return Depth::Parsed;
    };
    let Ok(statement) = S::open(&envelope, &key) else {
        return Depth::Parsed;
    };
    sealed(&envelope, &statement, &key);
    Depth::Through
}

/// What an opened statement must be: its payload is the statement's own canonical bytes, and the
/// signature seals every byte of it and its type, so that no change to either opens again.
fn sealed<S: Signed>(envelope: &Envelope, statement: &S, key: &VerifyingKey) {
    let payload = envelope
        .payload_bytes()
        .expect("opened, so its payload decodes");
    assert_eq!(
        statement.canonical_bytes().ok().as_deref(),
        Some(&payload[..]),
        "opened a payload that is not the statement's canonical form"
    );
    for at in [0, payload.len() / 2, payload.len() - 1] {
        let mut altered = payload.clone();
        altered[at] ^= 0x20;
        let tampered = Envelope {
            payload: STANDARD.encode(&altered),
            ..envelope.clone()
        };
        assert!(
            S::open(&tampered, key).is_err(),
            "a payload changed at byte {at} still opens"
        );
    }
    let retyped = Envelope {
        payload_type: format!("{}+x", envelope.payload_type),
        ..envelope.clone()
    };
    assert!(
        S::open(&retyped, key).is_err(),
        "another payload type still opens"
    );
}

/// A line of an exported audit (`docs/audit-export.md`), checked offline against the fixed test
/// keys: it verifies, or says why not; and a line that verifies no longer does once a byte of it
/// changes.
pub fn intoto(bytes: &[u8]) -> Depth {
    let Ok(line) = std::str::from_utf8(bytes) else {
        return Depth::Refused;
    };
    if serde_json::from_str::<InTotoStatement>(line).is_err() {
        return Depth::Refused;
    }
    let keys = signed::keys();
    if intoto::verify(line, &keys).is_err() {
        return Depth::Parsed;
    }
    let line = line.trim_end();
    for at in [0, line.len() / 2, line.len() - 1] {
        let mut altered = line.as_bytes().to_vec();
        altered[at] ^= 1;
        if let Ok(altered) = String::from_utf8(altered) {
            assert!(
                intoto::verify(&altered, &keys).is_err(),
                "a line changed at byte {at} still verifies"
            );
        }
    }
    Depth::Through
}
