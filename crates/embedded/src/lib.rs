//! The reference gateway composed in-process: the shipped packs (the demo world, the engine's
//! budget guard, the model providers) over the engine and its HTTP API. The desktop starts it as
//! its demo, on a loopback port with a local model provider, a simulated agent and a simulated
//! second approver; the server and the tests compose their gateways from the same parts.
//!
//! It links the engine, the HTTP API and the packs, and never MCP, SMTP or TLS.

mod co_approver;
pub mod policy_check;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use std::net::SocketAddr;

use axum::Router;
use countersign_api::{app, AppState};
use countersign_demo_world::sim::AgentSim;
use countersign_engine::execution::external::recover_interrupted;
use countersign_engine::{accounts, approval::teams, Engine, Limits, Registry, Store};
use countersign_pack::Pack;
use countersign_policy::Policy;
use countersign_providers::local::LocalProviders;
use countersign_providers::{PackSettings, Providers};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub use co_approver::CoApprover;

/// The reference gateway's capabilities, in the order it lists them: the demo world's, the
/// budget guard, the provider pack at `settings` calling `providers`, and a coding agent's tool
/// calls (`agent.tool_call`, released to the agent once approved).
pub fn registry(settings: &PackSettings, providers: Providers) -> Result<Registry, String> {
    Registry::new(packs(settings, providers))
}

/// The packs of [`registry`], for a composition that serves more beside them.
pub fn packs(settings: &PackSettings, providers: Providers) -> Vec<Pack> {
    vec![
        countersign_demo_world::pack(),
        countersign_engine::builtin_pack(),
        countersign_providers::pack(settings, providers),
        countersign_agent_tools::pack(),
    ]
}

/// [`registry`] with the default settings and no provider endpoint, made once per process.
pub fn default_registry() -> &'static Registry {
    static DEFAULT: OnceLock<&'static Registry> = OnceLock::new();
    DEFAULT.get_or_init(|| {
        registry(&PackSettings::default(), Providers::none())
            .expect("the shipped packs have distinct ids")
            .leak()
    })
}

/// The reference gateway over `store`, serving `registry` with `limits`: its engine started and
/// its HTTP state made.
pub async fn state(
    store: Store,
    name: &str,
    limits: Limits,
    registry: &'static Registry,
) -> anyhow::Result<Arc<AppState>> {
    state_with_policy(store, name, limits, registry, Policy::builtin()).await
}

/// [`state`] under the approval policy `policy`.
pub async fn state_with_policy(
    store: Store,
    name: &str,
    limits: Limits,
    registry: &'static Registry,
    policy: Policy,
) -> anyhow::Result<Arc<AppState>> {
    let engine = Engine::start_with_policy(store, name, limits, registry, policy).await?;
    Ok(AppState::new(engine))
}

/// Serves `router` on `127.0.0.1:<free port>` until the task is aborted; its URL.
pub async fn listen(router: Router) -> anyhow::Result<(String, JoinHandle<()>)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let service = router.into_make_service_with_connect_info::<SocketAddr>();
    let task = tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, service).await {
            tracing::error!(error = %e, "an in-process gateway stopped");
        }
    });
    Ok((url, task))
}

/// The demo's teams: what an example policy (`examples/policy`) asks for.
pub const DEMO_TEAMS: [(&str, &str); 7] = [
    ("leads", "usr_lead"),
    ("leads", "usr_92"),
    ("leads", "usr_08"),
    ("finance", "usr_41"),
    ("finance", "usr_50"),
    ("oncall", "usr_02"),
    ("oncall", "usr_07"),
];

/// Seeds the demo world into `store`, once; what it has already is left as it is. Its teams are
/// seeded while the directory is empty.
pub async fn seed_demo(store: &Store) -> anyhow::Result<()> {
    let mut w = store.write().await?;
    countersign_demo_world::seed(&mut w.tx).await?;
    let teams: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM team_members")
        .fetch_one(&mut *w.tx)
        .await?;
    if teams == 0 {
        for (team, person) in DEMO_TEAMS {
            teams::add(&mut w.tx, team, person).await?;
        }
    }
    w.commit().await?;
    Ok(())
}

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
        Embedded::start_under(database_url, simulate_every, co_approver, Policy::builtin()).await
    }

    /// [`Embedded::start_with`] under the approval policy `policy`.
    pub async fn start_under(
        database_url: &str,
        simulate_every: Option<Duration>,
        co_approver: Option<CoApprover>,
        policy: Policy,
    ) -> anyhow::Result<Embedded> {
        let store = Store::open(database_url).await?;
        seed_demo(&store).await?;
        let local_providers = LocalProviders::start().await?;
        let registry = registry(&PackSettings::default(), local_providers.providers())
            .map_err(anyhow::Error::msg)?
            .leak();
        recover_interrupted(&store, registry).await?;
        let state =
            state_with_policy(store, "Demo gateway", Limits::default(), registry, policy).await?;
        let (_, agent_token) =
            accounts::rotate_agent_token(&state.store, "ops", Some("usr_lead")).await?;
        let (url, server) = listen(app(state.clone())).await?;
        let mut tasks = vec![server];
        let mut co_approver_id = None;
        if let Some(co_approver) = co_approver {
            let running = co_approver.enroll(&state.store, registry, &url).await?;
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
