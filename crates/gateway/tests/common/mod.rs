//! A gateway over in-memory SQLite (or a PostgreSQL database of its own) with the demo world, driven through `app()` with `oneshot`.

pub mod journal_rows;
pub mod props;
mod requests;
pub mod smtp;
pub mod sse;
pub mod world_diff;

pub use requests::{approval_of, grant, retention, JsonReply, GRANT, RETENTION};

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use countersign_api::AppState;
use countersign_embedded::{default_registry, seed_demo};
use countersign_engine::store::{database_url, scratch_postgres, Dialect};
use countersign_engine::{accounts, Limits, Registry, Store};
use countersign_proto::decision::{Signer, Statement};
use countersign_proto::dsse::{encode_public_key, Envelope};
use countersign_proto::statement::Signed as _;
use ed25519_dalek::SigningKey;
use http_body_util::BodyExt as _;
use serde_json::{json, Value};
use tower::ServiceExt as _;

pub struct Gateway {
    pub state: Arc<AppState>,
    pub agent: String,
    /// Last, so the store's handles are gone before its database is.
    _database: Option<TestDatabase>,
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub body: Value,
}

pub struct Approver {
    pub id: String,
    pub key_id: String,
    pub token: String,
    pub key: SigningKey,
}

/// A test's database: its URL, and on PostgreSQL the guard that drops it when the test is done
/// with it. Reads as the URL.
pub struct TestDatabase {
    pub url: String,
    _dropped_with: Option<Scratch>,
    /// On SQLite, the directory of a database that is a file; gone with the test.
    _directory: Option<tempfile::TempDir>,
}

impl std::ops::Deref for TestDatabase {
    type Target = str;

    fn deref(&self) -> &str {
        &self.url
    }
}

/// The database a test runs on: `sqlite` as the test names it, or, when
/// `COUNTERSIGN_TEST_POSTGRES` names a PostgreSQL server (as in `make test`'s second pass), a new
/// database of its own there, its tables made.
pub async fn database(sqlite: &str) -> TestDatabase {
    test_database(sqlite, false).await
}

/// Like [`database`], with the demo world already in it.
pub async fn demo_database(sqlite: &str) -> TestDatabase {
    test_database(sqlite, true).await
}

async fn test_database(sqlite: &str, seeded: bool) -> TestDatabase {
    match std::env::var("COUNTERSIGN_TEST_POSTGRES") {
        Ok(server) => {
            let url = copy_of(&server, seeded).await;
            TestDatabase {
                _dropped_with: Some(Scratch::of(&server, &url)),
                url,
                _directory: None,
            }
        }
        Err(_) => TestDatabase {
            url: sqlite.to_owned(),
            _dropped_with: None,
            _directory: None,
        },
    }
}

/// A database of its own, on SQLite a file rather than memory: an in-memory store has one
/// connection, which its reads share with its writer.
pub async fn on_disk(seeded: bool) -> TestDatabase {
    let directory = tempfile::tempdir().unwrap();
    let file = format!("sqlite://{}", directory.path().join("test.db").display());
    let mut database = test_database(&file, seeded).await;
    if database._dropped_with.is_none() {
        database._directory = Some(directory);
    }
    database
}

/// A store of its own for one test, and, on PostgreSQL, the guard that drops its database.
async fn own_store(seeded: bool) -> (Store, TestDatabase) {
    let database = test_database("sqlite::memory:", seeded).await;
    (Store::open(&database).await.unwrap(), database)
}

/// A test's PostgreSQL database, dropped when the test is done with it, whoever is still
/// connected: a pass makes hundreds, 40 MB each with the demo world in them.
struct Scratch {
    server: String,
    name: String,
}

impl Scratch {
    fn of(server: &str, url: &str) -> Scratch {
        let options: sqlx::postgres::PgConnectOptions = url.parse().unwrap();
        Scratch {
            server: server.to_owned(),
            name: options.get_database().unwrap().to_owned(),
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        use sqlx::Connection as _;
        let (server, name) = (self.server.clone(), self.name.clone());
        // A thread of its own: the test's runtime may still be the one running this.
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(async {
                let mut admin = sqlx::PgConnection::connect(&server).await?;
                sqlx::query(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
                    .execute(&mut admin)
                    .await?;
                admin.close().await?;
                anyhow::Ok(())
            })
        })
        .join();
        // Never a panic here: this may run while a failed test unwinds.
        if let Ok(Err(e)) = dropped {
            eprintln!("the test database {} was not dropped: {e}", self.name);
        }
    }
}

