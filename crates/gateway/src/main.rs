//! `countersign-gateway`: serve, and the admin commands that print secrets.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};
use countersign_demo_world::sim::AgentSim;
use countersign_engine::accounts::scopes::Scope;
use countersign_engine::approval::receipts::Signer;
use countersign_engine::store::backup;
use countersign_engine::{
    accounts, accounts::identity, approval::revocation, approval::standing, approval::teams,
    Limits, Registry, Store,
};
use countersign_gateway::{config, mcp, policy_report, serve, standing_report, telemetry};
use countersign_policy::Policy;
use countersign_proto::Credits;

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
    /// Serve the HTTP API: HTTPS with --tls-cert and --tls-key, plain HTTP on loopback only.
    /// Every setting may also come from a config file (--config) or COUNTERSIGN_<SETTING>.
    Serve {
        #[command(flatten)]
        flags: Box<config::Flags>,
    },
    /// Copy a SQLite store while it serves, into a new file readable by its owner only (it
    /// holds the gateway's identity key). PostgreSQL: pg_dump (docs/operations.md).
    Backup {
        #[arg(long, env = "COUNTERSIGN_DATABASE")]
        database: String,
        /// The file to write; never overwritten.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
    /// Put a backup in place as a new SQLite store (the file must not exist, or be empty);
    /// `serve` on it resumes where the backup was taken.
    Restore {
        /// The backup `backup` wrote.
        #[arg(long, value_name = "FILE")]
        from: PathBuf,
        #[arg(long, env = "COUNTERSIGN_DATABASE")]
        database: String,
    },
    /// How approvals are going: per capability and approver, plans decided, approval rate,
    /// median and p90 time to decision, plans expired waiting, approvals faster than reading.
    Stats {
        #[arg(long, env = "COUNTERSIGN_DATABASE")]
        database: String,
        /// The window: 7d, 24h, 90m (at most 366 days).
        #[arg(long, default_value = "7d", value_parser = countersign_engine::approval::stats::parse_window)]
        since: chrono::Duration,
        /// The numbers as `GET /v1/stats` answers them.
        #[arg(long)]
        json: bool,
    },
    /// Check a config file: print the settings `serve` would run with, secrets redacted.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Serve MCP on stdin/stdout for one agent, for MCP clients that start the gateway as a process.
    Mcp {
        #[arg(long, env = "COUNTERSIGN_DATABASE")]
        database: String,
        #[command(flatten)]
        token: AgentToken,
        #[arg(long, default_value = "Countersign gateway")]
        name: String,
        #[command(flatten)]
        providers: ProviderArgs,
        #[command(flatten)]
        policy: PolicyArg,
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
    /// Revoke an approver: their token and every key of theirs.
    RevokeApprover {
        #[arg(long, env = "COUNTERSIGN_DATABASE")]
        database: String,
        /// The approver's id (`apr_…`).
        #[arg(long)]
        approver: String,
    },
    /// Revoke one approver key: decisions signed with it are refused from now on.
    RevokeKey {
        #[arg(long, env = "COUNTERSIGN_DATABASE")]
        database: String,
        /// The key's id (`key_…`).
        #[arg(long)]
        key: String,
    },
    /// Revoke an agent's token.
    RevokeAgent {
        #[arg(long, env = "COUNTERSIGN_DATABASE")]
        database: String,
        /// The agent's id (`agt_…`).
        #[arg(long)]
        agent: String,
    },
    /// List or revoke standing approvals (docs/standing.md).
    Standing {
        #[command(subcommand)]
        command: StandingCommand,
    },
    /// Check an approval policy: what it requires of each demo plan, or its own tests.
    Policy {
        #[command(subcommand)]
        command: PolicyCommand,
    },
    /// Run a simulated agent against a gateway.
    AgentSim {
        #[arg(long)]
        url: String,
        #[command(flatten)]
        token: AgentToken,
        #[arg(long, default_value_t = 3000)]
        interval_ms: u64,
    },
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Validate FILE and print the effective settings under this environment, each with where
    /// it came from; an unknown key fails, naming its line.
    Check { file: PathBuf },
}

#[derive(Subcommand)]
enum StandingCommand {
    /// Every standing approval, with its use and state.
    List {
        #[arg(long, env = "COUNTERSIGN_DATABASE")]
        database: String,
    },
    /// Revoke one at once, as the gateway's admin: its approvals of plans not yet run stop counting.
    Revoke {
        #[arg(long, env = "COUNTERSIGN_DATABASE")]
        database: String,
        /// The standing approval's id (`sa_…`).
        id: String,
    },
}

#[derive(Subcommand)]
enum ApproverCommand {
    /// Print a single-use enrollment code (last line of stdout), bound to this gateway's identity.
    Invite {
        #[arg(long, env = "COUNTERSIGN_DATABASE")]
        database: String,
        /// The approver's display name; the enrollee cannot choose another.
        #[arg(long)]
        name: String,
        /// Hours until the code expires.
        #[arg(long, default_value_t = accounts::DEFAULT_CODE_HOURS,
              value_parser = clap::value_parser!(i64).range(1..=8760))]
        expires_in_hours: i64,
        /// The demo world's user id of this person (they may not approve their own agents' plans).
        #[arg(long)]
        user: Option<String>,
        /// A team of this person, repeatable (needs --user): policies' rules ask teams.
        #[arg(long = "team", requires = "user")]
        teams: Vec<String>,
    },
    /// The directory of teams.
    Teams {
        #[command(subcommand)]
        command: TeamsCommand,
    },
}

