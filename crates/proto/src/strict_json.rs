//! JSON with one meaning: an object that names a key twice is refused, since parsers disagree on
//! which value wins. The gateway refuses such requests (a plan must come from an unambiguous
//! request); the console refuses such answers (what it shows must be what the digest covers).

use std::borrow::Cow;
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
        let mut keys = Keys::default();
        while let Some(Key(key)) = map.next_key()? {
            if let Err(key) = keys.insert(key) {
                return Err(de::Error::custom(format!("the key {key:?} appears twice")));
            }
            map.next_value::<OneMeaning>()?;
        }
        Ok(OneMeaning)
    }
}

/// An object's key, borrowed from the document unless it holds an escape: a listing of 1,000
/// plans has some 40,000 keys, and copying each one was most of this check's time.
struct Key<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(v.to_owned())))
    }
}

/// The keys of one object seen so far: a short list searched in order while the object is small
/// (most are), a hash set once it is not, so that a huge object costs linear time.
#[derive(Default)]
struct Keys<'de> {
    few: Vec<Cow<'de, str>>,
    many: Option<HashSet<Cow<'de, str>>>,
}

impl<'de> Keys<'de> {
    const FEW: usize = 16;

    /// The key back when the object already holds it.
    fn insert(&mut self, key: Cow<'de, str>) -> Result<(), Cow<'de, str>> {
        let known = match &self.many {
            Some(many) => many.contains(&key),
            None => self.few.contains(&key),
        };
        if known {
            return Err(key);
        }
        match &mut self.many {
            Some(many) => {
                many.insert(key);
            }
            None if self.few.len() < Self::FEW => self.few.push(key),
            None => {
                let mut many: HashSet<_> = self.few.drain(..).collect();
                many.insert(key);
                self.many = Some(many);
            }
        }
        Ok(())
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

    #[test]
    fn a_key_twice_is_found_in_a_large_object_and_behind_an_escape() {
        let keys: Vec<String> = (0..100).map(|i| format!("\"k{i}\": {i}")).collect();
        let large = format!("{{{}}}", keys.join(", "));
        assert!(check(large.as_bytes()).is_ok());
        let early_again = format!("{{{}, \"k3\": 0}}", keys.join(", "));
        let twice = check(early_again.as_bytes()).unwrap_err();
        assert!(twice.contains("\"k3\" appears twice"), "{twice}");
        // `\u0061` is `a`: the same key to every parser.
        assert!(check(br#"{"a": 1, "\u0061": 2}"#).is_err());
        assert!(check(br#"{"\u0061": 1, "b": 2}"#).is_ok());
    }
}
