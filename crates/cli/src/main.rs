//! `countersign-cli`: the console's functions in a terminal, for approvers on servers and for
//! scripts. Exit codes: 0 done, 1 refused (the code is printed), 2 usage, 3 gateway unreachable.

mod audit;
mod hook;
mod json;
mod mail;
mod outcome;
mod prompt;
mod render;
mod standing;
mod style;

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use countersign_console::live::{Live, Timing};
use countersign_console::review;
use countersign_console::review::rules::Turn;
use countersign_console::session::{self, JOURNAL};
use countersign_console::signing::signer::Signer;
use countersign_console::{Console, ConsoleError};
use prompt::Prompt;
use serde::Serialize;

#[derive(Parser)]
#[command(
    name = "countersign-cli",
    version,
    about = "Review and countersign AI-agent plans from a terminal"
)]
struct Cli {
    /// The gateway; remembered after `enroll`.
    #[arg(long, global = true, env = "COUNTERSIGN_GATEWAY_URL")]
    url: Option<String>,
    /// Where the journal and the gateway list live (default: the desktop app's data directory).
    #[arg(long, global = true, env = "COUNTERSIGN_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Machine-readable output: one JSON document (or one per line for `watch`).
    #[arg(long, global = true)]
    json: bool,
    /// A PEM file of certificates to trust besides the system's roots (a private CA, or a
    /// self-signed gateway).
    #[arg(long, global = true, env = "COUNTERSIGN_CA_CERT")]
    ca_cert: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Make a key in the OS keyring and enroll it with a single-use invite.
    Enroll {
        /// The invite `approvers invite` printed; `-` reads it from standard input. Prefer
        /// `-` or the environment: arguments are visible to other users of the machine.
        #[arg(long, env = "COUNTERSIGN_ENROLLMENT_CODE", hide_env_values = true)]
        code: Option<String>,
        /// Only to check: the invite carries the name it was issued for.
        #[arg(long, env = "COUNTERSIGN_APPROVER_NAME")]
        name: Option<String>,
    },
    /// The plans waiting for a decision.
    Pending {
        /// Only the plans waiting on me: a rule of the gateway's policy not yet met asks for me.
        #[arg(long)]
        mine: bool,
    },
    /// A plan as an approver reviews it.
    Show { plan: String },
    /// Sign and send an approval of the plan as shown.
    Approve {
        plan: String,
        #[arg(long)]
        reason: Option<String>,
        /// Do not ask before approving a risky plan.
        #[arg(long)]
        yes: bool,
    },
    /// Sign and send a rejection.
    Reject {
        plan: String,
        #[arg(long)]
        reason: String,
    },
    /// Ask for a fresh preview and print what changed.
    Refresh { plan: String },
    /// An effect's subjects, all of them; `--verify` checks the full set against its digest.
    Subjects {
        plan: String,
        effect: String,
        #[arg(long)]
        verify: bool,
    },
    /// Follow the queue live until interrupted.
    Watch,
    /// Every decision this machine sent, verified offline.
    History {
        /// Write the journal as JSON Lines to this file (`-` for standard output).
        #[arg(long)]
        export: Option<PathBuf>,
        /// `json` (the journal's own entries) or `in-toto` (an audit others can verify: each
        /// decision the gateway accepted, each standing approval of yours and each plan it
        /// covered, as in-toto Statements wrapping the signed envelopes; needs --export FILE).
        #[arg(long, default_value = "json")]
        format: ExportFormat,
    },
    /// Standing approvals: list, create from a plan, revoke.
    Standing {
        #[command(subcommand)]
        command: standing::StandingCommand,
    },
    /// An executed plan's emails that could not go as planned: list, release, resend, cancel.
    Mail {
        #[command(subcommand)]
        command: mail::MailCommand,
    },
    /// The gateway's approver public keys (what `verify` checks against), fetched once.
    Keys {
        /// Write them to this file instead of standard output.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Check an in-toto export offline: which entries verify against the approvers' keys.
    Verify {
        /// The export `history --format in-toto --export` wrote.
        file: PathBuf,
        /// The keys `keys --out` wrote; without it they are fetched once from the gateway.
        #[arg(long)]
        keys: Option<PathBuf>,
    },
    /// Replace the signing key; the old one's public half is kept for history.
    RotateKey,
    /// A coding agent's hook: its tool call previewed, waited on and released as the agent
    /// (docs/agent-hook.md). Prints the agent's decision; always exits 0.
    Hook {
        #[command(subcommand)]
        agent: hook::HookAgent,
    },
    /// Send the credential of the current gateway to a new URL from now on (the gateway moved):
    /// only after the gateway there proves the identity key it was enrolled under.
    MoveCredential {
        /// The gateway's new URL.
        #[arg(long)]
        to: String,
        /// Do not ask before moving.
        #[arg(long)]
        yes: bool,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ExportFormat {
    Json,
    InToto,
}

/// An outcome for the exit code: usage problems are the caller's to fix.
#[derive(Debug)]
enum Failure {
    Usage(String),
    Console(ConsoleError),
}

impl From<ConsoleError> for Failure {
    fn from(e: ConsoleError) -> Self {
        Failure::Console(e)
    }
}

type Outcome = Result<(), Failure>;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            // Claude Code runs a call whose hook failed with any status but 2.
            let hook = matches!(cli.command, Command::Hook { .. });
            return ExitCode::from(if hook { 2 } else { 1 });
        }
    };
    let json = cli.json;
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            let (code, message, exit) = match failure {
                Failure::Usage(message) => ("usage".to_owned(), message, 2),
                Failure::Console(e) => {
                    let exit = match &e {
                        ConsoleError::Unreachable { .. } | ConsoleError::Queued(_) => 3,
                        ConsoleError::NotEnrolled
                        | ConsoleError::Invalid(_)
                        | ConsoleError::InsecureTransport(_) => 2,
                        _ => 1,
                    };
                    (e.code(), e.to_string(), exit)
                }
            };
            if json {
                println!(
                    "{}",
                    json::line(&serde_json::json!({"error": {"code": code, "message": message}}))
                );
            } else {
                eprintln!("error [{code}]: {}", style::clean(&message));
            }
            ExitCode::from(exit)
        }
    }
}

