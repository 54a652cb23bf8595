//! A release `countersign-gateway serve --demo` in its own process on a loopback port, over a
//! fresh SQLite file or PostgreSQL database: the accounts it needs made with its admin commands, and the agent calls that
//! seed it with plans.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, ensure, Context as _};
use chrono::{DateTime, Utc};
use countersign_proto::decision::{Decision, Signer, Statement};
use countersign_proto::dsse::{encode_public_key, Envelope};
use countersign_proto::statement::Signed as _;
use ed25519_dalek::SigningKey;
use serde_json::{json, Value};
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, ChildStdout, Command};

use crate::settings::{Settings, Store};

/// Requests in flight while seeding: enough to keep both cores busy, few enough not to queue.
const SEED_CONCURRENCY: usize = 4;
/// Tries of an admin command that finds the database locked.
const ADMIN_ATTEMPTS: u64 = 5;

pub struct Gateway {
    pub api: Api,
    pub database: String,
    pub gateway_id: String,
    binary: PathBuf,
    child: Child,
    /// Held open: a gateway that prints again must not find its stdout closed.
    _stdout: BufReader<ChildStdout>,
    _dir: TempDir,
}

/// An approver whose key the harness holds in memory, to sign decisions in bulk.
pub struct BenchApprover {
    pub approver_id: String,
    pub key_id: String,
    pub token: String,
    pub gateway_id: String,
    key: SigningKey,
}

impl Gateway {
    pub async fn start(settings: &Settings) -> anyhow::Result<Gateway> {
        Gateway::start_with(settings, &[]).await
    }

    /// [`Gateway::start`] with more `serve` arguments (`--policy DIR`).
    pub async fn start_with(settings: &Settings, more: &[&str]) -> anyhow::Result<Gateway> {
        let binary = settings.bin_dir.join("countersign-gateway");
        ensure!(
            binary.exists(),
            "{} is missing: make bench builds it",
            binary.display()
        );
        let dir = tempfile::tempdir()?;
        let database = match &settings.store {
            Store::Sqlite => format!("sqlite://{}", dir.path().join("gateway.db").display()),
            Store::Postgres { server } => {
                countersign_engine::store::scratch_postgres(server, None).await?
            }
        };
        let log = std::fs::File::create(dir.path().join("gateway.log"))?;
        let mut child = Command::new(&binary)
            .args([
                "serve",
                "--addr",
                "127.0.0.1:0",
                "--demo",
                "--name",
                "Bench gateway",
                // The harness is its own hostile agent: 10,000 pending plans, bulk plans back to
                // back, thousands of dry_runs a second from one token. Measured, not throttled.
                "--rate-limit",
                "off",
                "--approver-rate-limit",
                "off",
                "--max-previews-in-flight",
                "64",
                "--max-streams",
                "1000",
                "--max-pending-plans",
                "1000000",
                "--max-subject-rows",
                "1000000000",
            ])
            .args(["--database", &database])
            .args(more)
            .stdout(Stdio::piped())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let mut stdout = BufReader::new(child.stdout.take().context("the gateway's stdout")?);
        let mut first = String::new();
        tokio::time::timeout(Duration::from_secs(120), stdout.read_line(&mut first))
            .await
            .context("the gateway did not say where it listens within 120 s")??;
        // "countersign-gateway gw_… listening on http://127.0.0.1:PORT"
        let url = first
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .with_context(|| format!("the gateway said {first:?}"))?
            .to_owned();
        let gateway_id = first
            .split_whitespace()
            .nth(1)
            .context("the gateway named no id")?
            .to_owned();
        Ok(Gateway {
            api: Api {
                url,
                http: reqwest::Client::new(),
            },
            database,
            gateway_id,
            binary,
            child,
            _stdout: stdout,
            _dir: dir,
        })
    }

    pub fn pid(&self) -> anyhow::Result<u32> {
        self.child.id().context("the gateway has exited")
    }

