//! Yes/no columns. Both databases keep them as integers 0 and 1 (one schema for both), and a
//! PostgreSQL comparison yields a boolean; `Flag` decodes either, where `bool` takes only the
//! latter through the `Any` driver.

use sqlx::any::AnyTypeInfo;
use sqlx::decode::Decode;
use sqlx::error::BoxDynError;
use sqlx::{Any, Database, Type};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Flag(pub bool);

impl Type<Any> for Flag {
    fn type_info() -> AnyTypeInfo {
        <i64 as Type<Any>>::type_info()
    }

    fn compatible(ty: &AnyTypeInfo) -> bool {
        <i64 as Type<Any>>::compatible(ty) || <bool as Type<Any>>::compatible(ty)
    }
}

impl<'r> Decode<'r, Any> for Flag {
    fn decode(value: <Any as Database>::ValueRef<'r>) -> Result<Self, BoxDynError> {
        match <i64 as Decode<Any>>::decode(value.clone()) {
            Ok(n) => Ok(Flag(n != 0)),
            Err(_) => <bool as Decode<Any>>::decode(value).map(Flag),
        }
    }
}