fn data_dir(cli: &Cli) -> Result<PathBuf, Failure> {
    cli.data_dir
        .clone()
        .or_else(session::default_data_dir)
        .ok_or_else(|| Failure::Usage("no data directory: pass --data-dir".to_owned()))
}

/// The last gateway `enroll` talked to, so later commands need no `--url`.
const CURRENT: &str = "cli-gateway";

fn gateway_url(cli: &Cli, dir: &Path) -> Result<String, Failure> {
    cli.url
        .clone()
        .or_else(|| {
            std::fs::read_to_string(dir.join(CURRENT))
                .ok()
                .map(|s| s.trim().to_owned())
        })
        .filter(|u| !u.is_empty())
        .ok_or_else(|| Failure::Usage("no gateway: pass --url or run `enroll` first".to_owned()))
}

fn print<T: Serialize>(json: bool, value: &T, text: impl FnOnce() -> String) {
    if json {
        println!("{}", json::pretty(value));
    } else {
        print!("{}", style::finish(&text()));
    }
}

async fn open(cli: &Cli) -> Result<Console, Failure> {
    let dir = data_dir(cli)?;
    let url = gateway_url(cli, &dir)?;
    let (console, _) = session::connect(&dir, &url, None, None).await?;
    // Whatever an earlier run could not deliver goes out first; a refusal is reported, not lost.
    let flushed = console.flush().await?;
    for (plan_id, why) in flushed.refused {
        eprintln!(
            "note: the queued decision on {} was refused [{}]: {}",
            style::clean(&plan_id),
            style::clean(&why.code),
            style::clean(&why.message)
        );
    }
    Ok(console)
}

/// The invite from `--code`, from standard input for `--code -`, or from
/// `COUNTERSIGN_ENROLLMENT_CODE` (which clap reads into `--code`).
fn enrollment_code(code: Option<&str>) -> Result<String, Failure> {
    let code = match code {
        Some("-") => {
            let mut line = String::new();
            std::io::stdin()
                .lock()
                .read_line(&mut line)
                .map_err(|e| Failure::Usage(format!("cannot read the code: {e}")))?;
            line
        }
        Some(code) => code.to_owned(),
        None => String::new(),
    };
    let code = code.trim();
    if code.is_empty() {
        return Err(Failure::Usage(
            "enroll needs the invite: --code -, with the code on standard input, or \
             COUNTERSIGN_ENROLLMENT_CODE"
                .to_owned(),
        ));
    }
    Ok(code.to_owned())
}

