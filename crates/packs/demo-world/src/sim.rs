//! A simulated agent with a realistic mixed stream: small settings changes and role grants, bulk
//! removals, quota changes, uploads after a budget check, model provider calls; some blocked, and, because it executes
//! what gets approved (and what needs no approval) the world moves under other pending plans,
//! so some of them go stale.

use std::time::Duration;

use countersign_proto::approvals::{PlanRecord, PlanStatus};
use rand::seq::SliceRandom as _;
use rand::Rng as _;
use serde_json::{json, Value};

const PROJECTS: [&str; 5] = ["prj_184", "prj_200", "prj_311", "prj_420", "prj_421"];
const RETENTIONS: [i64; 7] = [7, 14, 21, 30, 60, 90, 365];
const ROLES: [&str; 3] = ["viewer", "editor", "admin"];
const FILES: [(&str, &str); 4] = [
    ("incident-review.pdf", "application/pdf"),
    ("runbook.md", "text/markdown"),
    ("dashboard.png", "image/png"),
    ("export.txt", "text/plain"),
];

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

    /// Sends `request`, waiting out a `429` for as long as its `Retry-After` says, as a
    /// well-behaved agent does.
    async fn send(&self, request: reqwest::RequestBuilder) -> anyhow::Result<reqwest::Response> {
        loop {
            let attempt = request
                .try_clone()
                .ok_or_else(|| anyhow::anyhow!("the request cannot be sent twice"))?;
            let response = attempt.send().await?;
            if response.status() != reqwest::StatusCode::TOO_MANY_REQUESTS {
                return Ok(response);
            }
            let seconds = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse().ok())
                .unwrap_or(1);
            tokio::time::sleep(Duration::from_secs(seconds)).await;
        }
    }

    async fn post(&self, path: &str, body: Value) -> anyhow::Result<(u16, Value)> {
        let request = self
            .client
            .post(format!("{}{path}", self.url))
            .bearer_auth(&self.token)
            .json(&body);
        let response = self.send(request).await?;
        let status = response.status().as_u16();
        Ok((status, response.json().await?))
    }

    async fn invoke(&self, capability: &str, body: Value) -> anyhow::Result<(u16, Value)> {
        self.post(&format!("/v1/capabilities/{capability}/invoke"), body)
            .await
    }

    /// Executes whatever was approved, then makes one new request.
    pub async fn step(&mut self) -> anyhow::Result<()> {
        let mut still_open = Vec::new();
        for plan_id in std::mem::take(&mut self.outstanding) {
            let request = self
                .client
                .get(format!("{}/v1/plans/{plan_id}", self.url))
                .bearer_auth(&self.token);
            let record: PlanRecord = self.send(request).await?.error_for_status()?.json().await?;
            match record.status {
                PlanStatus::Approved => {
                    let body = json!({"plan_id": plan_id, "idempotency_key": plan_id});
                    let (status, _) = self.invoke(&record.plan.capability_id, body).await?;
                    tracing::info!(%plan_id, status, "simulated agent invoked");
                }
                PlanStatus::PendingApproval => still_open.push(plan_id),
                _ => {}
            }
        }
        self.outstanding = still_open;

        let (capability, params) = next_request();
        if capability == "documents.document.upload" {
            return self.upload(params).await;
        }
        let (status, preview) = self
            .post(
                &format!("/v1/capabilities/{capability}/dry_run"),
                json!({ "params": params }),
            )
            .await?;
        anyhow::ensure!(status == 200, "dry_run answered {status}: {preview}");
        let Some(plan_id) = preview["plan_id"].as_str() else {
            return Ok(());
        };
        if preview["executable"] != true {
            // Nobody may approve it and no person is asked: the plan stays with its agent, which
            // would fix its request first (seed 004).
            tracing::info!(%plan_id, "the simulated agent's plan is blocked; it waits for nobody");
        } else if preview["would_require_approval"] == true {
            self.outstanding.push(plan_id.to_owned());
        } else {
            self.invoke(capability, json!({ "plan_id": plan_id }))
                .await?;
        }
        Ok(())
    }

    /// Seed 000's agent rule: check the budget with the preview's maximum, then upload the plan
    /// previewed (or wait for its approval).
    async fn upload(&mut self, params: Value) -> anyhow::Result<()> {
        let capability = "documents.document.upload";
        let (_, preview) = self
            .post(
                &format!("/v1/capabilities/{capability}/dry_run"),
                json!({ "params": params }),
            )
            .await?;
        if preview["executable"] != true || preview["estimated_cost"]["currency"] != "credits" {
            return Ok(());
        }
        let estimate: f64 = preview["estimated_cost"]["amount_max"]
            .as_str()
            .and_then(|a| a.parse().ok())
            .unwrap_or(f64::MAX);
        let guard = json!({"params": {"estimated_cost_credits": estimate}});
        let (status, _) = self
            .invoke("wallet.agent_budget.guard.check", guard)
            .await?;
        // The plan previewed, not a second copy of the params: what runs is what was read.
        let Some(plan_id) = preview["plan_id"].as_str() else {
            return Ok(());
        };
        if status != 200 {
            return Ok(());
        }
        if preview["would_require_approval"] == true {
            self.outstanding.push(plan_id.to_owned());
        } else {
            self.invoke(capability, json!({ "plan_id": plan_id }))
                .await?;
        }
        Ok(())
    }
}