/// A new database copied from `template`, which the first test to ask makes once per cluster
/// (migrated, and `seeded` with the demo world): migrating for every property case, or seeding
/// 100,000 people for every test, would take most of the pass. The gateway's own records, its id
/// and key, are made per copy, on first use.
async fn copy_of(server: &str, seeded: bool) -> String {
    use sqlx::Connection as _;
    let template = if seeded {
        "cs_demo_template"
    } else {
        "cs_empty_template"
    };
    let mut admin = sqlx::PgConnection::connect(server).await.unwrap();
    // Held by the one test process that makes a template, while the others wait for it.
    sqlx::query("SELECT pg_advisory_lock(7)")
        .execute(&mut admin)
        .await
        .unwrap();
    let made: Option<i32> = sqlx::query_scalar("SELECT 1 FROM pg_database WHERE datname = $1")
        .bind(template)
        .fetch_optional(&mut admin)
        .await
        .unwrap();
    if made.is_none() {
        sqlx::query(&format!("CREATE DATABASE {template}"))
            .execute(&mut admin)
            .await
            .unwrap();
        let url = database_url(server, template).unwrap();
        let store = Store::open(&url).await.unwrap();
        if seeded {
            seed_demo(&store).await.unwrap();
        }
        store.close().await;
    }
    admin.close().await.unwrap();
    scratch_postgres(server, Some(template)).await.unwrap()
}

/// Runs `n` copies of `send` at once, each released by one barrier; their replies.
pub async fn at_once<F, Fut>(n: usize, send: F) -> Vec<Reply>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Reply> + Send + 'static,
{
    let barrier = Arc::new(tokio::sync::Barrier::new(n));
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..n {
        let (barrier, request) = (barrier.clone(), send(i));
        tasks.spawn(async move {
            barrier.wait().await;
            request.await
        });
    }
    let mut replies = Vec::new();
    while let Some(reply) = tasks.join_next().await {
        replies.push(reply.unwrap());
    }
    replies
}

/// The reference gateway's state over `store`, with the default limits and packs.
pub async fn state(store: Store) -> Arc<AppState> {
    state_with(store, Limits::default(), default_registry()).await
}

/// The gateway's state over `store`, held to `limits`, serving `registry`.
pub async fn state_with(
    store: Store,
    limits: Limits,
    registry: &'static Registry,
) -> Arc<AppState> {
    countersign_embedded::state(store, "Test", limits, registry)
        .await
        .unwrap()
}

impl Gateway {
    pub async fn new() -> Gateway {
        Gateway::serving(Limits::default(), default_registry()).await
    }

    /// A gateway on the demo world and one approver enrolled on it as `name`.
    pub async fn with_approver(name: &str) -> (Gateway, Approver) {
        let gw = Gateway::new().await;
        let approver = gw.enroll(name).await;
        (gw, approver)
    }

    /// The demo gateway over the store at `url` (from [`database`]: a file, for tests that need
    /// several connections or open the store again).
    pub async fn at(url: &str) -> Gateway {
        let store = Store::open(url).await.unwrap();
        seed_demo(&store).await.unwrap();
        Gateway::from_state(state(store).await).await
    }

    /// The demo gateway under the approval policy `policy`.
    pub async fn with_policy(policy: countersign_policy::Policy) -> Gateway {
        Gateway::serving_with_policy(default_registry(), policy).await
    }

    /// The demo gateway offering `registry`'s capabilities under the approval policy `policy`.
    pub async fn serving_with_policy(
        registry: &'static Registry,
        policy: countersign_policy::Policy,
    ) -> Gateway {
        let (store, database) = own_store(true).await;
        Gateway::store_with_policy(store, database, registry, policy).await
    }

    /// [`Gateway::with_policy`] with reads on connections apart from the writer's, as in a
    /// deployed gateway: for races, which an in-memory store's one connection serializes.
    pub async fn with_policy_apart(policy: countersign_policy::Policy) -> Gateway {
        let database = on_disk(true).await;
        let store = Store::open(&database).await.unwrap();
        Gateway::store_with_policy(store, database, default_registry(), policy).await
    }

