//! A simulated agent: previews settings changes now and then, and executes its approved plans,
//! which moves the world underneath other pending plans so that some of them go stale.

use std::time::Duration;

use countersign_proto::approvals::{PlanRecord, PlanStatus};
use rand::seq::SliceRandom as _;
use serde_json::json;

const PROJECTS: [&str; 3] = ["prj_184", "prj_200", "prj_311"];
const RETENTIONS: [i64; 7] = [7, 14, 21, 30, 60, 90, 365];

pub struct AgentSim {
    client: reqwest::Client,
    url: String,
    token: String,
    outstanding: Vec<String>,
}

impl AgentSim {
    pub fn new(url: &str, token: &str) -> AgentSim {
        AgentSim {
            client: reqwest::Client::new(),
            url: url.trim_end_matches('/').to_owned(),
            token: token.to_owned(),
            outstanding: Vec::new(),
        }
    }

    /// Runs forever, one step every `every`.
    pub async fn run(mut self, every: Duration) {
        let mut ticker = tokio::time::interval(every);
        loop {
            ticker.tick().await;
            if let Err(e) = self.step().await {
                tracing::warn!(error = %e, "agent simulator step failed");
            }
        }
    }

    /// Executes whatever was approved, then previews one new change.
    pub async fn step(&mut self) -> anyhow::Result<()> {
        let mut still_open = Vec::new();
        for plan_id in std::mem::take(&mut self.outstanding) {
            let record: PlanRecord = self
                .client
                .get(format!("{}/v1/plans/{plan_id}", self.url))
                .bearer_auth(&self.token)
                .send()
                .await?
                .error_for_status()?
                .json()
                .await?;
            match record.status {
                PlanStatus::Approved => {
                    let response = self
                        .client
                        .post(format!(
                            "{}/v1/capabilities/{}/invoke",
                            self.url, record.plan.capability_id
                        ))
                        .bearer_auth(&self.token)
                        .json(&json!({"plan_id": plan_id, "idempotency_key": plan_id}))
                        .send()
                        .await?;
                    tracing::info!(%plan_id, status = %response.status(), "simulated agent invoked");
                }
                PlanStatus::PendingApproval => still_open.push(plan_id),
                _ => {}
            }
        }
        self.outstanding = still_open;

        let (project, days) = {
            let mut rng = rand::thread_rng();
            (
                *PROJECTS.choose(&mut rng).unwrap_or(&PROJECTS[0]),
                *RETENTIONS.choose(&mut rng).unwrap_or(&RETENTIONS[0]),
            )
        };
        let preview: serde_json::Value = self
            .client
            .post(format!(
                "{}/v1/capabilities/projects.settings.update/dry_run",
                self.url
            ))
            .bearer_auth(&self.token)
            .json(&json!({"params": {"project": project, "retention_days": days}}))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        if preview["would_require_approval"] == true {
            if let Some(id) = preview["plan_id"].as_str() {
                self.outstanding.push(id.to_owned());
            }
        }
        Ok(())
    }
}