/// One request of the mixed stream.
fn next_request() -> (&'static str, Value) {
    let mut rng = rand::thread_rng();
    let project = *PROJECTS.choose(&mut rng).unwrap_or(&PROJECTS[0]);
    match rng.gen_range(0..100) {
        0..30 => (
            "projects.settings.update",
            json!({"project": project, "retention_days": RETENTIONS.choose(&mut rng).unwrap_or(&30)}),
        ),
        30..48 => {
            // Now and then the agent asks for someone who already holds a role there: blocked.
            let (project, subject) = match rng.gen_range(0..10) {
                0..3 => ("prj_184", "usr_40".to_owned()),
                3..6 => (project, "usr_92".to_owned()),
                _ => (project, format!("usr_{:02}", rng.gen_range(38..=45))),
            };
            (
                "memberships.grant",
                json!({"project": project, "subject": subject,
                       "role": ROLES.choose(&mut rng).unwrap_or(&"viewer")}),
            )
        }
        48..56 => {
            let params = if rng.gen_bool(0.5) {
                json!({"group": "grp_support", "filter": {"employment": "contractor"}})
            } else {
                let users: std::collections::BTreeSet<String> = (0..30)
                    .map(|_| format!("usr_s{:06}", rng.gen_range(1..=111_111)))
                    .collect();
                json!({"group": "grp_all_staff", "filter": {"employment": "employee", "users": users}})
            };
            ("groups.members.remove", params)
        }
        56..64 => {
            let quota_bytes = [80_000_000, 125_000_000, 200_000_000][rng.gen_range(0..3)];
            (
                "storage.quota.update",
                json!({"quota": "sq_product", "quota_bytes": quota_bytes}),
            )
        }
        64..80 => provider_request(&mut rng),
        _ => {
            let (filename, mime_type) = *FILES.choose(&mut rng).unwrap_or(&FILES[0]);
            (
                "documents.document.upload",
                json!({"project": project, "filename": filename, "mime_type": mime_type,
                       "size_bytes": rng.gen_range(10_000..5_000_000)}),
            )
        }
    }
}

