//! A remedy for an email an execution queued and the gateway could not send as planned (seed 004:
//! a compensating action, a new decision where the difference matters): a held or failed message
//! is released, resent or cancelled by an approver's signed statement over the message as it
//! stands, its digest covering what was held, why, and to whom.

use chrono::{DateTime, SubsecRound as _, Utc};
use serde::{Deserialize, Serialize};

use crate::credits::Credits;
use crate::decision::{new_nonce, Signer};
use crate::digest::{jcs, sha256, DigestError};
pub use crate::statement::{Signed, StatementError};

pub const MAIL_STATEMENT_TYPE: &str = "countersign.mail-remedy/v1";
pub const MAIL_PAYLOAD_TYPE: &str = "application/vnd.countersign.mail-remedy+json";

/// What an approver does about a message that needs a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Remedy {
    /// A held message goes to `release_to`, the address its recipient has now.
    Release,
    /// A failed message is queued again for a new round of attempts.
    Resend,
    /// The message is never sent, and its charge goes back to the agent's wallet.
    Cancel,
}

impl Remedy {
    pub fn as_str(self) -> &'static str {
        match self {
            Remedy::Release => "release",
            Remedy::Resend => "resend",
            Remedy::Cancel => "cancel",
        }
    }
}

/// A held or failed message as the gateway shows it to an approver: exactly what its digest
/// covers, so the console signs only what it shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HeldMail {
    pub message_id: i64,
    pub plan_id: String,
    pub user_id: String,
    /// The address it was last meant for: the planned one until a release re-addresses it.
    pub recipient: String,
    pub subject: String,
    pub body: String,
    /// `held` or `failed`.
    pub state: String,
    pub attempts: i64,
    /// Why, in the gateway's words.
    pub reason: String,
    /// Where a release would send it: the recipient's address as the hold found it. None when
    /// the person is gone or the message failed.
    pub release_to: Option<String>,
    /// What the agent was charged for it, refunded when it is cancelled.
    pub charge: Credits,
}

impl HeldMail {
    /// `sha256(JCS(self))`: what a remedy statement names as `mail_digest`.
    pub fn digest(&self) -> Result<String, DigestError> {
        Ok(sha256(&jcs(self)?))
    }

    /// The remedies that fit the message as it stands.
    pub fn remedies(&self) -> Vec<Remedy> {
        match (self.state.as_str(), &self.release_to) {
            ("held", Some(_)) => vec![Remedy::Release, Remedy::Cancel],
            ("failed", _) => vec![Remedy::Resend, Remedy::Cancel],
            _ => vec![Remedy::Cancel],
        }
    }
}

/// What a remedy did, as the gateway answers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Remedied {
    pub message_id: i64,
    pub remedy: Remedy,
    /// `pending` (it goes out again) or `cancelled`.
    pub state: String,
    /// Where it goes now, for a release or a resend.
    pub recipient: Option<String>,
    /// Given back to the agent's wallet.
    pub refunded: Credits,
}

/// The statement an approver signs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct MailRemedyStatement {
    #[serde(rename = "type")]
    pub kind: String,
    pub plan_id: String,
    pub message_id: i64,
    pub mail_digest: String,
    pub remedy: Remedy,
    pub approver_id: String,
    pub key_id: String,
    pub audience: String,
    pub nonce: String,
    pub issued_at: DateTime<Utc>,
}

impl MailRemedyStatement {
    /// `signer`'s `remedy` for `mail`, issued now in whole seconds with a fresh nonce.
    pub fn new(
        signer: Signer<'_>,
        mail: &HeldMail,
        remedy: Remedy,
    ) -> Result<MailRemedyStatement, DigestError> {
        Ok(MailRemedyStatement {
            kind: MAIL_STATEMENT_TYPE.to_owned(),
            plan_id: mail.plan_id.clone(),
            message_id: mail.message_id,
            mail_digest: mail.digest()?,
            remedy,
            approver_id: signer.approver_id.to_owned(),
            key_id: signer.key_id.to_owned(),
            audience: signer.audience.to_owned(),
            nonce: new_nonce(),
            issued_at: Utc::now().trunc_subsecs(0),
        })
    }
}

impl Signed for MailRemedyStatement {
    const PAYLOAD_TYPE: &'static str = MAIL_PAYLOAD_TYPE;
    const STATEMENT_TYPE: &'static str = MAIL_STATEMENT_TYPE;
    const NAME: &'static str = "mail remedy statement";

    crate::statement_names!();

    fn well_formed(&self) -> Result<(), &'static str> {
        crate::statement::nonce_and_digest(&self.nonce, &self.mail_digest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::SigningKey;

    fn held() -> HeldMail {
        HeldMail {
            message_id: 7,
            plan_id: "plan_0123456789abcdef".to_owned(),
            user_id: "usr_92".to_owned(),
            recipient: "sam@example.com".to_owned(),
            subject: "You were invited to prj_184".to_owned(),
            body: "Role: admin".to_owned(),
            state: "held".to_owned(),
            attempts: 1,
            reason: "recipient_changed".to_owned(),
            release_to: Some("sam@elsewhere.example".to_owned()),
            charge: Credits::cents(1),
        }
    }

    #[test]
    fn the_digest_covers_every_member_of_the_message() {
        let base = held().digest().unwrap();
        let changes: [fn(&mut HeldMail); 11] = [
            |m| m.message_id += 1,
            |m| m.plan_id.push('0'),
            |m| m.user_id.push('0'),
            |m| m.recipient.push('x'),
            |m| m.subject.push('x'),
            |m| m.body.push('x'),
            |m| m.state = "failed".to_owned(),
            |m| m.attempts += 1,
            |m| m.reason.push('x'),
            |m| m.release_to = Some("mallory@example.com".to_owned()),
            |m| m.charge = Credits::cents(2),
        ];
        for change in changes {
            let mut mail = held();
            change(&mut mail);
            assert_ne!(mail.digest().unwrap(), base);
        }
    }

    #[test]
    fn a_statement_opens_under_its_key_and_names_the_digest() {
        let key = SigningKey::from_bytes(&[9; 32]);
        let signer = Signer {
            approver_id: "apr_1",
            key_id: "key_1",
            audience: "gw_1",
        };
        let statement = MailRemedyStatement::new(signer, &held(), Remedy::Release).unwrap();
        let envelope = statement.sign(&key).unwrap();
        let opened = MailRemedyStatement::open(&envelope, &key.verifying_key()).unwrap();
        assert_eq!(opened, statement);
        assert_eq!(opened.mail_digest, held().digest().unwrap());
        assert_eq!(held().remedies(), [Remedy::Release, Remedy::Cancel]);
    }
}
