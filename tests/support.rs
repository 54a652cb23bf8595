//! Helpers shared by the end-to-end tests: a real gateway on a loopback port and an agent for it.

pub mod fuzz_targets;
pub mod procmem;
pub mod proxy;
pub mod relay;
pub mod webdriver;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use countersign_api::AppState;
use countersign_embedded::{listen, seed_demo, state_with_policy};
use countersign_engine::{accounts, queue, Limits, Store};
use countersign_pack::Handle;
pub use countersign_policy::Policy;
use countersign_proto::decision::{Decision, Signer, Statement};
use countersign_proto::dsse::{encode_public_key, Envelope};
use countersign_proto::statement::Signed as _;
use countersign_providers::local::LocalProviders;
use ed25519_dalek::SigningKey;
use serde_json::{json, Value};
use tempfile::TempDir;
use tokio::task::JoinHandle;

/// The reference gateway, MCP included, on `127.0.0.1:<free port>` over a fresh SQLite file with
/// the demo world and a local model provider.
pub struct TestGateway {
    pub url: String,
    /// The store's URL, for a second process on the same database.
    pub database: String,
    pub state: Arc<AppState>,
    providers: LocalProviders,
    server: JoinHandle<()>,
    _dir: TempDir,
}

impl Drop for TestGateway {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl TestGateway {
    pub async fn start() -> anyhow::Result<TestGateway> {
        TestGateway::start_as(None, Policy::builtin(), &[]).await
    }

    /// A gateway in front of the MCP upstreams `upstreams` (`NAME=COMMAND`) as well.
    pub async fn before(upstreams: &[String]) -> anyhow::Result<TestGateway> {
        TestGateway::start_as(None, Policy::builtin(), upstreams).await
    }

    /// A gateway in front of the published filesystem MCP server (`make mcp-servers`) over
    /// `root`, as the upstream `files`.
    pub async fn before_files(root: &std::path::Path) -> anyhow::Result<TestGateway> {
        let server = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../target/mcp-servers/npm/node_modules/.bin/mcp-server-filesystem");
        anyhow::ensure!(
            server.exists(),
            "{} is missing: make mcp-servers makes it",
            server.display()
        );
        let upstream = format!("files={} {}", server.display(), root.display());
        TestGateway::before(&[upstream]).await
    }

    /// A gateway that evaluates the approval policy `policy`.
    pub async fn under(policy: Policy) -> anyhow::Result<TestGateway> {
        TestGateway::start_as(None, policy, &[]).await
    }

    /// A gateway of its own (its own identity key) that calls itself `gateway_id`: another
    /// gateway's id, to play an impostor.
    pub async fn claiming(gateway_id: &str) -> anyhow::Result<TestGateway> {
        TestGateway::start_as(Some(gateway_id), Policy::builtin(), &[]).await
    }

    async fn start_as(
        claimed: Option<&str>,
        policy: Policy,
        upstreams: &[String],
    ) -> anyhow::Result<TestGateway> {
        let dir = tempfile::tempdir()?;
        let database = format!("sqlite://{}", dir.path().join("gateway.db").display());
        let store = Store::open(&database).await?;
        if let Some(id) = claimed {
            let mut w = store.write().await?;
            sqlx::query("INSERT INTO meta (key, value) VALUES ('gateway_id', $1)")
                .bind(id)
                .execute(&mut *w.tx)
                .await?;
            w.commit().await?;
        }
        seed_demo(&store).await?;
        let providers = LocalProviders::start().await?;
        let upstreams = countersign_gateway::serve::connect_upstreams(upstreams).await?;
        let above = countersign_providers::PackSettings::default().approval_above;
        let registry =
            countersign_gateway::serve::registry(above, providers.providers(), &upstreams)?;
        let state =
            state_with_policy(store, "Test gateway", Limits::default(), registry, policy).await?;
        let (url, server) = listen(countersign_gateway::router(state.clone())).await?;
        Ok(TestGateway {
            url,
            database,
            state,
            providers,
            server,
            _dir: dir,
        })
    }

    /// The model provider its provider capabilities call.
    pub fn providers(&self) -> &LocalProviders {
        &self.providers
    }

    pub async fn agent(&self, name: &str) -> anyhow::Result<Agent> {
        // The demo made `ops` already: an agent is made, or its token made anew.
        let (_, token) =
            accounts::rotate_agent_token(&self.state.store, name, Some("usr_lead")).await?;
        Ok(Agent {
            http: reqwest::Client::new(),
            url: self.url.clone(),
            token,
        })
    }

    pub async fn invite(&self, name: &str) -> anyhow::Result<String> {
        accounts::invite_approver(&self.state.store, name, None).await
    }

    /// An enrollment code for `name`, who is the demo world's person `person` (in the teams the
    /// demo seeds: usr_92 leads, usr_41 finance).
    pub async fn invite_as(&self, name: &str, person: &str) -> anyhow::Result<String> {
        accounts::invite_approver(&self.state.store, name, Some(person)).await
    }

