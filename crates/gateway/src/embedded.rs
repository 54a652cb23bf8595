//! The gateway in-process, for a console with no gateway configured: demo world, loopback port,
//! and optionally a simulated agent.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::sim::AgentSim;
use crate::throttle::Peer;
use crate::{accounts, app, demo, AppState, Store};

pub struct Embedded {
    pub url: String,
    pub state: Arc<AppState>,
    tasks: Vec<JoinHandle<()>>,
}

impl Embedded {
    /// Starts the demo gateway on `127.0.0.1:<free port>` over `database_url`.
    pub async fn start(
        database_url: &str,
        simulate_every: Option<Duration>,
    ) -> anyhow::Result<Embedded> {
        let store = Store::open(database_url).await?;
        demo::seed(&store).await?;
        let state = AppState::new(store, "Demo gateway").await?;
        let (_, agent_token) =
            accounts::rotate_agent_token(&state.store, "ops", Some("usr_lead")).await?;
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let router = app(state.clone()).into_make_service_with_connect_info::<Peer>();
        let mut tasks = vec![tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, router).await {
                tracing::error!(error = %e, "embedded gateway stopped");
            }
        })];
        if let Some(every) = simulate_every {
            tasks.push(tokio::spawn(AgentSim::new(&url, &agent_token).run(every)));
        }
        Ok(Embedded { url, state, tasks })
    }

    pub fn gateway_id(&self) -> &str {
        &self.state.gateway_id
    }

    /// A single-use enrollment code, as `approvers invite` prints it.
    pub async fn invite(&self, display_name: &str) -> anyhow::Result<String> {
        accounts::invite_approver(&self.state.store, display_name, None).await
    }
}

impl Drop for Embedded {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}
