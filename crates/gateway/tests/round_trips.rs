//! How many statements the gateway sends its database for an approver's requests. On PostgreSQL
//! each is a round trip, the unit of a write's cost (docs/decisions.md, "A round trip is the
//! unit of a write's cost on PostgreSQL"): a statement more on a decision's path shows here before
//! it shows in `make bench`. Counted from sqlx's own record of every statement it runs (its
//! `sqlx::query` events). nextest runs each test in a process of its own, so what is counted is
//! this test's; the sweeper beside it may add a sweep to one request, so each count is the
//! fewest over three requests.

use std::sync::{Arc, Mutex, OnceLock};

use countersign_pack::Dialect;
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::Layer;

use crate::common::{Approver, Gateway};

/// The statements sqlx has run in this process since the last [`Statements::take`].
#[derive(Clone, Default)]
pub struct Statements(Arc<Mutex<Vec<String>>>);

impl Statements {
    pub fn installed() -> Statements {
        static LOG: OnceLock<Statements> = OnceLock::new();
        LOG.get_or_init(|| {
            let log = Statements::default();
            tracing::subscriber::set_global_default(
                tracing_subscriber::registry().with(log.clone()),
            )
            .expect("no other subscriber in this test process");
            log
        })
        .clone()
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(&mut self.0.lock().unwrap())
    }
}

/// The statement's text, the first line of it.
struct Text(Option<String>);

impl Visit for Text {
    fn record_str(&mut self, field: &Field, value: &str) {
        // sqlx leaves `db.statement` empty when the summary is the whole statement.
        let line = value.lines().map(str::trim).find(|l| !l.is_empty());
        if let (Some(line), "db.statement" | "summary") = (line, field.name()) {
            self.0 = Some(line.to_owned());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.record_str(field, &format!("{value:?}"));
    }
}

impl<S: tracing::Subscriber> Layer<S> for Statements {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() == "sqlx::query" {
            let mut text = Text(None);
            event.record(&mut text);
            self.0.lock().unwrap().push(text.0.unwrap_or_default());
        }
    }
}

/// The fewest statements any of `requests` ran, and those statements.
pub async fn fewest<F, Fut>(
    log: &Statements,
    store: &countersign_engine::Store,
    requests: usize,
    mut request: F,
) -> Vec<String>
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut fewest: Option<Vec<String>> = None;
    for n in 0..requests {
        log.take();
        request(n).await;
        flushed(store).await;
        let ran: Vec<String> = log
            .take()
            .into_iter()
            .filter(|s| s != FLUSH && s != "ROLLBACK")
            .collect();
        if fewest.as_ref().is_none_or(|f| ran.len() < f.len()) {
            fewest = Some(ran);
        }
    }
    fewest.unwrap_or_default()
}

/// What [`flushed`] runs; left out of the counts.
const FLUSH: &str = "SELECT 'statements flushed'";

/// Returns once every statement the store ran so far has been logged. sqlx logs a statement when
/// its stream ends, which on SQLite is in the connection's worker thread, and may come after the
/// caller has its row (a `fetch_optional` drops the stream at the first): one more statement on
/// every connection runs only after the ones before it, log included.
async fn flushed(store: &countersign_engine::Store) {
    let pool = store.pool();
    let mut held = Vec::new();
    for _ in 0..pool.size() {
        let mut conn = pool.acquire().await.unwrap();
        sqlx::query(FLUSH).execute(&mut *conn).await.unwrap();
        held.push(conn);
    }
    drop(held);
    let mut w = store.write().await.unwrap();
    sqlx::query(FLUSH).execute(&mut *w.tx).await.unwrap();
}

async fn pending_plans(gw: &Gateway, n: usize) -> Vec<serde_json::Value> {
    let mut plans = Vec::new();
    for i in 0..n {
        plans.push(
            gw.dry_run(json!({"project": "prj_184", "retention_days": 40 + i}))
                .await,
        );
    }
    plans
}

