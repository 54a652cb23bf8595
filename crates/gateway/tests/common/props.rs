//! What the property tests share: a runtime per case, raw SQL on a bare world, and how many cases.

use std::collections::BTreeSet;

use super::Gateway;

/// Cases per property: 256 in `make test`, more under `make soak` (`COUNTERSIGN_PROPERTY_CASES`).
pub fn cases() -> u32 {
    std::env::var("COUNTERSIGN_PROPERTY_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(256)
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

pub async fn exec(gw: &Gateway, sql: &str) {
    sqlx::query(sql)
        .execute(gw.state.store.pool())
        .await
        .unwrap();
}

pub async fn ids(gw: &Gateway, sql: &str) -> BTreeSet<String> {
    let rows: Vec<String> = sqlx::query_scalar(sql)
        .fetch_all(gw.state.store.pool())
        .await
        .unwrap();
    rows.into_iter().collect()
}