    /// Runs an admin command against this gateway's database; its last line of output. SQLite
    /// may refuse a second process's write while the server checkpoints: that is tried again.
    async fn admin(&self, args: &[&str]) -> anyhow::Result<String> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let output = Command::new(&self.binary)
                .args(args)
                .args(["--database", &self.database])
                .env("RUST_BACKTRACE", "0")
                .output()
                .await?;
            if output.status.success() {
                let stdout = String::from_utf8(output.stdout)?;
                return Ok(stdout.lines().last().unwrap_or_default().trim().to_owned());
            }
            let stderr = String::from_utf8_lossy(&output.stderr);
            let first = stderr.lines().next().unwrap_or_default().trim().to_owned();
            if attempt >= ADMIN_ATTEMPTS || !stderr.contains("database is locked") {
                bail!("countersign-gateway {}: {first}", args.join(" "));
            }
            tokio::time::sleep(Duration::from_millis(250 * attempt)).await;
        }
    }

    /// An agent acting for the demo world's team lead; its token.
    pub async fn agent(&self, name: &str) -> anyhow::Result<String> {
        self.add_agent(name, &[]).await
    }

    /// An agent whose wallet pays for `credits`: the bulk plan costs more than the default 50,
    /// and a plan its wallet cannot pay is blocked and reaches no approver.
    pub async fn funded_agent(&self, name: &str, credits: &str) -> anyhow::Result<String> {
        self.add_agent(name, &["--budget", credits]).await
    }

    async fn add_agent(&self, name: &str, more: &[&str]) -> anyhow::Result<String> {
        let args = [
            "agents",
            "add",
            "--name",
            name,
            "--on-behalf-of",
            "usr_lead",
        ];
        self.admin(&[&args[..], more].concat()).await
    }

    /// A single-use enrollment code.
    pub async fn invite(&self, name: &str) -> anyhow::Result<String> {
        self.admin(&["approvers", "invite", "--name", name]).await
    }

    /// Invites and enrolls an approver with a key made here.
    pub async fn approver(&self, name: &str) -> anyhow::Result<BenchApprover> {
        let code = self.invite(name).await?;
        let key = SigningKey::from_bytes(&rand::random());
        let answer: Value = self
            .api
            .http
            .post(format!("{}/v1/approvers/enroll", self.api.url))
            .json(&json!({"enrollment_code": code, "display_name": name,
                          "public_key": encode_public_key(&key.verifying_key())}))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let text = |field: &str| -> anyhow::Result<String> {
            Ok(answer[field]
                .as_str()
                .context("an enrollment answer")?
                .to_owned())
        };
        Ok(BenchApprover {
            approver_id: text("approver_id")?,
            key_id: text("key_id")?,
            token: text("token")?,
            gateway_id: text("gateway_id")?,
            key,
        })
    }

    /// `count` dry_runs, `SEED_CONCURRENCY` at a time; the previews in the order asked for.
    pub async fn seed(
        &self,
        token: &str,
        count: usize,
        request: impl Fn(usize) -> (&'static str, Value) + Send + Sync + 'static,
    ) -> anyhow::Result<Vec<Value>> {
        let next = Arc::new(AtomicUsize::new(0));
        let request = Arc::new(request);
        let mut workers = tokio::task::JoinSet::new();
        for _ in 0..SEED_CONCURRENCY {
            let (next, request) = (next.clone(), request.clone());
            let api = self.api.clone();
            let token = token.to_owned();
            workers.spawn(async move {
                let mut made = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= count {
                        return anyhow::Ok(made);
                    }
                    let (capability, params) = request(i);
                    made.push((i, api.dry_run(&token, capability, &params).await?));
                }
            });
        }
        let mut previews = Vec::with_capacity(count);
        while let Some(done) = workers.join_next().await {
            previews.extend(done??);
        }
        previews.sort_by_key(|(i, _)| *i);
        Ok(previews.into_iter().map(|(_, p)| p).collect())
    }
}

/// The gateway's HTTP API as the agents of the harness call it; cheap to clone into tasks.
#[derive(Clone)]
pub struct Api {
    pub url: String,
    pub http: reqwest::Client,
}

impl Api {
    pub async fn dry_run(
        &self,
        token: &str,
        capability: &str,
        params: &Value,
    ) -> anyhow::Result<Value> {
        let response = self
            .http
            .post(format!("{}/v1/capabilities/{capability}/dry_run", self.url))
            .bearer_auth(token)
            .json(&json!({ "params": params }))
            .send()
            .await?;
        let status = response.status();
        let body: Value = response.json().await?;
        if status != 200 || body["plan_id"].as_str().is_none() {
            bail!("dry_run of {capability} answered {status}: {body}");
        }
        Ok(body)
    }

