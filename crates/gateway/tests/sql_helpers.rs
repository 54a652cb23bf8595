//! The pack interface's SQL helpers answer alike on both stores (this suite's store, SQLite or
//! PostgreSQL as `make test`'s pass chooses).

use crate::common::Gateway;

/// `read_rows` reads back exactly the rows selected, in order, on either store (SQLite folds
/// them into one JSON value, PostgreSQL reads rows): text of any script and with characters JSON
/// must escape, integers past 2^53, and no rows at all.
#[tokio::test]
async fn read_rows_reads_back_the_rows_selected() {
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
    let mut conn = pool.acquire().await.unwrap();
    let mut rows = async |prefix: &str| -> Vec<(String, String, i64)> {
        let prefix = prefix.to_owned();
        let rest = "FROM users WHERE id LIKE $1 || '%'";
        dialect
            .read_rows(&mut conn, ("id, name, revision", rest, "id DESC"), |q| {
                q.bind(prefix)
            })
            .await
            .unwrap()
    };
    let expected: Vec<(String, String, i64)> = people
        .iter()
        .rev()
        .map(|(id, name, revision)| (id.to_string(), name.to_string(), *revision))
        .collect();
    assert_eq!(rows("usr_").await, expected);
    assert_eq!(rows("nobody").await, vec![]);
}