#[derive(Subcommand)]
enum TeamsCommand {
    /// Make these the teams of a person (none: take them out of every team).
    Set {
        #[arg(long, env = "COUNTERSIGN_DATABASE")]
        database: String,
        /// A user id (`usr_…`), or an approver's id for an approver invited without one.
        #[arg(long)]
        person: String,
        #[arg(long = "team")]
        teams: Vec<String>,
    },
    /// Every team, its people and its agents.
    List {
        #[arg(long, env = "COUNTERSIGN_DATABASE")]
        database: String,
    },
}

#[derive(Subcommand)]
enum PolicyCommand {
    /// Evaluate the policy in DIR against the demo plans and print what each requires.
    Check { dir: PathBuf },
    /// Run the policy's own `test_*` rules, as `opa test` does; fails unless all pass.
    Test { dir: PathBuf },
}

/// The approval policy to serve under.
#[derive(clap::Args)]
struct PolicyArg {
    /// A directory of `.rego` files (package countersign.approval) and an optional data.json;
    /// without it, each capability's own rule (docs/policy.md).
    #[arg(long = "policy", env = "COUNTERSIGN_POLICY", value_name = "DIR")]
    dir: Option<PathBuf>,
    /// The heap, in MiB, past which a policy evaluation stops with `policy_error` instead of
    /// taking the machine's memory (a ceiling for the whole process).
    #[arg(long = "policy-heap-limit-mb", env = "COUNTERSIGN_POLICY_HEAP_LIMIT_MB",
          default_value_t = countersign_policy::DEFAULT_HEAP_LIMIT >> 20)]
    heap_limit_mb: u64,
}

impl PolicyArg {
    fn load(&self) -> anyhow::Result<Policy> {
        serve::load_policy(self.dir.as_deref(), self.heap_limit_mb)
    }
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
        /// What the agent may use: `capability_id` or `capability_id:resource`, repeatable.
        /// Without any, the agent may use every capability on every resource.
        #[arg(long = "scope", value_name = "CAPABILITY[:RESOURCE]", value_parser = scope)]
        scopes: Vec<Scope>,
        /// The agent's credit limit (default 50.00): a plan that may cost more is blocked, and
        /// a blocked plan reaches no approver.
        #[arg(long, value_name = "CREDITS")]
        budget: Option<countersign_proto::Credits>,
        /// The team the agent works for: policies may ask its team, or exclude it.
        #[arg(long)]
        team: Option<String>,
    },
}

/// An agent's token, never on the command line, where every user of the machine can read it: from
/// `COUNTERSIGN_AGENT_TOKEN`, or the first line of a file.
#[derive(clap::Args)]
struct AgentToken {
    /// A file whose first line is the agent's token (`agents add` prints it); without it,
    /// COUNTERSIGN_AGENT_TOKEN.
    #[arg(long, value_name = "PATH")]
    token_file: Option<PathBuf>,
}

impl AgentToken {
    fn read(&self) -> anyhow::Result<String> {
        let token = match &self.token_file {
            Some(path) => std::fs::read_to_string(path)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_owned(),
            None => std::env::var("COUNTERSIGN_AGENT_TOKEN").unwrap_or_default(),
        };
        anyhow::ensure!(
            !token.is_empty(),
            "no agent token: set COUNTERSIGN_AGENT_TOKEN or give --token-file"
        );
        Ok(token)
    }
}

/// A scope of one of the shipped capabilities.
fn scope(text: &str) -> Result<Scope, String> {
    countersign_embedded::default_registry().scope(text)
}

