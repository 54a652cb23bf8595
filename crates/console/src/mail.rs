//! Remedies for an executed plan's emails that could not go as planned (seed 004): release a held
//! message to the address its recipient has now, resend a failed one, or cancel either and
//! refund its charge. Each is this approver's signed statement over the message exactly as the
//! gateway shows it now, after a yes to what it does, in words made from that message.

use countersign_proto::mail::{HeldMail, MailRemedyStatement, Remedied, Remedy};
use reqwest::Method;
use serde::Serialize;
use ts_rs::TS;

use crate::client::id_checked;
use crate::console::Console;
use crate::error::ConsoleError;
use crate::review::execution::held_mail;
use crate::signing::confirm::{self, short_digest, Confirm};

/// What a remedy did, as the window shows it.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct RemedyOutcome {
    #[ts(type = "number")]
    pub message_id: i64,
    pub remedy: String,
    /// `pending` (it goes out again) or `cancelled`.
    pub state: String,
    pub recipient: Option<String>,
    pub refunded: String,
}

impl From<Remedied> for RemedyOutcome {
    fn from(r: Remedied) -> RemedyOutcome {
        RemedyOutcome {
            message_id: r.message_id,
            remedy: r.remedy.as_str().to_owned(),
            state: r.state,
            recipient: r.recipient,
            refunded: r.refunded.to_string(),
        }
    }
}

impl Console {
    /// Signs and sends `remedy` for message `message_id` of plan `plan_id`, shown to the approver
    /// with `shown_digest`: the message is read again first, and a message that changed since it
    /// was shown is not signed for.
    pub async fn remedy_mail(
        &self,
        (plan_id, message_id): (&str, i64),
        remedy: Remedy,
        shown_digest: &str,
        confirm: &dyn Confirm,
    ) -> Result<Remedied, ConsoleError> {
        id_checked(plan_id, "plan")?;
        let fetched = self.client().plan(plan_id).await?;
        let listed = fetched
            .record
            .execution
            .as_ref()
            .and_then(|e| e["deliveries"]["attention"].as_array())
            .and_then(|items| {
                items
                    .iter()
                    .find(|m| m["message_id"].as_i64() == Some(message_id))
            })
            .ok_or_else(|| {
                ConsoleError::NotApprovable(format!(
                    "message {message_id} of {plan_id} needs no remedy now"
                ))
            })?;
        let mail = held_mail(listed).ok_or_else(|| {
            ConsoleError::Protocol(format!(
                "message {message_id}'s members do not hash to the digest the gateway lists"
            ))
        })?;
        let digest = mail
            .digest()
            .map_err(|e| ConsoleError::Invalid(e.to_string()))?;
        if digest != shown_digest {
            return Err(ConsoleError::NotApprovable(format!(
                "message {message_id} changed since it was shown: read it again"
            )));
        }
        if !mail.remedies().contains(&remedy) {
            return Err(ConsoleError::NotApprovable(format!(
                "a {} message cannot be given {}",
                mail.state,
                remedy.as_str()
            )));
        }
        let (title, consequence) = words(&mail, remedy);
        let lines = [
            format!("Subject: {}", mail.subject),
            format!("Why it waits: {}", mail.reason),
            format!(
                "{plan_id} · message {message_id} · {}",
                short_digest(&digest)
            ),
        ];
        if !confirm::ask(confirm, &title, &consequence, &lines) {
            return Err(ConsoleError::Cancelled);
        }
        let statement = MailRemedyStatement::new(self.signer().signs_as(), &mail, remedy)
            .map_err(|e| ConsoleError::Invalid(e.to_string()))?;
        let envelope = self.signer().sign(&statement)?;
        let path = format!("/v1/plans/{plan_id}/mail/{message_id}");
        self.client()
            .call(Method::POST, &path, Some(&envelope))
            .await
    }
}

/// The confirmation's title and what the remedy does, from the message it is signed over.
fn words(mail: &HeldMail, remedy: Remedy) -> (String, String) {
    let who = &mail.user_id;
    match remedy {
        Remedy::Release => (
            format!("Send {who}'s email to a new address?"),
            format!(
                "It goes to {}, not to {} as planned.",
                mail.release_to.as_deref().unwrap_or("nobody"),
                mail.recipient
            ),
        ),
        Remedy::Resend => (
            format!("Send {who}'s email again?"),
            format!("It goes to {} in a new round of attempts.", mail.recipient),
        ),
        Remedy::Cancel => (
            format!("Cancel {who}'s email?"),
            format!(
                "It is never sent, and its {} credits go back to the agent.",
                mail.charge
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_remedy_says_where_the_email_goes_or_that_it_does_not() {
        let mail: HeldMail = serde_json::from_value(serde_json::json!({
            "message_id": 3, "plan_id": "plan_1", "user_id": "usr_92",
            "recipient": "sam@example.com", "subject": "Invited", "body": "Role: admin",
            "state": "held", "attempts": 1, "reason": "recipient_changed",
            "release_to": "sam@elsewhere.example", "charge": "0.01"}))
        .unwrap();
        let (_, release) = words(&mail, Remedy::Release);
        assert_eq!(
            release,
            "It goes to sam@elsewhere.example, not to sam@example.com as planned."
        );
        let (title, cancel) = words(&mail, Remedy::Cancel);
        assert_eq!(title, "Cancel usr_92's email?");
        assert_eq!(
            cancel,
            "It is never sent, and its 0.01 credits go back to the agent."
        );
    }
}
