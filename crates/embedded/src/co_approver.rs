//! A second approver the demo gateway runs itself, so that plans needing two approvals (bulk
//! removals) reach their quorum in a demo with one human. It is an approver like any other: its
//! own Ed25519 key, enrolled with a single-use invite over HTTP, and signed decisions sent to
//! `POST /v1/plans/{id}/decisions` over the digest it recomputed from the plan it fetched. It
//! never approves first: only a plan another approver has approved, after a delay.

use std::collections::HashMap;
use std::time::Duration;

use countersign_proto::approvals::{
    ApprovalList, EnrollResponse, PlanRecord, PlanStatus, PlanSummary, RiskFlag,
};
use countersign_proto::decision::{Decision, Signer, Statement};
use countersign_proto::digest::plan_digest;
use countersign_proto::dsse::encode_public_key;
use ed25519_dalek::SigningKey;
use reqwest::header::{ETAG, IF_NONE_MATCH};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio::time::Instant;

use countersign_engine::{accounts, approval::revocation, Registry, Store};
use countersign_proto::statement::Signed as _;

/// Where the gateway remembers its current co-approver, so a restart revokes the last one (its
/// key lived in memory only) instead of piling up approvers nobody can sign for.
const META_KEY: &str = "demo_co_approver";

/// How often the queue is looked at; a `304` costs the gateway one indexed read.
const POLL: Duration = Duration::from_millis(250);

/// The demo's second approver, as [`crate::Embedded::start_with`] takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoApprover {
    /// The name approvers see beside its approvals; say that it is simulated.
    pub name: String,
    /// How long a plan must have waited with another approver's approval before it adds its own.
    pub delay: Duration,
}

impl Default for CoApprover {
    fn default() -> CoApprover {
        CoApprover {
            name: "Ada (demo co-approver)".to_owned(),
            delay: Duration::from_secs(5),
        }
    }
}

/// The enrolled co-approver and what it is waiting to approve.
pub struct Running {
    client: reqwest::Client,
    url: String,
    pub approver_id: String,
    key_id: String,
    token: String,
    gateway_id: String,
    key: SigningKey,
    delay: Duration,
    etag: Option<String>,
    listed: Vec<PlanSummary>,
    /// Plans it will approve, with when they were first seen approved by somebody else.
    due: HashMap<String, Instant>,
}

impl CoApprover {
    /// Enrolls it with the gateway at `url` over `store` (the embedded gateway's own), revoking
    /// the one a previous start enrolled.
    pub async fn enroll(
        &self,
        store: &Store,
        registry: &'static Registry,
        url: &str,
    ) -> anyhow::Result<Running> {
        let previous: Option<String> = sqlx::query_scalar("SELECT value FROM meta WHERE key = $1")
            .bind(META_KEY)
            .fetch_optional(store.pool())
            .await?;
        if let Some(previous) = previous {
            if let Err(e) = revocation::revoke_approver(store, registry, &previous).await {
                tracing::debug!(error = %e, "the previous co-approver is gone already");
            }
        }
        let code = accounts::invite_approver(store, &self.name, None).await?;
        let key = SigningKey::generate(&mut rand::rngs::OsRng);
        let client = reqwest::Client::new();
        let url = url.trim_end_matches('/').to_owned();
        let enrolled: EnrollResponse = client
            .post(format!("{url}/v1/approvers/enroll"))
            .json(&json!({"enrollment_code": code, "display_name": self.name,
                          "public_key": encode_public_key(&key.verifying_key())}))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let mut w = store.write().await?;
        sqlx::query(
            "INSERT INTO meta (key, value) VALUES ($1, $2)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        )
        .bind(META_KEY)
        .bind(&enrolled.approver_id)
        .execute(&mut *w.tx)
        .await?;
        w.commit().await?;
        Ok(Running {
            client,
            url,
            approver_id: enrolled.approver_id,
            key_id: enrolled.key_id,
            token: enrolled.token,
            gateway_id: enrolled.gateway_id,
            key,
            delay: self.delay,
            etag: None,
            listed: Vec::new(),
            due: HashMap::new(),
        })
    }
}

impl Running {
    /// Follows the queue forever.
    pub async fn run(mut self) {
        let mut tick = tokio::time::interval(POLL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if let Err(e) = self.step().await {
                tracing::warn!(error = %e, "the demo co-approver could not look at the queue");
            }
        }
    }

