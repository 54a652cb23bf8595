//! The gateway's receipts (`docs/audit-export.md`): its identity key's signature over what its
//! record says it accepted, and when. Made from the record whenever they are served: Ed25519
//! signatures are deterministic, so one record always gives the same receipt.

use chrono::{DateTime, Utc};
use countersign_proto::dsse::Envelope;
use countersign_proto::receipt::{Accepted, Receipt};
use ed25519_dalek::SigningKey;

use crate::ApiResult;

/// Who signs: the gateway's id and identity key.
#[derive(Clone, Copy)]
pub struct Signer<'a> {
    pub gateway_id: &'a str,
    pub identity: &'a SigningKey,
}

impl<'a> From<&'a crate::Engine> for Signer<'a> {
    fn from(engine: &'a crate::Engine) -> Self {
        Signer {
            gateway_id: &engine.gateway_id,
            identity: &engine.identity,
        }
    }
}

impl Signer<'_> {
    fn sign(&self, receipt: Receipt) -> ApiResult<Envelope> {
        Ok(receipt.sign(self.identity).map_err(anyhow::Error::from)?)
    }

    fn of(&self, accepted: Accepted, envelope: &Envelope, at: DateTime<Utc>) -> ApiResult<Receipt> {
        Ok(Receipt::of(self.gateway_id, accepted, envelope, at).map_err(anyhow::Error::from)?)
    }

    /// A decision on plan `plan_id` (of `plan_digest`) accepted at `at`.
    pub fn decision(
        &self,
        envelope: &Envelope,
        (plan_id, plan_digest): (&str, &str),
        at: DateTime<Utc>,
    ) -> ApiResult<Envelope> {
        let mut receipt = self.of(Accepted::Decision, envelope, at)?;
        receipt.plan_id = Some(plan_id.to_owned());
        receipt.plan_digest = Some(plan_digest.to_owned());
        self.sign(receipt)
    }

    /// Standing approval `standing_id` accepted at `at`.
    pub fn standing(
        &self,
        envelope: &Envelope,
        standing_id: &str,
        at: DateTime<Utc>,
    ) -> ApiResult<Envelope> {
        let mut receipt = self.of(Accepted::Standing, envelope, at)?;
        receipt.standing_id = Some(standing_id.to_owned());
        self.sign(receipt)
    }

    /// Use `number` of standing approval `standing_id`: plan `plan_id` ran on it at `at`.
    pub fn standing_use(
        &self,
        envelope: &Envelope,
        (standing_id, number): (&str, u32),
        (plan_id, plan_digest): (&str, &str),
        at: DateTime<Utc>,
    ) -> ApiResult<Envelope> {
        let mut receipt = self.of(Accepted::StandingUse, envelope, at)?;
        receipt.standing_id = Some(standing_id.to_owned());
        receipt.use_number = Some(number);
        receipt.plan_id = Some(plan_id.to_owned());
        receipt.plan_digest = Some(plan_digest.to_owned());
        self.sign(receipt)
    }
}