    /// Someone changes `project`'s retention outside the gateway's plans: its revision moves and
    /// every plan that read it turns stale.
    pub async fn move_project(&self, project: &str, retention_days: i64) -> anyhow::Result<()> {
        let mut w = self.state.store.write().await?;
        sqlx::query("UPDATE projects SET retention_days = $1 WHERE id = $2")
            .bind(retention_days)
            .bind(project)
            .execute(&mut *w.tx)
            .await?;
        let mut handle = Handle::new(&mut w.tx);
        countersign_demo_world::bump(&mut handle, &format!("projects/{project}"))
            .await
            .map_err(|e| anyhow::anyhow!("{}", e.message))?;
        for moved in handle.take_moved() {
            queue::mark_stale_readers(&mut w.tx, &moved)
                .await
                .map_err(|e| anyhow::anyhow!("{}", e.message))?;
        }
        w.commit().await?;
        Ok(())
    }

    /// Moves `plan_id`'s lifetime into the past, its digest kept true to its content: the plan
    /// expired while it waited.
    pub async fn expire(&self, plan_id: &str) -> anyhow::Result<()> {
        let text: String = sqlx::query_scalar("SELECT preview FROM plans WHERE id = $1")
            .bind(plan_id)
            .fetch_one(self.state.store.pool())
            .await?;
        let mut plan: countersign_proto::plan::Preview = serde_json::from_str(&text)?;
        plan.expires_at = countersign_engine::ids::now() - chrono::Duration::minutes(1);
        plan.created_at = plan.expires_at - chrono::Duration::minutes(15);
        plan.plan_digest = countersign_proto::digest::plan_digest(&serde_json::to_value(&plan)?)?;
        let mut w = self.state.store.write().await?;
        sqlx::query(
            "UPDATE plans SET preview = $1, plan_digest = $2, expires_at = $3 WHERE id = $4",
        )
        .bind(serde_json::to_string(&plan)?)
        .bind(&plan.plan_digest)
        .bind(countersign_engine::ids::to_text(plan.expires_at))
        .bind(plan_id)
        .execute(&mut *w.tx)
        .await?;
        w.commit().await?;
        Ok(())
    }

    /// The decisions standing on `plan_id`, oldest first: decision, reason, and the payload the
    /// approver signed.
    pub async fn decisions(
        &self,
        plan_id: &str,
    ) -> anyhow::Result<Vec<(String, Option<String>, Value)>> {
        let rows: Vec<(String, Option<String>, String)> = sqlx::query_as(
            "SELECT decision, reason, envelope FROM decisions
             WHERE plan_id = $1 AND withdrawn_at IS NULL ORDER BY id",
        )
        .bind(plan_id)
        .fetch_all(self.state.store.pool())
        .await?;
        rows.into_iter()
            .map(|(decision, reason, envelope)| {
                let envelope: Envelope = serde_json::from_str(&envelope)?;
                let payload = serde_json::from_slice(&envelope.payload_bytes()?)?;
                Ok((decision, reason, payload))
            })
            .collect()
    }

    /// Gives agent `agent_id` a wallet of `credits`: a plan it cannot pay is blocked, and a
    /// blocked plan reaches no approver.
    pub async fn fund(&self, agent_id: &str, credits: i64) -> anyhow::Result<()> {
        let mut w = self.state.store.write().await?;
        let limit = countersign_proto::Credits::cents(credits * 100);
        countersign_engine::execution::wallet::set_limit(&mut w.tx, agent_id, limit).await?;
        w.commit().await?;
        Ok(())
    }

    /// The highest id among `grp_all_staff`'s employees: the last subject of their removal.
    pub async fn last_staff_employee(&self) -> anyhow::Result<String> {
        Ok(sqlx::query_scalar(
            "SELECT MAX(u.id) FROM group_members m JOIN users u ON u.id = m.user_id
             WHERE m.group_id = 'grp_all_staff' AND u.employment = 'employee'",
        )
        .fetch_one(self.state.store.pool())
        .await?)
    }

    /// A project's retention as the domain table holds it.
    pub async fn retention_days(&self, project: &str) -> anyhow::Result<i64> {
        Ok(
            sqlx::query_scalar("SELECT retention_days FROM projects WHERE id = $1")
                .bind(project)
                .fetch_one(self.state.store.pool())
                .await?,
        )
    }
}

/// An agent talking plain HTTP, as any agent would.
pub struct Agent {
    http: reqwest::Client,
    url: String,
    token: String,
}

/// Status and JSON body of an answer.
pub struct Answer {
    pub status: u16,
    pub body: Value,
}

impl Agent {
    /// The agent's bearer token.
    pub fn token(&self) -> &str {
        &self.token
    }

    async fn post(&self, path: &str, body: Value) -> anyhow::Result<Answer> {
        let response = self
            .http
            .post(format!("{}{path}", self.url))
            .bearer_auth(&self.token)
            .json(&body)
            .send()
            .await?;
        Ok(Answer {
            status: response.status().as_u16(),
            body: response.json().await?,
        })
    }

