//! The pack interface's SQL helpers answer alike on both stores (this suite's store, SQLite or
//! PostgreSQL as `make test`'s pass chooses).

use crate::common::Gateway;

/// What `json_rows` folds into one value reads back as exactly the rows selected, in order: text
/// of any script and with characters JSON must escape, integers, and no rows at all.
#[tokio::test]
async fn json_rows_reads_back_as_the_rows_selected() {
    let gw = Gateway::bare().await;
    let pool = gw.state.store.pool();
    let people = [
        ("usr_a", "Ann \"Nan\" O'Neil \\ 100%", 1_i64),
        (
            "usr_b",
            "Zoë\tand\nnext — 東京 \u{1F600} \u{1}",
            9_007_199_254_740_993,
        ),
        ("usr_c", "", -3),
    ];
    for (id, name, revision) in people {
        sqlx::query(
            "INSERT INTO users (id, name, email, employment, revision)
             VALUES ($1, $2, 'x@example.com', 'employee', $3)",
        )
        .bind(id)
        .bind(name)
        .bind(revision)
        .execute(pool)
        .await
        .unwrap();
    }
    let dialect = gw.state.store.dialect();
    let rows = |filter: &'static str| {
        let sql = format!(
            "SELECT {} FROM users WHERE {filter}",
            dialect.json_rows("id, name, revision", "id DESC")
        );
        async move {
            let text: String = sqlx::query_scalar(&sql).fetch_one(pool).await.unwrap();
            serde_json::from_str::<Vec<(String, String, i64)>>(&text).unwrap()
        }
    };
    let expected: Vec<(String, String, i64)> = people
        .iter()
        .rev()
        .map(|(id, name, revision)| (id.to_string(), name.to_string(), *revision))
        .collect();
    assert_eq!(rows("id LIKE 'usr_%'").await, expected);
    assert_eq!(rows("id = 'nobody'").await, vec![]);
}
