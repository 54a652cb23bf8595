//! What tests send: the params of the requests most of them make, a decision statement, and
//! answers read as JSON.

use countersign_proto::decision::{Decision, Signer, Statement};
use serde_json::{json, Value};

/// The capability most tests preview: a project's retention.
pub const RETENTION: &str = "projects.settings.update";

/// The params of a retention change of `project` to `days`.
pub fn retention(project: &str, days: u32) -> Value {
    json!({"project": project, "retention_days": days})
}

pub const GRANT: &str = "memberships.grant";

/// The params of a grant of `role` on `project` to `subject`.
pub fn grant(project: &str, subject: &str, role: &str) -> Value {
    json!({"project": project, "subject": subject, "role": role})
}

/// `signer`'s approval of the plan record `plan`, good for five minutes.
pub fn approval_of(signer: Signer<'_>, plan: &Value) -> Statement {
    let plan_id = plan["plan_id"].as_str().unwrap();
    let digest = plan["plan_digest"].as_str().unwrap();
    let expires_at = chrono::Utc::now() + chrono::Duration::minutes(5);
    Statement::new(
        signer,
        (plan_id, digest),
        Decision::Approve,
        None,
        expires_at,
    )
}

/// Sends a request and reads its answer as JSON, for tests that talk to a gateway over a socket.
pub trait JsonReply {
    async fn json_reply(self) -> Value;
}

impl JsonReply for reqwest::RequestBuilder {
    async fn json_reply(self) -> Value {
        self.send().await.unwrap().json().await.unwrap()
    }
}