    /// The last subject id (ids ascend) of an effect, paged through as its agent may.
    pub async fn last_subject(
        &self,
        token: &str,
        plan_id: &str,
        effect_id: &str,
    ) -> anyhow::Result<String> {
        let mut cursor: Option<String> = None;
        let mut last = None;
        loop {
            let mut request = self
                .http
                .get(format!(
                    "{}/v1/plans/{plan_id}/effects/{effect_id}/subjects",
                    self.url
                ))
                .bearer_auth(token)
                .query(&[("limit", "5000")]);
            if let Some(cursor) = &cursor {
                request = request.query(&[("cursor", cursor)]);
            }
            let page: Value = request.send().await?.error_for_status()?.json().await?;
            if let Some(id) = page["items"].as_array().and_then(|i| i.last()) {
                last = id["id"].as_str().map(str::to_owned);
            }
            match page["next_cursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => return last.context("an effect without subjects"),
            }
        }
    }
}

/// A plan that always waits for one approver: `projects.settings.update` on `prj_184`.
pub fn pending_plan(i: usize) -> (&'static str, Value) {
    // 30 is the project's retention today, which would make a plan with nothing to do.
    let days = 31 + (i % 3_000);
    (
        "projects.settings.update",
        json!({"project": "prj_184", "retention_days": days}),
    )
}

/// The seeds' bulk example at its size: every employee of `grp_all_staff`, 100,000 of its 111,111
/// members (the filter needs an employment kind, and a tenth are contractors).
pub fn bulk_plan() -> (&'static str, Value) {
    (
        "groups.members.remove",
        json!({"group": "grp_all_staff", "filter": {"employment": "employee"}}),
    )
}

impl BenchApprover {
    /// A signed approval of `preview` (a dry_run answer), as a console would send it.
    pub fn approval(&self, preview: &Value) -> anyhow::Result<Envelope> {
        let text = |field: &str| -> anyhow::Result<String> {
            Ok(preview[field].as_str().context("a preview")?.to_owned())
        };
        let expires_at: DateTime<Utc> = text("expires_at")?.parse()?;
        let signer = Signer {
            approver_id: &self.approver_id,
            key_id: &self.key_id,
            audience: &self.gateway_id,
        };
        let plan = (text("plan_id")?, text("plan_digest")?);
        let statement = Statement::new(
            signer,
            (&plan.0, &plan.1),
            Decision::Approve,
            None,
            expires_at,
        );
        Ok(statement.sign(&self.key)?)
    }
}

/// One listing of the pending queue, every page of it.
pub struct Listing {
    pub items: usize,
    pub pages: usize,
    /// The first page's ETag: what a polling console sends next.
    pub etag: String,
}

impl Api {
    /// `GET /v1/approvals?status=pending`, following `next_cursor` where the gateway pages.
    pub async fn pending(&self, token: &str) -> anyhow::Result<Listing> {
        let mut listing = Listing {
            items: 0,
            pages: 0,
            etag: String::new(),
        };
        let mut cursor: Option<String> = None;
        loop {
            let mut url = format!("{}/v1/approvals?status=pending", self.url);
            if let Some(cursor) = &cursor {
                url.push_str(&format!("&cursor={cursor}"));
            }
            let response = self.http.get(url).bearer_auth(token).send().await?;
            ensure!(
                response.status() == 200,
                "listing answered {}",
                response.status()
            );
            if listing.pages == 0 {
                listing.etag = response
                    .headers()
                    .get("etag")
                    .and_then(|v| v.to_str().ok())
                    .context("a listing without an ETag")?
                    .to_owned();
            }
            let page: Value = response.json().await?;
            listing.items += page["items"].as_array().map_or(0, Vec::len);
            listing.pages += 1;
            match page["next_cursor"].as_str() {
                Some(next) if listing.pages < 10_000 => cursor = Some(next.to_owned()),
                Some(_) => bail!("the listing pages past 10,000 pages"),
                None => return Ok(listing),
            }
        }
    }
}