#[tokio::test]
async fn an_approval_is_eleven_statements_and_a_plan_record_five() {
    let log = Statements::installed();
    let gw = Gateway::new().await;
    let dana: Approver = gw.enroll_as("Dana", "usr_92").await;
    let plans = pending_plans(&gw, 3).await;

    let opened = fewest(&log, &gw.state.store, plans.len(), |n| {
        let (gw, dana, plan_id) = (&gw, &dana, plans[n]["plan_id"].as_str().unwrap());
        async move {
            let reply = gw.record(&dana.token, plan_id).await;
            assert_eq!(reply.status, 200, "{}", reply.body);
        }
    })
    .await;
    let decided = fewest(&log, &gw.state.store, plans.len(), |n| {
        let (gw, dana, plan) = (&gw, &dana, &plans[n]);
        async move {
            let envelope = dana.sign(&dana.statement(gw, plan));
            let reply = dana
                .send(gw, plan["plan_id"].as_str().unwrap(), &envelope)
                .await;
            assert_eq!(reply.status, 200, "{}", reply.body);
            assert_eq!(reply.body["status"], "approved");
        }
    })
    .await;

    // sqlx records neither end of a SQLite transaction, and of PostgreSQL's only the COMMIT
    // (the BEGIN goes out with the write's first query).
    let commit = match gw.state.store.dialect() {
        Dialect::Sqlite => 0,
        Dialect::Postgres => 1,
    };
    // The plan, a decision by the same person under another approver account, its one read
    // revision, its decisions, the agent's wallet. The approver's token is read by the first
    // look only: nothing committed since, so later reads are served the caller it found.
    assert_eq!(opened.len(), 5, "{opened:#?}");
    // The token and key; the plan, this approver's decisions and the nonce's, a decision by the
    // same person under another approver account, the read revision, the new decision, the
    // decisions it joins, the wallet, the plan's status and summary, the event.
    assert_eq!(decided.len(), 11 + commit, "{decided:#?}");
}

#[tokio::test]
async fn a_new_plan_waiting_for_people_is_written_once_with_its_place_in_the_queue() {
    let log = Statements::installed();
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let made = fewest(&log, &gw.state.store, 3, |n| {
        let gw = &gw;
        async move {
            let plan = gw
                .dry_run(json!({"project": "prj_184", "retention_days": 40 + n}))
                .await;
            assert_eq!(plan["would_require_approval"], true, "{plan}");
        }
    })
    .await;
    // Its row is inserted with its summary, not inserted and then rewritten: a 1 MB file's plan
    // is a 3 MB row, and SQLite rewrites the whole of it on any UPDATE.
    let writes: Vec<&String> = made
        .iter()
        .filter(|s| s.starts_with("INSERT INTO plans") || s.starts_with("UPDATE plans"))
        .collect();
    assert_eq!(writes.len(), 1, "{made:#?}");
    assert!(writes[0].starts_with("INSERT INTO plans"), "{made:#?}");
    assert!(
        !made.iter().any(|s| s.starts_with("SELECT preview")),
        "the new plan is not read back: {made:#?}"
    );
    // And it is listed, as an approver sees the queue.
    let queue = gw
        .call("GET", "/v1/approvals", Some(&dana.token), None)
        .await;
    assert_eq!(queue.status, 200, "{}", queue.body);
    assert_eq!(
        queue.body["items"].as_array().map(Vec::len),
        Some(3),
        "{}",
        queue.body
    );
}

#[tokio::test]
async fn a_call_without_a_plan_is_evaluated_once_under_the_writer() {
    let log = Statements::installed();
    let gw = Gateway::new().await;
    let ran = fewest(&log, &gw.state.store, 3, |n| {
        let gw = &gw;
        async move {
            let params = json!({"project": "prj_421", "filename": format!("{n}.txt"),
                                "mime_type": "text/plain", "size_bytes": 1});
            let reply = gw
                .invoke_as(
                    &gw.agent,
                    "documents.document.upload",
                    json!({ "params": params }),
                )
                .await;
            assert_eq!(reply.status, 200, "{}", reply.body);
        }
    })
    .await;
    // The quota an upload reads, read once: evaluated in the writer's transaction, the call is
    // applied as evaluated there, not derived a second time (nothing can have moved between).
    let quota_reads = ran
        .iter()
        .filter(|s| s.starts_with("SELECT quota_bytes, revision FROM storage_quotas"))
        .count();
    assert_eq!(quota_reads, 1, "{ran:#?}");
    // And the bytes in use are summed by that evaluation alone: the execution's journal names
    // what it derived in the same transaction.
    let sums = ran
        .iter()
        .filter(|s| s.starts_with("SELECT CAST(COALESCE(SUM(size_bytes)"))
        .count();
    assert_eq!(sums, 1, "{ran:#?}");
}