    pub async fn dry_run(&self, capability: &str, params: Value) -> anyhow::Result<Value> {
        let answer = self
            .post(
                &format!("/v1/capabilities/{capability}/dry_run"),
                json!({ "params": params }),
            )
            .await?;
        anyhow::ensure!(
            answer.status == 200,
            "dry_run answered {}: {}",
            answer.status,
            answer.body
        );
        Ok(answer.body)
    }

    pub async fn plan(&self, plan_id: &str) -> anyhow::Result<Value> {
        let response = self
            .http
            .get(format!("{}/v1/plans/{plan_id}", self.url))
            .bearer_auth(&self.token)
            .send()
            .await?;
        Ok(response.error_for_status()?.json().await?)
    }

    pub async fn invoke(&self, capability: &str, plan_id: &str) -> anyhow::Result<Answer> {
        self.post(
            &format!("/v1/capabilities/{capability}/invoke"),
            json!({ "plan_id": plan_id }),
        )
        .await
    }
}

/// The params of a retention change of `project` to `days` (`projects.settings.update`).
pub fn retention(project: &str, days: u32) -> Value {
    json!({"project": project, "retention_days": days})
}

/// `countersign-gateway`, built beside the test binary (`target/<profile>/deps/..`).
pub fn gateway_binary() -> PathBuf {
    binary("countersign-gateway")
}

/// The workspace's binary `name`, built beside the test binary (`target/<profile>/deps/..`).
pub fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let path = exe
        .parent()
        .and_then(|deps| deps.parent())
        .map(|dir| dir.join(name))
        .expect("the target directory");
    assert!(
        path.exists(),
        "{} is missing: cargo build --workspace builds it (make test does)",
        path.display()
    );
    path
}

/// An approver enrolled over HTTP with a key held here.
pub struct Approver {
    pub id: String,
    pub key_id: String,
    pub token: String,
    pub key: SigningKey,
}

impl Approver {
    /// Signs an approval of `plan` (as the gateway at `url` serves it) and sends it: the
    /// answer's status and body.
    pub async fn approve(&self, url: &str, plan: &Value) -> (u16, Value) {
        let gateway = get(&format!("{url}/v1/gateway"), &self.token).await;
        let envelope = self.approval(gateway["gateway_id"].as_str().unwrap(), plan);
        let uri = format!(
            "{url}/v1/plans/{}/decisions",
            plan["plan_id"].as_str().unwrap()
        );
        post(&uri, &self.token, serde_json::to_value(envelope).unwrap())
            .await
            .unwrap()
    }

    /// This approver's signed approval of `plan`, addressed to gateway `gateway_id`.
    pub fn approval(&self, gateway_id: &str, plan: &Value) -> Envelope {
        self.statement(gateway_id, plan).sign(&self.key).unwrap()
    }

    /// This approver's approval of `plan`, addressed to gateway `gateway_id`, good for five
    /// minutes.
    pub fn statement(&self, gateway_id: &str, plan: &Value) -> Statement {
        let signer = Signer {
            approver_id: &self.id,
            key_id: &self.key_id,
            audience: gateway_id,
        };
        let plan_id = plan["plan_id"].as_str().unwrap();
        let digest = plan["plan_digest"].as_str().unwrap();
        let expires_at = chrono::Utc::now() + chrono::Duration::minutes(5);
        Statement::new(
            signer,
            (plan_id, digest),
            Decision::Approve,
            None,
            expires_at,
        )
    }
}

/// POSTs `body` as JSON with a bearer token: status and JSON body (null when there is none).
pub async fn post(url: &str, token: &str, body: Value) -> reqwest::Result<(u16, Value)> {
    let response = reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .json(&body)
        .timeout(Duration::from_secs(10))
        .send()
        .await?;
    let status = response.status().as_u16();
    Ok((status, response.json().await.unwrap_or(Value::Null)))
}

/// GETs `url` with a bearer token; it must answer 200.
pub async fn get(url: &str, token: &str) -> Value {
    let response = reqwest::Client::new()
        .get(url)
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{url}");
    response.json().await.unwrap()
}

/// Enrolls a new key with `code` at the gateway at `url`.
pub async fn enroll(url: &str, code: &str) -> Approver {
    let key = SigningKey::generate(&mut rand::rngs::OsRng);
    let body = json!({"enrollment_code": code, "display_name": "Kim",
                      "public_key": encode_public_key(&key.verifying_key())});
    let (status, reply) = post(&format!("{url}/v1/approvers/enroll"), "", body)
        .await
        .unwrap();
    assert_eq!(status, 200, "{reply}");
    Approver {
        id: reply["approver_id"].as_str().unwrap().to_owned(),
        key_id: reply["key_id"].as_str().unwrap().to_owned(),
        token: reply["token"].as_str().unwrap().to_owned(),
        key,
    }
}
