//! Where a page of a listing ordered by (time, id) ends: a prefix naming the listing and the hex
//! of the time and id it ends after. Opaque to clients, plain in any query string, and one
//! pattern in the OpenAPI description (`^q_(?:[2-7][0-9a-f])*0a(?:[2-7][0-9a-f])*$` for the queue).

/// The cursor of listing `prefix` (`"q_"`, `"s_"`) after the row at `at` with id `id`.
pub fn encode(prefix: &str, at: &str, id: &str) -> String {
    format!("{prefix}{}", hex::encode(format!("{at}\n{id}")))
}

/// The time and id a cursor of listing `prefix` ends after, if it is one.
pub fn decode(prefix: &str, cursor: &str) -> Option<(String, String)> {
    let text = String::from_utf8(hex::decode(cursor.strip_prefix(prefix)?).ok()?).ok()?;
    let (at, id) = text.split_once('\n')?;
    Some((at.to_owned(), id.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_strangers() {
        let cursor = encode("q_", "2026-11-30T10:15:00Z", "plan_1");
        assert_eq!(
            decode("q_", &cursor),
            Some(("2026-11-30T10:15:00Z".to_owned(), "plan_1".to_owned()))
        );
        assert_eq!(decode("s_", &cursor), None);
        assert_eq!(decode("q_", "c_eff_1_00"), None);
        assert_eq!(decode("q_", "q_zz"), None);
        assert_eq!(
            decode("q_", &format!("q_{}", hex::encode("no newline"))),
            None
        );
    }
}
