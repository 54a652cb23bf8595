//! The few places where SQLite and PostgreSQL spell one thing differently. Everything else is
//! written once, with `$N` parameters, which both accept: capabilities' SQL included.

use serde::de::DeserializeOwned;
use sqlx::any::{AnyArguments, AnyRow};
use sqlx::{Any, AnyConnection, FromRow, Row};

/// A query on either store, as [`Dialect::read_rows`] hands it over for its parameters.
pub type AnyQuery<'q> = sqlx::query::Query<'q, Any, AnyArguments<'q>>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    pub fn of_url(url: &str) -> anyhow::Result<Dialect> {
        if url.starts_with("sqlite:") {
            Ok(Dialect::Sqlite)
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(Dialect::Postgres)
        } else {
            anyhow::bail!("the database URL must start with sqlite: or postgres://")
        }
    }

    pub fn of(conn: &AnyConnection) -> Dialect {
        if conn.backend_name() == "PostgreSQL" {
            Dialect::Postgres
        } else {
            Dialect::Sqlite
        }
    }

    /// A one-column table `value` of the strings in the JSON array bound at `$n`.
    pub fn json_strings(self, n: u8) -> String {
        match self {
            Dialect::Sqlite => format!("SELECT value FROM json_each(${n})"),
            Dialect::Postgres => {
                format!("SELECT jsonb_array_elements_text(${n}::jsonb) AS value")
            }
        }
    }

    /// The rows of `SELECT {columns} {rest} ORDER BY {order}` as `T`s (tuples of the columns), for
    /// large results; `bind` binds the parameters `rest` names (owned values: the query's text
    /// is made here). `rest` is a `FROM … WHERE …` without `GROUP BY` or `LIMIT` (SQLite folds the
    /// rows into one value), and the columns are text or numbers (a boolean reads as 0 or 1 on
    /// SQLite, a blob not at all).
    ///
    /// sqlx's SQLite driver passes each row from its worker thread on its own, which costs
    /// several times what reading the row does: on SQLite the database folds the rows into one
    /// JSON array, read as one value (100,000 rows: 0.96 s row by row, about 0.15 s so).
    /// PostgreSQL's rows come off the socket in the task that reads them, and building JSON
    /// there costs more than that (0.4 s against 0.13 s): it reads rows.
    pub async fn read_rows<T>(
        self,
        conn: &mut AnyConnection,
        (columns, rest, order): (&str, &str, &str),
        bind: impl for<'q> FnOnce(AnyQuery<'q>) -> AnyQuery<'q>,
    ) -> Result<Vec<T>, sqlx::Error>
    where
        T: DeserializeOwned + for<'r> FromRow<'r, AnyRow> + Send + Unpin,
    {
        match self {
            Dialect::Sqlite => {
                let sql = format!(
                    "SELECT coalesce(json_group_array(json_array({columns}) ORDER BY {order}), \
                     '[]') {rest}"
                );
                let row = bind(sqlx::query(&sql)).fetch_one(conn).await?;
                let text: String = row.try_get(0)?;
                serde_json::from_str(&text).map_err(|e| sqlx::Error::Decode(Box::new(e)))
            }
            Dialect::Postgres => {
                let sql = format!("SELECT {columns} {rest} ORDER BY {order}");
                let rows = bind(sqlx::query(&sql)).fetch_all(conn).await?;
                rows.iter().map(T::from_row).collect()
            }
        }
    }

    /// The RFC 3339 UTC timestamp `days` (an integer expression) after the timestamp `column`.
    pub fn days_after(self, column: &str, days: &str) -> String {
        match self {
            Dialect::Sqlite => {
                format!("strftime('%Y-%m-%dT%H:%M:%SZ', {column}, '+' || {days} || ' days')")
            }
            Dialect::Postgres => format!(
                "to_char(({column})::timestamptz AT TIME ZONE 'UTC' \
                 + make_interval(days => ({days})::int), 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
            ),
        }
    }

    /// The text of a JSON text column's top-level boolean `key`, `'true'` or `'false'`.
    pub fn json_flag(self, column: &str, key: &str) -> String {
        match self {
            Dialect::Sqlite => format!(
                "CASE json_extract({column}, '$.{key}') WHEN 1 THEN 'true' \
                 WHEN 0 THEN 'false' END"
            ),
            Dialect::Postgres => format!("(({column})::jsonb ->> '{key}')"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_names_its_dialect() {
        assert_eq!(Dialect::of_url("sqlite::memory:").unwrap(), Dialect::Sqlite);
        assert_eq!(
            Dialect::of_url("postgres://u@h/d").unwrap(),
            Dialect::Postgres
        );
        assert_eq!(
            Dialect::of_url("postgresql://u@h/d").unwrap(),
            Dialect::Postgres
        );
        assert!(Dialect::of_url("mysql://u@h/d").is_err());
    }
}
