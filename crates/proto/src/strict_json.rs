//! JSON with one meaning: an object that names a key twice is refused, since parsers disagree on
//! which value wins. The gateway refuses such requests (a plan must come from an unambiguous
//! request); the console refuses such answers (what it shows must be what the digest covers).

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, Deserialize as _, Deserializer, MapAccess, SeqAccess, Visitor};

/// Walks a JSON document and fails on the first object holding a key twice.
struct OneMeaning;

impl<'de> de::Deserialize<'de> for OneMeaning {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(OneMeaning)
    }
}

impl<'de> Visitor<'de> for OneMeaning {
    type Value = OneMeaning;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(OneMeaning)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(OneMeaning)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(OneMeaning)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(OneMeaning)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(OneMeaning)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(OneMeaning)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<OneMeaning>()?.is_some() {}
        Ok(OneMeaning)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut keys = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !keys.insert(key.clone()) {
                return Err(de::Error::custom(format!("the key {key:?} appears twice")));
            }
            map.next_value::<OneMeaning>()?;
        }
        Ok(OneMeaning)
    }
}

/// Refuses a document with a duplicate key anywhere; other syntax errors are left to the parser
/// that reads the document for real, whose messages name the field.
pub fn check(bytes: &[u8]) -> Result<(), String> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    match OneMeaning::deserialize(&mut deserializer) {
        Err(e) if e.is_data() => Err(e.to_string()),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn a_key_twice_at_any_depth_is_refused() {
        assert!(check(br#"{"a": 1, "b": {"c": [1, {"d": 2}]}}"#).is_ok());
        let twice = check(br#"{"p": {"days": 14, "days": 7}}"#).unwrap_err();
        assert!(twice.contains("\"days\" appears twice"), "{twice}");
        assert!(check(br#"[{"x": 1}, {"y": [{"z": 1, "z": 1}]}]"#).is_err());
        // Syntax errors are the real parser's to report.
        assert!(check(b"{\"a\": ").is_ok());
    }
}