    async fn store_with_policy(
        store: Store,
        database: TestDatabase,
        registry: &'static Registry,
        policy: countersign_policy::Policy,
    ) -> Gateway {
        seed_demo(&store).await.unwrap();
        let state = countersign_embedded::state_with_policy(
            store,
            "Test",
            Limits::default(),
            registry,
            policy,
        )
        .await
        .unwrap();
        Gateway {
            _database: Some(database),
            ..Gateway::from_state(state).await
        }
    }

    /// The demo gateway held to `limits` instead of the defaults.
    pub async fn limited(limits: Limits) -> Gateway {
        Gateway::serving(limits, default_registry()).await
    }

    /// The demo gateway whose provider capabilities call `providers`.
    pub async fn with_providers(providers: countersign_providers::Providers) -> Gateway {
        let registry = countersign_embedded::registry(&Default::default(), providers)
            .unwrap()
            .leak();
        Gateway::serving(Limits::default(), registry).await
    }

    /// The demo gateway, held to `limits`, offering `registry`'s capabilities.
    pub async fn serving(limits: Limits, registry: &'static Registry) -> Gateway {
        let (store, database) = own_store(true).await;
        Gateway::serving_store(store, database, limits, registry).await
    }

    /// Like [`Gateway::serving`], with reads on connections apart from the writer's, as in a
    /// deployed gateway: for tests of what happens while the writer is held.
    pub async fn serving_apart(limits: Limits, registry: &'static Registry) -> Gateway {
        let database = on_disk(true).await;
        let store = Store::open(&database).await.unwrap();
        Gateway::serving_store(store, database, limits, registry).await
    }

    async fn serving_store(
        store: Store,
        database: TestDatabase,
        limits: Limits,
        registry: &'static Registry,
    ) -> Gateway {
        seed_demo(&store).await.unwrap();
        Gateway {
            _database: Some(database),
            ..Gateway::from_state(state_with(store, limits, registry).await).await
        }
    }

    /// A gateway over an empty world, for tests that build their own; its agent acts for nobody,
    /// since the world has no people to act for until the test makes them.
    pub async fn bare() -> Gateway {
        let (store, database) = own_store(false).await;
        let database = Some(database);
        let state = state(store).await;
        let (_, agent) = accounts::add_agent(&state.store, "ops", None)
            .await
            .unwrap();
        Gateway {
            state,
            agent,
            _database: database,
        }
    }

    /// A gateway over `state` whose agent is `agent` (made elsewhere, or none: "").
    pub fn acting_as(state: Arc<AppState>, agent: String) -> Gateway {
        Gateway {
            state,
            agent,
            _database: None,
        }
    }

    pub async fn from_state(state: Arc<AppState>) -> Gateway {
        let (_, agent) = accounts::add_agent(&state.store, "ops", Some("usr_lead"))
            .await
            .unwrap();
        Gateway {
            state,
            agent,
            _database: None,
        }
    }

    /// Moves a stored plan's lifetime into the past (as if previewed 20 minutes ago), keeping its
    /// digest true to its content; the plan as approvers now see it.
    pub async fn expire(&self, plan_id: &str) -> Value {
        let pool = self.state.store.pool();
        let text: String = sqlx::query_scalar("SELECT preview FROM plans WHERE id = $1")
            .bind(plan_id)
            .fetch_one(pool)
            .await
            .unwrap();
        let mut preview: Value = serde_json::from_str(&text).unwrap();
        let now = chrono::SubsecRound::trunc_subsecs(chrono::Utc::now(), 0);
        let at =
            |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        preview["created_at"] = json!(at(now - chrono::Duration::minutes(20)));
        preview["expires_at"] = json!(at(now - chrono::Duration::minutes(5)));
        preview["plan_digest"] = json!(countersign_proto::digest::plan_digest(&preview).unwrap());
        let mut w = self.state.store.write().await.unwrap();
        sqlx::query(
            "UPDATE plans SET preview = $1, plan_digest = $2, expires_at = $3 WHERE id = $4",
        )
        .bind(preview.to_string())
        .bind(preview["plan_digest"].as_str())
        .bind(preview["expires_at"].as_str())
        .bind(plan_id)
        .execute(&mut *w.tx)
        .await
        .unwrap();
        w.commit().await.unwrap();
        preview
    }