async fn run(cli: Cli) -> Outcome {
    // The hook answers every failure with a decision of its own (hook.rs).
    if let (Some(path), false) = (&cli.ca_cert, matches!(cli.command, Command::Hook { .. })) {
        countersign_console::transport::trust_ca_file(path)?;
    }
    let style = style::Style::detect();
    let json = cli.json;
    match &cli.command {
        Command::Enroll { code, name } => {
            let dir = data_dir(&cli)?;
            let url = cli
                .url
                .clone()
                .ok_or_else(|| Failure::Usage("enroll needs --url".to_owned()))?;
            let code = enrollment_code(code.as_deref())?;
            let (console, gateway_name) =
                session::connect(&dir, &url, Some(&code), name.as_deref()).await?;
            countersign_console::private_files::write(&dir.join(CURRENT), url.as_bytes())?;
            let signer = console.signer();
            let out = serde_json::json!({
                "gateway_id": signer.gateway_id(), "gateway_name": gateway_name,
                "approver_id": signer.approver_id(), "key_id": signer.key_id(), "url": url,
            });
            print(json, &out, || {
                format!(
                    "Enrolled with {gateway_name} ({}) as {} ({}); key {} is in the OS keyring.\n",
                    signer.gateway_id(),
                    signer.display_name(),
                    signer.approver_id(),
                    signer.key_id()
                )
            });
        }
        Command::Pending { mine } => {
            let console = open(&cli).await?;
            console.sync().await?;
            let mut view = console.queue();
            if *mine {
                view.items.retain(|item| item.turn == Turn::Me);
            }
            print(json, &view, || render::queue(&view));
        }
        Command::Show { plan } => {
            let console = open(&cli).await?;
            // The plan record names its capability's title, so a plan no longer in the queue
            // (executed, rejected) is titled too.
            let fetched = console.client().plan(plan).await?;
            let mut view = review::plan_view(
                &fetched,
                fetched.record.title.as_deref(),
                Some(console.signer().approver_id()),
                chrono::Utc::now(),
            );
            let me = console.whoami().await;
            review::apply_rules(&mut view, &fetched.record, me.as_ref());
            let budget = budget(&console, &fetched.record).await;
            let link = countersign_proto::plan::link(&view.plan_id);
            print(
                json,
                &serde_json::json!({"plan": view, "budget": budget, "link": link}),
                || render::plan(&style, &view, budget.as_ref().map(|b| b.to_string())),
            );
        }
        Command::Approve { plan, reason, yes } => {
            let console = open(&cli).await?;
            let view = console.plan_view(plan).await?;
            if let Some(why) = &view.not_approvable_reason {
                return Err(ConsoleError::NotApprovable(why.clone()).into());
            }
            if !view.risk.is_empty() && !yes && !std::io::stdin().is_terminal() {
                return Err(Failure::Usage(format!(
                    "{} is risky ({}): pass --yes to approve it without a prompt",
                    view.plan_id,
                    view.risk.join(", ")
                )));
            }
            let out = match console
                .approve(plan, &view.digest, reason.clone(), &Prompt { yes: *yes })
                .await
            {
                Err(ConsoleError::Cancelled) => {
                    return Err(Failure::Usage("not approved".to_owned()))
                }
                other => other?,
            };
            print(json, &out, || render::decision(&out));
        }
        Command::Reject { plan, reason } => {
            let console = open(&cli).await?;
            let view = console.plan_view(plan).await?;
            let out = console.reject(plan, &view.digest, reason.clone()).await?;
            print(json, &out, || render::decision(&out));
        }
        Command::Refresh { plan } => {
            let console = open(&cli).await?;
            let refreshed = console.refresh(plan).await?;
            let (view, changed) = (refreshed.plan, refreshed.changed);
            print(
                json,
                &serde_json::json!({"plan": view, "changed": changed}),
                || render::changed(&style, &changed),
            );
        }
        Command::Subjects {
            plan,
            effect,
            verify,
        } => {
            let console = open(&cli).await?;
            if *verify {
                let check = console.verify_subjects(plan, effect).await?;
                print(json, &check, || render::check(&check));
                if !check.matches {
                    return Err(ConsoleError::DigestMismatch {
                        claimed: check.expected_digest,
                        computed: check.computed_digest,
                    }
                    .into());
                }
            } else {
                let ids = console.client().all_subjects(plan, effect).await?;
                print(json, &ids, || {
                    ids.iter().map(|id| format!("{id}\n")).collect()
                });
            }
        }
        Command::Watch => watch(open(&cli).await?, json).await?,
        Command::History {
            export: Some(path),
            format: ExportFormat::InToto,
        } => audit::export(&open(&cli).await?, path, json).await?,
        Command::History {
            export: None,
            format: ExportFormat::InToto,
        } => {
            return Err(Failure::Usage(
                "--format in-toto writes a file: pass --export FILE".to_owned(),
            ))
        }
        Command::Standing { command } => standing::run(&open(&cli).await?, command, json).await?,
        Command::Mail { command } => mail::run(&open(&cli).await?, command, json).await?,
        Command::Keys { out } => audit::keys(&open(&cli).await?, out.as_deref(), json).await?,
        Command::Verify { file, keys } => {
            let keys = match keys {
                Some(path) => audit::keys_from(path)?,
                None => open(&cli).await?.approver_keys().await?,
            };
            audit::verify(file, &keys, json)?;
        }
        Command::History { export, .. } => {
            let dir = data_dir(&cli)?;
            let journal =
                countersign_console::signing::journal::Journal::open(&dir.join(JOURNAL)).await?;
            if let Some(path) = export {
                let count = if path.as_os_str() == "-" {
                    journal.export(&mut std::io::stdout().lock()).await?
                } else {
                    let mut file = std::fs::File::create(path).map_err(|e| {
                        Failure::Console(ConsoleError::Storage(format!("{}: {e}", path.display())))
                    })?;
                    let count = journal.export(&mut file).await?;
                    file.flush()
                        .map_err(|e| Failure::Console(ConsoleError::Storage(e.to_string())))?;
                    count
                };
                if path.as_os_str() != "-" {
                    print(
                        json,
                        &serde_json::json!({"exported": count, "file": path}),
                        || format!("Wrote {count} decisions to {}.\n", path.display()),
                    );
                }
                return Ok(());
            }
            // Against the keys the keyring holds for each gateway, loaded once per gateway.
            let mut signers = std::collections::HashMap::new();
            let mut entries = Vec::new();
            for e in journal.entries(None).await? {
                if !signers.contains_key(&e.gateway_id) {
                    let signer = Signer::load(&e.gateway_id)?;
                    signers.insert(e.gateway_id.clone(), signer);
                }
                let verified = signers[&e.gateway_id]
                    .as_ref()
                    .is_some_and(|signer| e.verify_with(signer).is_ok());
                entries.push((e, verified));
            }
            let out: Vec<_> = entries
                .iter()
                .map(|(e, verified)| serde_json::json!({"entry": e, "verified": verified}))
                .collect();
            print(json, &out, || render::history(&entries));
        }
        Command::Hook { agent } => {
            let answer = hook::run(agent, cli.url.clone(), cli.ca_cert.clone()).await;
            println!("{}", answer.to_json());
        }
        Command::RotateKey => {
            let mut console = open(&cli).await?;
            console.rotate_key().await?;
            let signer = console.signer();
            let out = serde_json::json!({"key_id": signer.key_id(), "retired": signer.retired()});
            print(json, &out, || {
                format!("Now signing with {}.\n", signer.key_id())
            });
        }
        Command::MoveCredential { to, yes } => {
            let dir = data_dir(&cli)?;
            let from = gateway_url(&cli, &dir)?;
            let gateway_id = session::gateway_at(&dir, &from).ok_or(ConsoleError::NotEnrolled)?;
            session::move_credential(&dir, &gateway_id, to, &Prompt { yes: *yes }).await?;
            let to = to.trim();
            countersign_console::private_files::write(&dir.join(CURRENT), to.as_bytes())?;
            let out = serde_json::json!({"gateway_id": gateway_id, "from": from, "to": to});
            print(json, &out, || {
                format!("The credential for {gateway_id} is sent to {to} from now on.\n")
            });
        }
    }
    Ok(())
}

