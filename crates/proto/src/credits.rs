//! Credits are decimal strings on the wire (`"0.09"`), never JSON numbers (seed 000).

use std::fmt;
use std::str::FromStr;

use rust_decimal::Decimal;
use serde::{de, Deserialize, Deserializer, Serialize, Serializer};

/// An amount of gateway credits, exact and with the scale it was written with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Credits(Decimal);

impl Credits {
    pub const ZERO: Credits = Credits(Decimal::ZERO);

    /// Decimal places of every amount the gateway writes, and the most a console accepts.
    pub const DECIMALS: u32 = 2;

    pub fn new(value: Decimal) -> Self {
        Credits(value)
    }

    pub fn value(self) -> Decimal {
        self.0
    }

    /// The amount with exactly two decimal places, as the gateway writes it.
    pub fn cents(value: i64) -> Self {
        Credits(Decimal::new(value, Credits::DECIMALS))
    }
}

impl fmt::Display for Credits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[derive(Debug, thiserror::Error)]
#[error("not a decimal credit amount: {0:?}")]
pub struct CreditsParseError(String);

impl FromStr for Credits {
    type Err = CreditsParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let plain = !s.is_empty()
            && s.trim() == s
            && s.chars()
                .all(|c| c.is_ascii_digit() || c == '.' || c == '-');
        if !plain {
            return Err(CreditsParseError(s.to_owned()));
        }
        Decimal::from_str_exact(s)
            .map(Credits)
            .map_err(|_| CreditsParseError(s.to_owned()))
    }
}

impl Serialize for Credits {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Credits {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct DecimalString;
        impl de::Visitor<'_> for DecimalString {
            type Value = Credits;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a decimal string such as \"0.09\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Credits, E> {
                v.parse().map_err(E::custom)
            }
        }
        deserializer.deserialize_str(DecimalString)
    }
}

/// On the wire a decimal string, signed, any scale (seed 000).
#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for Credits {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .pattern(Some(r"^-?[0-9]+(\.[0-9]+)?$"))
            .examples([serde_json::json!("0.09")])
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for Credits {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_written_scale() {
        let c: Credits = serde_json::from_str("\"0.00\"").unwrap();
        assert_eq!(serde_json::to_string(&c).unwrap(), "\"0.00\"");
        let c: Credits = serde_json::from_str("\"12.630\"").unwrap();
        assert_eq!(c.to_string(), "12.630");
    }

    #[test]
    fn refuses_numbers_and_junk() {
        assert!(serde_json::from_str::<Credits>("0.37").is_err());
        assert!(serde_json::from_str::<Credits>("\"1e3\"").is_err());
        assert!(serde_json::from_str::<Credits>("\" 1\"").is_err());
        assert!(serde_json::from_str::<Credits>("\"\"").is_err());
        assert!(serde_json::from_str::<Credits>("\"abc\"").is_err());
    }

    #[test]
    fn adds_exactly() {
        let a: Credits = "0.1".parse().unwrap();
        let b: Credits = "0.2".parse().unwrap();
        assert_eq!((a.value() + b.value()).to_string(), "0.3");
        assert_eq!(Credits::cents(37).to_string(), "0.37");
    }
}