    /// `sql`'s one number for `plan_id` (bound as `$1`), read from the store.
    pub async fn count(&self, sql: &str, plan_id: &str) -> i64 {
        sqlx::query_scalar(sql)
            .bind(plan_id)
            .fetch_one(self.state.store.pool())
            .await
            .unwrap()
    }

    /// That of `replies` to invokes of the retention plan `plan_id` (14 days for prj_184) racing
    /// each other, exactly one ran it, the others were told it had run, and the store agrees.
    pub async fn assert_ran_once(&self, replies: &[Reply], plan_id: &str) {
        let executed = replies.iter().filter(|r| r.status == StatusCode::OK);
        assert_eq!(executed.count(), 1, "one execution");
        for reply in replies.iter().filter(|r| r.status != StatusCode::OK) {
            assert_eq!(reply.status, StatusCode::CONFLICT, "{}", reply.body);
            assert_eq!(reply.body["error"]["code"], "plan_already_executed");
        }
        let runs = "SELECT COUNT(*) FROM execution_audit WHERE plan_id = $1";
        assert_eq!(self.count(runs, plan_id).await, 1);
        let days: i64 =
            sqlx::query_scalar("SELECT retention_days FROM projects WHERE id = 'prj_184'")
                .fetch_one(self.state.store.pool())
                .await
                .unwrap();
        assert_eq!(days, 14);
    }