/// The agent's remaining budget: from the plan record, or asked of a gateway whose records do
/// not carry it yet.
async fn budget(
    console: &Console,
    record: &countersign_proto::approvals::PlanRecord,
) -> Option<serde_json::Value> {
    let (agent, remaining, limit) = match &record.wallet {
        Some(w) => (
            w.agent_id.clone(),
            w.remaining_credits.to_string(),
            w.limit_credits.to_string(),
        ),
        None => {
            let agent_id = &record.plan.caller.agent_id;
            let w = console.client().wallet(agent_id).await.ok()?;
            (
                w.agent_id,
                w.remaining_credits.to_string(),
                w.limit_credits.to_string(),
            )
        }
    };
    Some(serde_json::json!(format!(
        "{remaining} of {limit} credits left to {agent}"
    )))
}

async fn watch(console: Console, json: bool) -> Outcome {
    let (live, mut snapshots) = Live::new(console.client().clone(), Timing::default());
    let task = tokio::spawn(live.run());
    let stop = tokio::signal::ctrl_c();
    tokio::pin!(stop);
    let mut shown = None;
    loop {
        tokio::select! {
            changed = snapshots.changed() => {
                if changed.is_err() {
                    break;
                }
            }
            _ = &mut stop => break,
        }
        let snapshot = snapshots.borrow_and_update().clone();
        if shown == Some((snapshot.generation, snapshot.link)) {
            continue;
        }
        shown = Some((snapshot.generation, snapshot.link));
        let view = review::queue(&snapshot.items);
        let last = snapshot
            .last_sync
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
        let text = if json {
            format!(
                "{}\n",
                json::line(
                    &serde_json::json!({"link": snapshot.link, "last_sync": last, "queue": view})
                )
            )
        } else {
            format!(
                "— {} · last sync {}\n{}",
                render::link(snapshot.link),
                last.as_deref().unwrap_or("never"),
                style::finish(&render::queue(&view))
            )
        };
        // A closed pipe (`watch | head`) ends the watch quietly.
        let mut stdout = std::io::stdout().lock();
        if stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush())
            .is_err()
        {
            break;
        }
    }
    task.abort();
    Ok(())
}