/// Where provider capabilities' calls go. Keys come from the environment or the OS keyring
/// (service `countersign-gateway`, user `openai` or `replicate`), never from a flag or a file.
#[derive(clap::Args)]
struct ProviderArgs {
    /// Base URL of an OpenAI-compatible API (text.generate, speech.synthesize); its key from
    /// COUNTERSIGN_OPENAI_API_KEY or the keyring.
    #[arg(long, env = "COUNTERSIGN_OPENAI_URL")]
    openai_url: Option<String>,
    /// Base URL of a Replicate-style predictions API (image.generate, video.generate); its
    /// token from COUNTERSIGN_REPLICATE_API_TOKEN or the keyring.
    #[arg(long, env = "COUNTERSIGN_REPLICATE_URL")]
    replicate_url: Option<String>,
    /// Provider plans that may cost more than this many credits wait for an approver.
    #[arg(long, default_value = "1.00")]
    approve_provider_calls_above: Credits,
    /// An MCP server to stand in front of: NAME=COMMAND or NAME=URL, as for serve.
    #[arg(long, value_name = "NAME=COMMAND|URL")]
    mcp_upstream: Vec<String>,
}

impl ProviderArgs {
    /// The shipped packs, the providers' with this approval threshold and calling the
    /// configured providers, and the tools of the MCP upstreams.
    async fn registry(&self) -> anyhow::Result<&'static Registry> {
        let providers =
            serve::providers(self.openai_url.as_deref(), self.replicate_url.as_deref())?;
        let upstreams = serve::connect_upstreams(&self.mcp_upstream).await?;
        serve::registry(self.approve_provider_calls_above, providers, &upstreams)
    }
}

