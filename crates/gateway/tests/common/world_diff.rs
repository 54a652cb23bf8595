//! The whole database as rows, and the difference between two such pictures as lines that read
//! `+ table {row}`, `- table {row}` and `~ table key column: before -> after`, so that what an
//! execution wrote can be held, row for row and value for value, against what its journal says.

use std::collections::{BTreeMap, BTreeSet};

use countersign_engine::store::Dialect;
use serde_json::{Map, Value};
use sqlx::AnyPool;

/// The gateway's (and SQLite's) own records about plans, people, keys and counters: not the
/// world a plan acts on.
pub const BOOKKEEPING: [&str; 17] = [
    "_sqlx_migrations",
    "sqlite_sequence",
    "meta",
    "agents",
    "agent_scopes",
    "enrollment_codes",
    "approvers",
    "approver_keys",
    "plans",
    "plan_subjects",
    "plan_reads",
    "plan_events",
    "decisions",
    "decisions_log",
    "invocations",
    "preview_audit",
    "execution_audit",
];

/// Table → primary key (as JSON text) → row.
pub type Rows = BTreeMap<String, BTreeMap<String, Map<String, Value>>>;

/// Every table of the store, with its columns in order and whether each is in the primary key.
pub async fn tables(pool: &AnyPool, dialect: Dialect) -> Vec<(String, Vec<(String, bool)>)> {
    let tables: Vec<String> = sqlx::query_scalar(match dialect {
        Dialect::Sqlite => "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
        Dialect::Postgres => {
            "SELECT table_name::text FROM information_schema.tables
             WHERE table_schema = current_schema() ORDER BY table_name"
        }
    })
    .fetch_all(pool)
    .await
    .unwrap();
    let mut out = Vec::new();
    for table in tables {
        let columns: Vec<(String, i64)> = sqlx::query_as(match dialect {
            Dialect::Sqlite => "SELECT name, pk FROM pragma_table_info($1) ORDER BY cid",
            Dialect::Postgres => {
                "SELECT c.column_name::text, CASE WHEN k.column_name IS NULL THEN 0 ELSE 1 END
                 FROM information_schema.columns c
                 LEFT JOIN information_schema.table_constraints t
                   ON t.table_schema = c.table_schema AND t.table_name = c.table_name
                  AND t.constraint_type = 'PRIMARY KEY'
                 LEFT JOIN information_schema.key_column_usage k
                   ON k.constraint_name = t.constraint_name AND k.table_schema = c.table_schema
                  AND k.column_name = c.column_name
                 WHERE c.table_schema = current_schema() AND c.table_name = $1
                 ORDER BY c.ordinal_position"
            }
        })
        .bind(&table)
        .fetch_all(pool)
        .await
        .unwrap();
        out.push((
            table,
            columns.into_iter().map(|(c, pk)| (c, pk > 0)).collect(),
        ));
    }
    out
}

/// Every row of every table that is not [`BOOKKEEPING`].
pub async fn rows(pool: &AnyPool) -> Rows {
    let dialect = Dialect::of(&pool.acquire().await.unwrap());
    let mut out = Rows::new();
    for (table, columns) in tables(pool, dialect).await {
        if BOOKKEEPING.contains(&table.as_str()) {
            continue;
        }
        let sql = match dialect {
            Dialect::Sqlite => {
                let object = columns
                    .iter()
                    .map(|(c, _)| format!("'{c}', \"{c}\""))
                    .collect::<Vec<_>>()
                    .join(", ");
                format!("SELECT json_object({object}) FROM \"{table}\"")
            }
            Dialect::Postgres => format!("SELECT row_to_json(t)::text FROM \"{table}\" t"),
        };
        let mut keyed = BTreeMap::new();
        for row in sqlx::query_scalar::<_, String>(&sql)
            .fetch_all(pool)
            .await
            .unwrap()
        {
            let row: Map<String, Value> = serde_json::from_str(&row).unwrap();
            let key: Vec<&Value> = columns
                .iter()
                .filter(|(_, pk)| *pk)
                .map(|(c, _)| &row[c])
                .collect();
            keyed.insert(serde_json::to_string(&key).unwrap(), row);
        }
        out.insert(table, keyed);
    }
    out
}

/// The columns an inserted or deleted row is compared on; the rest (generated ids, creation
/// times) no journal can know before the write. `None`: every column.
fn compared(table: &str) -> Option<&'static [&'static str]> {
    match table {
        "documents" => Some(&["filename", "mime_type", "project_id", "size_bytes"]),
        "email_outbox" => Some(&["plan_id", "recipient", "state", "user_id"]),
        _ => None,
    }
}

pub fn row_line(sign: char, table: &str, row: &Map<String, Value>) -> String {
    let shown: Map<String, Value> = match compared(table) {
        Some(columns) => columns
            .iter()
            .map(|c| ((*c).to_owned(), row.get(*c).cloned().unwrap_or(Value::Null)))
            .collect(),
        None => row.clone(),
    };
    format!("{sign} {table} {}", Value::Object(shown))
}

pub fn update_line(table: &str, key: &str, column: &str, before: &Value, after: &Value) -> String {
    format!("~ {table} {key} {column}: {before} -> {after}")
}

/// What changed from `before` to `after`, one line per inserted or deleted row and per changed
/// column of a row that stayed.
pub fn diff(before: &Rows, after: &Rows) -> BTreeSet<String> {
    let empty = BTreeMap::new();
    // Counted: rows compared without their generated id may be alike, and two alike rows
    // written where the journal names one must not pass as one.
    let mut lines: BTreeMap<String, usize> = BTreeMap::new();
    let tables: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    for table in tables {
        let (was, now) = (
            before.get(table).unwrap_or(&empty),
            after.get(table).unwrap_or(&empty),
        );
        for (key, row) in was {
            match now.get(key) {
                None => *lines.entry(row_line('-', table, row)).or_default() += 1,
                Some(new) => {
                    for (column, value) in row {
                        if new[column] != *value {
                            let line = update_line(table, key, column, value, &new[column]);
                            *lines.entry(line).or_default() += 1;
                        }
                    }
                }
            }
        }
        for (key, row) in now {
            if !was.contains_key(key) {
                *lines.entry(row_line('+', table, row)).or_default() += 1;
            }
        }
    }
    lines
        .into_iter()
        .map(|(line, n)| {
            if n == 1 {
                line
            } else {
                format!("{line} (×{n})")
            }
        })
        .collect()
}

/// The key of a row in [`Rows`] with a one-column primary key.
pub fn key(id: &str) -> String {
    serde_json::to_string(&[id]).unwrap()
}
