//! The decision statement an approver signs (PROTOCOL section 3).

use chrono::{DateTime, SubsecRound as _, Utc};
use rand::RngCore as _;
use serde::{Deserialize, Serialize};

use crate::dsse::DECISION_PAYLOAD_TYPE;
pub use crate::statement::{Signed, StatementError};

pub const STATEMENT_TYPE: &str = "countersign.decision/v1";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Approve,
    Reject,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Statement {
    #[serde(rename = "type")]
    pub kind: String,
    pub plan_id: String,
    pub plan_digest: String,
    pub decision: Decision,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub approver_id: String,
    pub key_id: String,
    pub audience: String,
    pub nonce: String,
    pub issued_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

/// 16 random bytes as 32 lowercase hex digits.
pub fn new_nonce() -> String {
    let mut bytes = [0u8; 16];
    rand::thread_rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// Who signs a decision, and the gateway it is addressed to.
#[derive(Debug, Clone, Copy)]
pub struct Signer<'a> {
    pub approver_id: &'a str,
    pub key_id: &'a str,
    pub audience: &'a str,
}

impl Statement {
    /// `signer`'s `decision` on plan `plan_id` at `plan_digest`, issued now in whole seconds
    /// (the time signed is compared to the second), with a fresh nonce, good until `expires_at`.
    pub fn new(
        signer: Signer<'_>,
        (plan_id, plan_digest): (&str, &str),
        decision: Decision,
        reason: Option<String>,
        expires_at: DateTime<Utc>,
    ) -> Statement {
        Statement {
            kind: STATEMENT_TYPE.to_owned(),
            plan_id: plan_id.to_owned(),
            plan_digest: plan_digest.to_owned(),
            decision,
            reason,
            approver_id: signer.approver_id.to_owned(),
            key_id: signer.key_id.to_owned(),
            audience: signer.audience.to_owned(),
            nonce: new_nonce(),
            issued_at: Utc::now().trunc_subsecs(0),
            expires_at,
        }
    }
}

impl Signed for Statement {
    const PAYLOAD_TYPE: &'static str = DECISION_PAYLOAD_TYPE;
    const STATEMENT_TYPE: &'static str = STATEMENT_TYPE;
    const NAME: &'static str = "decision statement";

    crate::statement_names!();

    fn well_formed(&self) -> Result<(), &'static str> {
        crate::statement::nonce_and_digest(&self.nonce, &self.plan_digest)
    }
}
