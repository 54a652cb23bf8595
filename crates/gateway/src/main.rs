//! `countersign-gateway`: serve, and the admin commands that print secrets.

use std::net::SocketAddr;
use std::time::Duration;

use clap::{Parser, Subcommand};
use countersign_gateway::sim::AgentSim;
use countersign_gateway::{accounts, app, demo, mcp, AppState, Store};
use tracing_subscriber::EnvFilter;

#[derive(Parser)]
#[command(
    name = "countersign-gateway",
    version,
    about = "The Countersign reference gateway"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the HTTP API.
    Serve {
        #[arg(long, env = "COUNTERSIGN_ADDR", default_value = "127.0.0.1:7780")]
        addr: SocketAddr,
        #[arg(long, env = "COUNTERSIGN_DATABASE")]
        database: String,
        /// Seed the demo world if the store is empty.
        #[arg(long)]
        demo: bool,
        #[arg(long, default_value = "Countersign gateway")]
        name: String,
    },
    /// Serve MCP on stdin/stdout for one agent, for MCP clients that start the gateway as a process.
    Mcp {
        #[arg(long, env = "COUNTERSIGN_DATABASE")]
        database: String,
        /// The agent's token (`agents add` prints it).
        #[arg(long, env = "COUNTERSIGN_AGENT_TOKEN", hide_env_values = true)]
        token: String,
        #[arg(long, default_value = "Countersign gateway")]
        name: String,
    },
    /// Manage approvers.
    Approvers {
        #[command(subcommand)]
        command: ApproverCommand,
    },
    /// Manage agents.
    Agents {
        #[command(subcommand)]
        command: AgentCommand,
    },
    /// Run a simulated agent against a gateway.
    AgentSim {
        #[arg(long)]
        url: String,
        #[arg(long, env = "COUNTERSIGN_AGENT_TOKEN")]
        token: String,
        #[arg(long, default_value_t = 3000)]
        interval_ms: u64,
    },
}

#[derive(Subcommand)]
enum ApproverCommand {
    /// Print a single-use enrollment code (last line of stdout).
    Invite {
        #[arg(long, env = "COUNTERSIGN_DATABASE")]
        database: String,
        #[arg(long)]
        name: String,
        /// The demo world's user id of this person (they may not approve their own agents' plans).
        #[arg(long)]
        user: Option<String>,
    },
}

#[derive(Subcommand)]
enum AgentCommand {
    /// Register an agent and print its token (last line of stdout).
    Add {
        #[arg(long, env = "COUNTERSIGN_DATABASE")]
        database: String,
        #[arg(long)]
        name: String,
        #[arg(long)]
        on_behalf_of: Option<String>,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().command {
        Command::Serve {
            addr,
            database,
            demo: with_demo,
            name,
        } => {
            let store = Store::open(&database).await?;
            if with_demo {
                demo::seed(&store).await?;
            }
            let state = AppState::new(store, &name).await?;
            let listener = tokio::net::TcpListener::bind(addr).await?;
            println!(
                "countersign-gateway {} listening on http://{}",
                state.gateway_id,
                listener.local_addr()?
            );
            axum::serve(listener, app(state))
                .with_graceful_shutdown(async {
                    let _ = tokio::signal::ctrl_c().await;
                })
                .await?;
        }
        Command::Mcp {
            database,
            token,
            name,
        } => {
            let store = Store::open(&database).await?;
            mcp::serve_stdio(AppState::new(store, &name).await?, &token).await?;
        }
        Command::Approvers {
            command:
                ApproverCommand::Invite {
                    database,
                    name,
                    user,
                },
        } => {
            let store = Store::open(&database).await?;
            let code = accounts::invite_approver(&store, &name, user.as_deref()).await?;
            println!("Enrollment code for {name} (single use):");
            println!("{code}");
        }
        Command::Agents {
            command:
                AgentCommand::Add {
                    database,
                    name,
                    on_behalf_of,
                },
        } => {
            let store = Store::open(&database).await?;
            let (id, token) = accounts::add_agent(&store, &name, on_behalf_of.as_deref()).await?;
            println!("Agent {id} token:");
            println!("{token}");
        }
        Command::AgentSim {
            url,
            token,
            interval_ms,
        } => {
            AgentSim::new(&url, &token)
                .run(Duration::from_millis(interval_ms))
                .await;
        }
    }
    Ok(())
}