    pub async fn send(&self, request: Request<Body>) -> Reply {
        let response = countersign_gateway::router(self.state.clone())
            .oneshot(request)
            .await
            .unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()))
        };
        Reply {
            status,
            headers,
            body,
        }
    }

    pub async fn call(
        &self,
        method: &str,
        uri: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> Reply {
        let mut builder = Request::builder().method(method).uri(uri);
        if let Some(token) = token {
            builder = builder.header("authorization", format!("Bearer {token}"));
        }
        let request = match body {
            Some(body) => builder
                .header("content-type", "application/json")
                .body(Body::from(body.to_string())),
            None => builder.body(Body::empty()),
        };
        self.send(request.unwrap()).await
    }

    /// A tool call over MCP's HTTP transport as `token`: the JSON-RPC answer.
    pub async fn tool(&self, token: &str, name: &str, arguments: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                          "params": {"name": name, "arguments": arguments}});
        let request = Request::post("/mcp")
            .header("host", "gateway.example")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .header("authorization", format!("Bearer {token}"))
            .body(Body::from(body.to_string()))
            .unwrap();
        self.send(request).await.body
    }

    /// The ids of every capability the gateway lists to the test agent, in its order.
    pub async fn capability_ids(&self) -> Vec<String> {
        let listed = self
            .call("GET", "/v1/capabilities", Some(&self.agent), None)
            .await;
        listed.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["capability_id"].as_str().unwrap().to_owned())
            .collect()
    }

    /// `dry_run` of `capability` as the test agent; the preview, which must be 200.
    pub async fn preview(&self, capability: &str, params: Value) -> Value {
        let reply = self.try_preview(capability, params).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        reply.body
    }

    /// `dry_run` of `capability` as the test agent, whatever it answers.
    pub async fn try_preview(&self, capability: &str, params: Value) -> Reply {
        let uri = format!("/v1/capabilities/{capability}/dry_run");
        let body = json!({ "params": params });
        self.call("POST", &uri, Some(&self.agent), Some(body)).await
    }

    /// `invoke` of `capability` with `body` as the test agent.
    pub async fn invoke_as(&self, token: &str, capability: &str, body: Value) -> Reply {
        self.call(
            "POST",
            &format!("/v1/capabilities/{capability}/invoke"),
            Some(token),
            Some(body),
        )
        .await
    }

    /// Every subject id of an effect, paged from the gateway in `limit`-sized pages.
    pub async fn all_subjects(
        &self,
        token: &str,
        plan_id: &str,
        effect_id: &str,
        limit: u32,
    ) -> Vec<String> {
        let items = self.subject_items(token, plan_id, effect_id, limit).await;
        items.into_iter().map(|i| i.id).collect()
    }

    /// Every subject of an effect as served, paged from the gateway in `limit`-sized pages.
    pub async fn subject_items(
        &self,
        token: &str,
        plan_id: &str,
        effect_id: &str,
        limit: u32,
    ) -> Vec<countersign_proto::guard::SubjectItem> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut uri = format!("/v1/plans/{plan_id}/effects/{effect_id}/subjects?limit={limit}");
            if let Some(c) = &cursor {
                uri.push_str(&format!("&cursor={c}"));
            }
            let reply = self.call("GET", &uri, Some(token), None).await;
            assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
            let page: countersign_proto::guard::SubjectPage =
                serde_json::from_value(reply.body).unwrap();
            items.extend(page.items);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return items,
            }
        }
    }

    /// Every table a preview must leave alone, each as canonical text: all but the plan
    /// bookkeeping (plans, their subjects, reads and events, and the preview audit).
    pub async fn snapshot(&self) -> std::collections::BTreeMap<String, String> {
        const BOOKKEEPING: [&str; 6] = [
            "plans",
            "plan_subjects",
            "plan_reads",
            "plan_events",
            "preview_audit",
            "_sqlx_migrations",
        ];
        let pool = self.state.store.pool();
        let dialect = self.state.store.dialect();
        let mut out = std::collections::BTreeMap::new();
        for (table, columns) in world_diff::tables(pool, dialect).await {
            if BOOKKEEPING.contains(&table.as_str()) {
                continue;
            }
            let columns = columns
                .iter()
                .map(|(c, _)| format!("\"{c}\""))
                .collect::<Vec<_>>()
                .join(", ");
            let sql = match dialect {
                Dialect::Sqlite => format!(
                    "SELECT COALESCE(group_concat(j, char(10)), '') FROM
                     (SELECT json_array({columns}) AS j FROM \"{table}\" ORDER BY j)"
                ),
                Dialect::Postgres => format!(
                    "SELECT COALESCE(string_agg(j, chr(10) ORDER BY j), '') FROM
                     (SELECT json_build_array({columns})::text AS j FROM \"{table}\") t"
                ),
            };
            let rows: String = sqlx::query_scalar(&sql).fetch_one(pool).await.unwrap();
            out.insert(table, rows);
        }
        out
    }

    pub async fn dry_run(&self, params: Value) -> Value {
        self.preview(RETENTION, params).await
    }

    /// `POST /v1/plans/{id}/refresh` as `token`.
    pub async fn refresh(&self, token: &str, plan_id: &str) -> Reply {
        let uri = format!("/v1/plans/{plan_id}/refresh");
        self.call("POST", &uri, Some(token), None).await
    }

    /// `GET /v1/plans/{id}` as `token`.
    pub async fn record(&self, token: &str, plan_id: &str) -> Reply {
        self.call("GET", &format!("/v1/plans/{plan_id}"), Some(token), None)
            .await
    }

    pub async fn invoke(&self, body: Value) -> Reply {
        self.call(
            "POST",
            "/v1/capabilities/projects.settings.update/invoke",
            Some(&self.agent),
            Some(body),
        )
        .await
    }

    pub async fn enroll(&self, name: &str) -> Approver {
        let code = accounts::invite_approver(&self.state.store, name, None)
            .await
            .unwrap();
        self.enroll_with_code(name, &code).await
    }

    /// An approver enrolled as person `person` of the demo world.
    pub async fn enroll_as(&self, name: &str, person: &str) -> Approver {
        let code = accounts::invite_approver(&self.state.store, name, Some(person))
            .await
            .unwrap();
        self.enroll_with_code(name, &code).await
    }

    pub async fn enroll_with_code(&self, name: &str, code: &str) -> Approver {
        let key = SigningKey::generate(&mut rand::rngs::OsRng);
        let reply = self
            .call(
                "POST",
                "/v1/approvers/enroll",
                None,
                Some(json!({"enrollment_code": code, "display_name": name,
                            "public_key": encode_public_key(&key.verifying_key())})),
            )
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        Approver {
            id: reply.body["approver_id"].as_str().unwrap().to_owned(),
            key_id: reply.body["key_id"].as_str().unwrap().to_owned(),
            token: reply.body["token"].as_str().unwrap().to_owned(),
            key,
        }
    }
}

impl Gateway {
    /// A plan of `capability` for `params`, previewed as the test agent and approved by as many
    /// newly enrolled approvers as the capability requires.
    pub async fn approved(&self, capability: &str, params: Value) -> Value {
        let describe = self
            .call(
                "GET",
                &format!("/v1/capabilities/{capability}"),
                Some(&self.agent),
                None,
            )
            .await;
        let needed = describe.body["approval"]["required_approvals"]
            .as_u64()
            .unwrap();
        let mut approvers = Vec::new();
        for n in 0..needed {
            approvers.push(self.enroll(&format!("Approver {n}")).await);
        }
        let approvers: Vec<&Approver> = approvers.iter().collect();
        self.approved_by(capability, params, &approvers).await
    }

    /// A plan of `capability` for `params`, previewed as the test agent and approved by each of
    /// `approvers`.
    pub async fn approved_by(
        &self,
        capability: &str,
        params: Value,
        approvers: &[&Approver],
    ) -> Value {
        let plan = self.preview(capability, params).await;
        approve_by(self, &plan, approvers).await;
        plan
    }

    /// Invokes `plan` as the test agent.
    pub async fn execute(&self, plan: &Value) -> Reply {
        let capability = plan["capability_id"].as_str().unwrap();
        self.invoke_as(&self.agent, capability, json!({"plan_id": plan["plan_id"]}))
            .await
    }
}

/// Signs and sends an approval of `plan` by each of `approvers`; the last answer.
pub async fn approve_by(gateway: &Gateway, plan: &Value, approvers: &[&Approver]) -> Reply {
    let plan_id = plan["plan_id"].as_str().unwrap();
    let mut last = None;
    for approver in approvers {
        let envelope = approver.sign(&approver.statement(gateway, plan));
        let reply = approver.send(gateway, plan_id, &envelope).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        last = Some(reply);
    }
    last.expect("at least one approver")
}

impl Approver {
    /// A valid approval statement for `plan` by this approver at `gateway`.
    pub fn statement(&self, gateway: &Gateway, plan: &Value) -> Statement {
        self.statement_to(&gateway.state.gateway_id, plan)
    }

    /// An approval of `plan` addressed to the gateway `audience` (one in another process).
    pub fn statement_to(&self, audience: &str, plan: &Value) -> Statement {
        let signer = Signer {
            approver_id: &self.id,
            key_id: &self.key_id,
            audience,
        };
        approval_of(signer, plan)
    }

    pub fn sign(&self, statement: &Statement) -> Envelope {
        statement.sign(&self.key).unwrap()
    }

    /// Signs `statement`, sends it, and asserts the refusal `code` with its `status`.
    pub async fn refused(
        &self,
        gateway: &Gateway,
        plan_id: &str,
        statement: &Statement,
        code: &str,
        status: u16,
    ) {
        let reply = self.send(gateway, plan_id, &self.sign(statement)).await;
        assert_error(&reply, code, status);
    }

    pub async fn send(&self, gateway: &Gateway, plan_id: &str, envelope: &Envelope) -> Reply {
        gateway
            .call(
                "POST",
                &format!("/v1/plans/{plan_id}/decisions"),
                Some(&self.token),
                Some(serde_json::to_value(envelope).unwrap()),
            )
            .await
    }
}

/// Asserts the seed 002 error envelope with `code`, its status, and the trace id in both places.
pub fn assert_error(reply: &Reply, code: &str, status: u16) {
    assert_eq!(reply.status.as_u16(), status, "{code}: {}", reply.body);
    assert_eq!(reply.body["success"], false);
    assert_eq!(reply.body["error"]["code"], code, "{}", reply.body);
    assert!(reply.body["error"]["message"]
        .as_str()
        .is_some_and(|m| !m.is_empty()));
    // A provider's failure (a model provider's, an MCP upstream's) names the provider; every
    // other error is the gateway's own.
    let provider = reply.body["provider"].as_str().unwrap_or_default();
    if code.starts_with("provider_") {
        assert!(
            !provider.is_empty() && provider != "system",
            "{}",
            reply.body
        );
    } else {
        assert_eq!(provider, "system");
    }
    let known = countersign_proto::ErrorCode::ALL
        .iter()
        .find(|c| c.as_str() == code)
        .expect("a known code");
    // A provider's failure that used a plan up cannot succeed again, whatever its code says.
    let retryable = reply.body["error"]["retryable"]
        .as_bool()
        .expect("retryable");
    assert!(retryable == known.retryable() || (provider != "system" && !retryable));
    let header = reply.headers["x-trace-id"].to_str().unwrap();
    assert!(header.starts_with("trc_"));
    assert_eq!(reply.body["metadata"]["trace_id"], header);
    for member in ["content", "usage", "images", "files", "videos"] {
        assert!(
            reply.body.get(member).is_none(),
            "{member} in an error body"
        );
    }
}
