//! A real gateway on a loopback port for the console's tests, an agent that previews plans on
//! it, and an enrolled console whose credential is removed from the keyring when dropped.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use countersign_api::AppState;
use countersign_console::signing::journal::Journal;
use countersign_console::signing::signer::Signer;
use countersign_console::{Confirm, Console};
use countersign_embedded::Embedded;
use countersign_engine::accounts;
use serde_json::{json, Value};
use tempfile::TempDir;
use tokio::task::JoinHandle;

pub struct Gateway {
    /// Where consoles reach the gateway: through a relay that can be cut and restored.
    pub url: String,
    pub state: Arc<AppState>,
    /// Dropped with the gateway: its server, and its local model provider.
    _gateway: Embedded,
    relay: Relay,
    pub dir: TempDir,
}

/// A TCP relay to the gateway whose every connection can be cut at once: a stopped gateway, as
/// far as a console can tell, with no keep-alive connection left over.
struct Relay {
    addr: SocketAddr,
    upstream: SocketAddr,
    tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl Relay {
    async fn start(upstream: SocketAddr) -> anyhow::Result<Relay> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let relay = Relay {
            addr: listener.local_addr()?,
            upstream,
            tasks: Arc::new(Mutex::new(Vec::new())),
        };
        relay.accept(listener);
        Ok(relay)
    }

    fn accept(&self, listener: tokio::net::TcpListener) {
        let (upstream, tasks) = (self.upstream, self.tasks.clone());
        let acceptor = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let copy = tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                tasks.lock().unwrap().push(copy);
            }
        });
        self.tasks.lock().unwrap().push(acceptor);
    }

    fn cut(&self) {
        for task in self.tasks.lock().unwrap().drain(..) {
            task.abort();
        }
    }

    async fn restore(&self) -> anyhow::Result<()> {
        let listener = tokio::net::TcpListener::bind(self.addr).await?;
        self.accept(listener);
        Ok(())
    }
}

impl Gateway {
    pub async fn start() -> anyhow::Result<Gateway> {
        let dir = tempfile::tempdir()?;
        let database = format!("sqlite://{}", dir.path().join("gateway.db").display());
        let gateway = Embedded::start(&database, None).await?;
        let upstream = gateway.url.trim_start_matches("http://").parse()?;
        let relay = Relay::start(upstream).await?;
        Ok(Gateway {
            url: format!("http://{}", relay.addr),
            state: gateway.state.clone(),
            _gateway: gateway,
            relay,
            dir,
        })
    }

    /// Stops answering: the port closes, open connections end.
    pub fn stop(&self) {
        self.relay.cut();
    }

    /// Answers again on the same port.
    pub async fn resume(&self) -> anyhow::Result<()> {
        // The cut listener's port may take a moment to be free again.
        for _ in 0..50 {
            if self.relay.restore().await.is_ok() {
                return Ok(());
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        self.relay.restore().await
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

    /// A console enrolled as `name`, with a journal in the gateway's temporary directory.
    pub async fn console(&self, name: &str) -> anyhow::Result<Enrolled> {
        let code = self.invite(name).await?;
        let console = Console::enroll(&self.url, &code, name).await?;
        let gateway_id = console.signer().gateway_id().to_owned();
        let journal = Journal::open(&self.dir.path().join(format!("{name}.db"))).await?;
        Ok(Enrolled {
            console: Arc::new(console.with_journal(journal)),
            gateway_id,
        })
    }
}

/// The params of a retention change of `project` to `days` (`projects.settings.update`).
pub fn retention(project: &str, days: u32) -> Value {
    json!({"project": project, "retention_days": days})
}

/// A console whose keyring entry goes when the test ends.
pub struct Enrolled {
    pub console: Arc<Console>,
    pub gateway_id: String,
}

impl Drop for Enrolled {
    fn drop(&mut self) {
        let _ = Signer::forget(&self.gateway_id);
    }
}

pub struct Agent {
    http: reqwest::Client,
    url: String,
    token: String,
}

impl Agent {
    /// Previews `params` and answers the plan id.
    pub async fn plan(&self, capability: &str, params: Value) -> anyhow::Result<String> {
        let response = self
            .http
            .post(format!("{}/v1/capabilities/{capability}/dry_run", self.url))
            .bearer_auth(&self.token)
            .json(&json!({ "params": params }))
            .send()
            .await?;
        let status = response.status();
        let body: Value = response.json().await?;
        anyhow::ensure!(status.is_success(), "dry_run answered {status}: {body}");
        Ok(body["plan_id"].as_str().unwrap_or_default().to_owned())
    }

    pub async fn invoke(&self, capability: &str, plan_id: &str) -> anyhow::Result<Value> {
        let response = self
            .http
            .post(format!("{}/v1/capabilities/{capability}/invoke", self.url))
            .bearer_auth(&self.token)
            .json(&json!({ "plan_id": plan_id }))
            .send()
            .await?;
        Ok(response.json().await?)
    }
}

/// Answers every confirmation with `yes` and keeps what it was shown.
#[derive(Default)]
pub struct Recorder {
    pub yes: bool,
    pub asked: Mutex<Vec<(String, String, Vec<String>)>>,
}

impl Recorder {
    pub fn answering(yes: bool) -> Recorder {
        Recorder {
            yes,
            asked: Mutex::new(Vec::new()),
        }
    }

    pub fn asked(&self) -> Vec<(String, String, Vec<String>)> {
        self.asked.lock().unwrap().clone()
    }
}

impl Confirm for Recorder {
    fn confirm(&self, title: &str, consequence: &str, lines: &[String]) -> bool {
        self.asked
            .lock()
            .unwrap()
            .push((title.to_owned(), consequence.to_owned(), lines.to_vec()));
        self.yes
    }
}

pub const SETTINGS: &str = "projects.settings.update";
pub const REMOVE: &str = "groups.members.remove";

/// Keyring tests run in a D-Bus session with a Secret Service: `tests/with-keyring.sh`.
/// A gateway, its agent `ops`, and the console of an approver enrolled as `name`: where most
/// tests start.
pub async fn approving(name: &str) -> anyhow::Result<(Gateway, Agent, Enrolled)> {
    require_secret_service();
    let gateway = Gateway::start().await?;
    let agent = gateway.agent("ops").await?;
    let console = gateway.console(name).await?;
    Ok((gateway, agent, console))
}

pub fn require_secret_service() {
    assert!(
        std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some(),
        "no D-Bus session: run this test through tests/with-keyring.sh (make test does)"
    );
}