    /// Lists the queue (conditionally), notes the plans it may approve, approves those due.
    pub async fn step(&mut self) -> anyhow::Result<()> {
        let mut request = self
            .client
            .get(format!("{}/v1/approvals?status=pending", self.url))
            .bearer_auth(&self.token);
        if let Some(etag) = &self.etag {
            request = request.header(IF_NONE_MATCH, etag);
        }
        let response = request.send().await?;
        if response.status() != StatusCode::NOT_MODIFIED {
            self.etag = response
                .headers()
                .get(ETAG)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let list: ApprovalList = response.error_for_status()?.json().await?;
            self.listed = list.items;
        }
        let now = Instant::now();
        let wanted: Vec<String> = self
            .listed
            .iter()
            .filter(|s| self.seconds(s))
            .map(|s| s.plan_id.clone())
            .collect();
        self.due.retain(|plan_id, _| wanted.contains(plan_id));
        for plan_id in wanted {
            self.due.entry(plan_id).or_insert(now);
        }
        let ready: Vec<String> = self
            .due
            .iter()
            .filter(|(_, since)| now.duration_since(**since) >= self.delay)
            .map(|(plan_id, _)| plan_id.clone())
            .collect();
        for plan_id in ready {
            self.due.remove(&plan_id);
            if let Err(e) = self.approve(&plan_id).await {
                tracing::warn!(%plan_id, error = %e, "the demo co-approver did not approve");
            }
        }
        Ok(())
    }

    /// Whether it would second this plan: waiting, not blocked, approved by somebody else and
    /// still short of its quorum, not yet decided by itself.
    fn seconds(&self, plan: &PlanSummary) -> bool {
        let received = &plan.approvals.received;
        let approvals = received
            .iter()
            .filter(|a| a.decision == Decision::Approve)
            .count();
        plan.status == PlanStatus::PendingApproval
            && !plan.risk.contains(&RiskFlag::Blocked)
            && (approvals as u32) < plan.approvals.required
            && received
                .iter()
                .any(|a| a.decision == Decision::Approve && a.approver_id != self.approver_id)
            && received.iter().all(|a| a.approver_id != self.approver_id)
    }

    /// Fetches the plan, digests what it fetched, and signs an approval of exactly that.
    async fn approve(&self, plan_id: &str) -> anyhow::Result<()> {
        let raw: Value = self
            .client
            .get(format!("{}/v1/plans/{plan_id}", self.url))
            .bearer_auth(&self.token)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let record: PlanRecord = serde_json::from_value(raw.clone())?;
        let digest = plan_digest(&raw["plan"])?;
        anyhow::ensure!(
            digest == record.plan.plan_digest,
            "plan {plan_id} does not hash to the digest it claims"
        );
        if record.status != PlanStatus::PendingApproval {
            return Ok(());
        }
        let signer = Signer {
            approver_id: &self.approver_id,
            key_id: &self.key_id,
            audience: &self.gateway_id,
        };
        let statement = Statement::new(
            signer,
            (plan_id, &digest),
            Decision::Approve,
            Some("Seconded in the demo after another approver approved.".to_owned()),
            record.plan.expires_at,
        );
        let envelope = statement.sign(&self.key)?;
        let response = self
            .client
            .post(format!("{}/v1/plans/{plan_id}/decisions", self.url))
            .bearer_auth(&self.token)
            .json(&envelope)
            .send()
            .await?;
        let status = response.status();
        anyhow::ensure!(
            status.is_success(),
            "the gateway answered {status}: {}",
            response.text().await.unwrap_or_default()
        );
        tracing::info!(%plan_id, "the demo co-approver approved");
        Ok(())
    }
}
