//! The gateway in-process, for a console with no gateway configured: demo world, loopback port,
//! a local model provider, and optionally a simulated agent and a second, simulated approver.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::demo::providers::LocalProviders;
use crate::sim::AgentSim;
use crate::throttle::Peer;
use crate::{accounts, app, demo, AppState, Limits, Store};

pub use crate::co_approver::CoApprover;

pub struct Embedded {
    pub url: String,
    pub state: Arc<AppState>,
    /// The demo's model provider, which the provider capabilities call.
    pub local_providers: LocalProviders,
    co_approver_id: Option<String>,
    tasks: Vec<JoinHandle<()>>,
}

impl Embedded {
    /// Starts the demo gateway on `127.0.0.1:<free port>` over `database_url`.
    pub async fn start(
        database_url: &str,
        simulate_every: Option<Duration>,
    ) -> anyhow::Result<Embedded> {
        Embedded::start_with(database_url, simulate_every, None).await
    }

    /// Starts the demo gateway as [`Embedded::start`] does, and with `co_approver` a second
    /// approver in the same process, so that plans needing two approvals (bulk removals) reach
    /// their quorum in a demo with one human approver.
    ///
    /// The co-approver is enrolled at start through the real path (a single-use invite, its own
    /// Ed25519 key made in memory, `POST /v1/approvers/enroll`) under `co_approver.name`, e.g.
    /// `CoApprover::default()`: "Ada (demo co-approver)", shown beside its approvals like any
    /// approver's name. It then follows the queue and, `co_approver.delay` after it first sees a
    /// pending plan approved by another approver and still short of its quorum, fetches the
    /// plan, recomputes its digest and sends a signed approval of it. It never approves a plan
    /// nobody else approved, a blocked plan, or one it decided already. A restart over the same
    /// database revokes the co-approver the previous start enrolled and enrolls a new one
    /// (its key lived in memory only). [`Embedded::co_approver_id`] names it.
    pub async fn start_with(
        database_url: &str,
        simulate_every: Option<Duration>,
        co_approver: Option<CoApprover>,
    ) -> anyhow::Result<Embedded> {
        let store = Store::open(database_url).await?;
        demo::seed(&store).await?;
        crate::recover_interrupted(&store).await?;
        let local_providers = LocalProviders::start().await?;
        let state = AppState::with_providers(
            store,
            "Demo gateway",
            Limits::default(),
            local_providers.providers(),
        )
        .await?;
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
        let mut co_approver_id = None;
        if let Some(co_approver) = co_approver {
            let running = co_approver.enroll(&state.store, &url).await?;
            co_approver_id = Some(running.approver_id.clone());
            tasks.push(tokio::spawn(running.run()));
        }
        if let Some(every) = simulate_every {
            tasks.push(tokio::spawn(AgentSim::new(&url, &agent_token).run(every)));
        }
        Ok(Embedded {
            url,
            state,
            local_providers,
            co_approver_id,
            tasks,
        })
    }

    /// The approver id of the demo co-approver, when one was started.
    pub fn co_approver_id(&self) -> Option<&str> {
        self.co_approver_id.as_deref()
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