/// A call to a model provider: mostly cheap ones that run at once, now and then one whose
/// maximum cost waits for an approver.
fn provider_request(rng: &mut impl rand::Rng) -> (&'static str, Value) {
    let topic = *TOPICS.choose(rng).unwrap_or(&TOPICS[0]);
    match rng.gen_range(0..10) {
        0..4 => (
            "text.generate",
            json!({"model": "gpt-4o-mini", "max_tokens": 256, "messages": [
                {"role": "system", "content": "You write short internal updates."},
                {"role": "user", "content": format!("Draft a two-line update about {topic}.")}]}),
        ),
        4..5 => (
            "text.generate",
            json!({"model": "gpt-4o", "max_tokens": 2048, "messages": [
                {"role": "user", "content": format!("Write the full report on {topic}.")}]}),
        ),
        5..7 => (
            "speech.synthesize",
            json!({"model": "tts-1", "voice": "nova", "format": "wav",
                   "input": format!("Reminder: {topic} is on today's agenda.")}),
        ),
        7..9 => (
            "image.generate",
            json!({"model": "black-forest-labs/flux-schnell", "count": 2,
                   "prompt": format!("A friendly illustration of {topic}")}),
        ),
        _ => (
            "video.generate",
            json!({"model": "minimax/video-01", "seconds": 2,
                   "prompt": format!("A short clip about {topic}")}),
        ),
    }
}

const TOPICS: [&str; 4] = [
    "the on-call rotation",
    "the storage cleanup",
    "the new onboarding site",
    "quarterly access reviews",
];

/// One request of each kind the simulated agent makes, named, always the same: what
/// `countersign-gateway policy check` evaluates a policy against.
pub fn examples() -> Vec<(&'static str, &'static str, Value)> {
    let staff: Vec<String> = (1..=30).map(|i| format!("usr_s{:06}", i * 3_701)).collect();
    vec![
        (
            "a retention change",
            "projects.settings.update",
            json!({"project": "prj_184", "retention_days": 14}),
        ),
        (
            "a role grant",
            "memberships.grant",
            json!({"project": "prj_200", "subject": "usr_41", "role": "editor"}),
        ),
        (
            "a grant to someone who holds a role already (blocked)",
            "memberships.grant",
            json!({"project": "prj_184", "subject": "usr_40", "role": "viewer"}),
        ),
        (
            "the removal of contractors from grp_support",
            "groups.members.remove",
            json!({"group": "grp_support", "filter": {"employment": "contractor"}}),
        ),
        (
            "a bulk removal from grp_all_staff",
            "groups.members.remove",
            json!({"group": "grp_all_staff", "filter": {"employment": "employee", "users": staff}}),
        ),
        (
            "a quota change",
            "storage.quota.update",
            json!({"quota": "sq_product", "quota_bytes": 80_000_000}),
        ),
        (
            "an upload",
            "documents.document.upload",
            json!({"project": "prj_311", "filename": "runbook.md", "mime_type": "text/markdown",
                   "size_bytes": 120_000}),
        ),
        (
            "a short text",
            "text.generate",
            json!({"model": "gpt-4o-mini", "max_tokens": 256, "messages": [
                {"role": "user", "content": "Draft a two-line update about the release."}]}),
        ),
        (
            "a long report",
            "text.generate",
            json!({"model": "gpt-4o", "max_tokens": 2048, "messages": [
                {"role": "user", "content": "Write the full report on the release."}]}),
        ),
        (
            "a spoken reminder",
            "speech.synthesize",
            json!({"model": "tts-1", "voice": "nova", "format": "wav",
                   "input": "Reminder: the release review is on today's agenda."}),
        ),
        (
            "two illustrations",
            "image.generate",
            json!({"model": "black-forest-labs/flux-schnell", "count": 2,
                   "prompt": "A friendly illustration of the release"}),
        ),
        (
            "a video",
            "video.generate",
            json!({"model": "minimax/video-01", "seconds": 2, "prompt": "A short clip"}),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_mixes_every_previewable_capability() {
        let seen: std::collections::BTreeSet<&str> = (0..2000).map(|_| next_request().0).collect();
        assert_eq!(seen.len(), 9, "{seen:?}");
    }
}