fn contents_line(c: &backup::Contents) -> String {
    format!(
        "{}: {} plans, {} decisions, {} audit rows, {} standing approvals",
        match &c.gateway_id {
            Some(id) => format!("gateway {id}"),
            None => "a store no gateway has served yet".to_owned(),
        },
        c.plans,
        c.decisions,
        c.audit_rows,
        c.standing_approvals
    )
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let command = Cli::parse().command;
    if let Command::Serve { flags } = command {
        let settings = config::load(flags.config.as_deref(), &flags.given())?;
        let _telemetry = telemetry::init(settings.log_format, settings.otlp_endpoint.as_deref())?;
        return serve::serve(settings).await;
    }
    let _telemetry = telemetry::init(telemetry::LogFormat::Text, None)?;
    match command {
        Command::Serve { .. } => unreachable!("served above"),
        Command::Config {
            command: ConfigCommand::Check { file },
        } => print!("{}", config::check(&file)?),
        Command::Stats {
            database,
            since,
            json,
        } => {
            let store = Store::open(&database).await?;
            let stats =
                countersign_engine::approval::stats::window(&store, chrono::Utc::now() - since)
                    .await
                    .map_err(|e| anyhow::anyhow!("{}", e.message))?;
            match json {
                true => println!("{}", serde_json::to_string_pretty(&stats)?),
                false => print!("{}", countersign_gateway::stats_report::text(&stats)),
            }
        }
        Command::Backup { database, out } => {
            let contents = backup::backup(&database, &out).await?;
            println!(
                "Backed up {} to {}.",
                contents_line(&contents),
                out.display()
            );
        }
        Command::Restore { from, database } => {
            let contents = backup::restore(&from, &database).await?;
            println!(
                "Restored {} into {}.",
                contents_line(&contents),
                countersign_engine::secrets::redacted_url(&database)
            );
        }
        Command::Mcp {
            database,
            token,
            name,
            providers,
            policy,
        } => {
            let policy = policy.load()?;
            let store = Store::open(&database).await?;
            let registry = providers.registry().await?;
            let state = countersign_embedded::state_with_policy(
                store,
                &name,
                Limits::default(),
                registry,
                policy,
            )
            .await?;
            mcp::serve_stdio(state, &token.read()?).await?;
        }
        Command::Approvers {
            command:
                ApproverCommand::Invite {
                    database,
                    name,
                    expires_in_hours,
                    user,
                    teams,
                },
        } => {
            let store = Store::open(&database).await?;
            let valid_for = chrono::Duration::hours(expires_in_hours);
            let code =
                accounts::invite_approver_for(&store, &name, user.as_deref(), valid_for).await?;
            if let (Some(person), false) = (&user, teams.is_empty()) {
                teams::set_person(&store, person, &teams).await?;
                println!("{person} is in {}.", teams.join(", "));
            }
            println!(
                "Enrollment code for {} (single use, expires in {expires_in_hours} h):",
                name.trim()
            );
            println!("{code}");
        }
        Command::Approvers {
            command:
                ApproverCommand::Teams {
                    command:
                        TeamsCommand::Set {
                            database,
                            person,
                            teams: names,
                        },
                },
        } => {
            let store = Store::open(&database).await?;
            teams::set_person(&store, &person, &names).await?;
            match names.is_empty() {
                true => println!("{person} is in no team."),
                false => println!("{person} is in {}.", names.join(", ")),
            }
        }
        Command::Approvers {
            command:
                ApproverCommand::Teams {
                    command: TeamsCommand::List { database },
                },
        } => {
            let store = Store::open(&database).await?;
            let listing = teams::list(&store).await?;
            if listing.teams.is_empty() {
                println!("No teams.");
            }
            for (team, members) in listing.teams {
                println!("{team}: {}", members.people.join(", "));
                if !members.agents.is_empty() {
                    println!("  agents: {}", members.agents.join(", "));
                }
            }
        }
        Command::Policy {
            command: PolicyCommand::Check { dir },
        } => {
            let policy = Policy::load(&dir).map_err(|e| anyhow::anyhow!("{e}"))?;
            let checked = countersign_embedded::policy_check::check(policy.clone()).await?;
            print!("{}", policy_report::requirements(&policy, &checked));
        }
        Command::Policy {
            command: PolicyCommand::Test { dir },
        } => {
            let policy = Policy::load(&dir).map_err(|e| anyhow::anyhow!("{e}"))?;
            let (report, passed) = policy_report::tests(&policy.run_tests());
            print!("{report}");
            anyhow::ensure!(passed, "the policy's tests did not all pass");
        }
        Command::RevokeApprover { database, approver } => {
            let store = Store::open(&database).await?;
            revocation::revoke_approver(
                &store,
                countersign_embedded::default_registry(),
                &approver,
            )
            .await?;
            println!("Revoked approver {approver} and every key of theirs.");
        }
        Command::RevokeKey { database, key } => {
            let store = Store::open(&database).await?;
            let approver =
                revocation::revoke_key(&store, countersign_embedded::default_registry(), &key)
                    .await?;
            println!("Revoked key {key} of approver {approver}.");
        }
        Command::Standing {
            command: StandingCommand::List { database },
        } => {
            let store = Store::open(&database).await?;
            let (gateway_id, identity) = (
                store.gateway_id().await?,
                identity::load_or_create(&store).await?,
            );
            let signer = Signer {
                gateway_id: &gateway_id,
                identity: &identity,
            };
            let mut cursor = None;
            loop {
                let page = standing::list(&store, signer, cursor.as_deref(), standing::MAX_PAGE)
                    .await
                    .map_err(|e| anyhow::anyhow!("{}", e.message))?;
                print!("{}", standing_report::list(&page, cursor.is_none()));
                cursor = page.next_cursor;
                if cursor.is_none() {
                    break;
                }
            }
        }
        Command::Standing {
            command: StandingCommand::Revoke { database, id },
        } => {
            let store = Store::open(&database).await?;
            let registry = countersign_embedded::default_registry();
            let (gateway_id, identity) = (
                store.gateway_id().await?,
                identity::load_or_create(&store).await?,
            );
            let signer = Signer {
                gateway_id: &gateway_id,
                identity: &identity,
            };
            let revoked =
                standing::revoke((&store, registry), signer, standing::Revoker::Admin, &id)
                    .await
                    .map_err(|e| anyhow::anyhow!("{}", e.message))?;
            println!(
                "Revoked standing approval {id} of {}; it had let {} plans run.",
                revoked.display_name, revoked.plans_used
            );
        }
        Command::RevokeAgent { database, agent } => {
            let store = Store::open(&database).await?;
            revocation::revoke_agent(&store, &agent).await?;
            println!("Revoked agent {agent}.");
        }
        Command::Agents {
            command:
                AgentCommand::Add {
                    database,
                    name,
                    on_behalf_of,
                    scopes,
                    budget,
                    team,
                },
        } => {
            let store = Store::open(&database).await?;
            if scopes.is_empty() {
                eprintln!(
                    "warning: agent {name} has no --scope: it may preview and invoke every \
                     capability on every resource"
                );
            }
            let (id, token) =
                accounts::add_scoped_agent(&store, &name, on_behalf_of.as_deref(), &scopes).await?;
            if let Some(budget) = budget {
                let mut w = store.write().await?;
                countersign_engine::execution::wallet::set_limit(&mut w.tx, &id, budget).await?;
                w.commit().await?;
            }
            if let Some(team) = &team {
                teams::set_agent(&store, &id, Some(team)).await?;
            }
            println!("Agent {id} token:");
            println!("{token}");
        }
        Command::AgentSim {
            url,
            token,
            interval_ms,
        } => {
            AgentSim::new(&url, &token.read()?)
                .run(Duration::from_millis(interval_ms))
                .await;
        }
    }
    Ok(())
}
