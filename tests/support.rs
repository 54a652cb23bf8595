//! Helpers shared by the end-to-end tests: a real gateway on a loopback port and an agent for it.

pub mod proxy;
pub mod webdriver;

use std::sync::Arc;

use countersign_gateway::{accounts, app, demo, AppState, Store};
use serde_json::{json, Value};
use tempfile::TempDir;

/// A gateway on `127.0.0.1:<free port>` over a fresh SQLite file with the demo world.
pub struct TestGateway {
    pub url: String,
    /// The store's URL, for a second process on the same database.
    pub database: String,
    pub state: Arc<AppState>,
    _dir: TempDir,
}

impl TestGateway {
    pub async fn start() -> anyhow::Result<TestGateway> {
        let dir = tempfile::tempdir()?;
        let database = format!("sqlite://{}", dir.path().join("gateway.db").display());
        let store = Store::open(&database).await?;
        demo::seed(&store).await?;
        let state = AppState::new(store, "Test gateway").await?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let router = app(state.clone());
        tokio::spawn(async move { axum::serve(listener, router).await });
        Ok(TestGateway {
            url,
            database,
            state,
            _dir: dir,
        })
    }

    pub async fn agent(&self, name: &str) -> anyhow::Result<Agent> {
        let (_, token) = accounts::add_agent(&self.state.store, name, Some("usr_lead")).await?;
        Ok(Agent {
            http: reqwest::Client::new(),
            url: self.url.clone(),
            token,
        })
    }

    pub async fn invite(&self, name: &str) -> anyhow::Result<String> {
        accounts::invite_approver(&self.state.store, name, None).await
    }

    /// A project's retention as the domain table holds it.
    pub async fn retention_days(&self, project: &str) -> anyhow::Result<i64> {
        Ok(
            sqlx::query_scalar("SELECT retention_days FROM projects WHERE id = ?")
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
