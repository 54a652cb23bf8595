//! What a person does about a message that could not go as planned (seed 004: a compensating
//! action, and a new decision where the difference matters). The plan record shows each held or
//! failed message exactly as its digest covers it; an approver's signed statement over that
//! digest releases it to the address its recipient has now, resends it, or cancels it and
//! refunds its charge, in one transaction that also keeps the statement as the remedy's audit.

use chrono::Duration;
use countersign_proto::mail::{HeldMail, MailRemedyStatement, Remedied, Remedy};
use countersign_proto::{Credits, ErrorCode};
use serde_json::{json, Map, Value};
use sqlx::AnyConnection;

use crate::accounts::callers::Approver;
use crate::approval::signed;
use crate::execution::wallet;
use crate::{ids, ApiError, ApiResult, Engine};

/// Messages needing a person shown per plan record; the counts cover all of them.
const ATTENTION_SHOWN: i64 = 100;

/// How long after it was signed a remedy is taken, and how far a signer's clock may run ahead.
const FRESH_FOR: Duration = Duration::minutes(10);
const CLOCK_SKEW: Duration = Duration::seconds(60);

type MailRow = (
    i64,
    Option<String>,
    String,
    String,
    String,
    String,
    String,
    i64,
    Option<String>,
    Option<String>,
    String,
);

const MAIL_COLUMNS: &str = "id, plan_id, user_id, recipient, subject, body, state, attempts, \
                            last_error, release_to, charge";

fn held_mail(row: MailRow) -> HeldMail {
    let (id, plan_id, user_id, recipient, subject, body, state, attempts, why, release_to, charge) =
        row;
    HeldMail {
        message_id: id,
        plan_id: plan_id.unwrap_or_default(),
        user_id,
        recipient,
        subject,
        body,
        state,
        attempts,
        reason: why.unwrap_or_default(),
        release_to,
        charge: charge.parse().unwrap_or(Credits::cents(0)),
    }
}

/// How the messages of one plan stand, for its record: a count per state; the messages held or
/// failed as their digest covers them, with the remedies that fit each; and the remedies taken.
pub async fn deliveries(conn: &mut AnyConnection, plan_id: &str) -> Result<Value, sqlx::Error> {
    let counts: Vec<(String, i64)> = sqlx::query_as(
        "SELECT state, COUNT(*) FROM email_outbox WHERE plan_id = $1 GROUP BY state ORDER BY state",
    )
    .bind(plan_id)
    .fetch_all(&mut *conn)
    .await?;
    let rows: Vec<MailRow> = sqlx::query_as(&format!(
        "SELECT {MAIL_COLUMNS} FROM email_outbox
         WHERE plan_id = $1 AND state IN ('held', 'failed') ORDER BY id LIMIT $2"
    ))
    .bind(plan_id)
    .bind(ATTENTION_SHOWN)
    .fetch_all(&mut *conn)
    .await?;
    let mut attention = Vec::with_capacity(rows.len());
    for mail in rows.into_iter().map(held_mail) {
        let mut item = serde_json::to_value(&mail).map_err(|e| sqlx::Error::Decode(e.into()))?;
        let digest = mail.digest().map_err(|e| sqlx::Error::Decode(e.into()))?;
        item["digest"] = json!(digest);
        item["remedies"] = json!(mail.remedies());
        attention.push(item);
    }
    let taken: Vec<(i64, String, String, String, String, String)> = sqlx::query_as(
        "SELECT r.message_id, o.user_id, r.remedy, a.display_name, r.refunded, r.decided_at
         FROM mail_remedies r JOIN email_outbox o ON o.id = r.message_id
         JOIN approvers a ON a.id = r.approver_id
         WHERE r.plan_id = $1 ORDER BY r.id LIMIT $2",
    )
    .bind(plan_id)
    .bind(ATTENTION_SHOWN)
    .fetch_all(&mut *conn)
    .await?;
    let remedies: Vec<Value> = taken
        .into_iter()
        .map(|(message_id, user, remedy, by, refunded, at)| {
            json!({"message_id": message_id, "user_id": user, "remedy": remedy,
                   "approver": by, "refunded": refunded, "decided_at": at})
        })
        .collect();
    let counts: Map<String, Value> = counts.into_iter().map(|(s, n)| (s, json!(n))).collect();
    Ok(json!({"counts": counts, "attention": attention, "remedies": remedies}))
}

/// Verifies `approver`'s remedy statement for message `message_id` of plan `plan_id`, as the
/// bytes of its envelope came, and takes it: the message must be exactly what the statement's
/// digest covers, as it stands now.
pub async fn apply_remedy(
    engine: &Engine,
    approver: &Approver,
    (plan_id, message_id): (&str, i64),
    body: &[u8],
) -> ApiResult<Remedied> {
    let (statement, envelope) = signed::open::<MailRemedyStatement>(engine, approver, body).await?;
    if statement.plan_id != plan_id || statement.message_id != message_id {
        return Err(ApiError::validation(
            "/payload",
            "The statement names another plan or message than the one it was sent for.",
        ));
    }
    let now = ids::now();
    if statement.issued_at + FRESH_FOR <= now || statement.issued_at > now + CLOCK_SKEW {
        return Err(ApiError::new(
            ErrorCode::StatementExpired,
            "The remedy was signed more than ten minutes ago, or in the future: sign it again.",
        ));
    }
    let mut w = engine.store.write().await?;
    let row: Option<MailRow> = sqlx::query_as(&format!(
        "SELECT {MAIL_COLUMNS} FROM email_outbox WHERE id = $1 AND plan_id = $2"
    ))
    .bind(message_id)
    .bind(plan_id)
    .fetch_optional(&mut *w.tx)
    .await?;
    let mail = held_mail(row.ok_or_else(|| ApiError::not_found("message"))?);
    if !matches!(mail.state.as_str(), "held" | "failed") {
        return Err(ApiError::new(
            ErrorCode::DigestMismatch,
            format!(
                "Message {message_id} is {} now and needs no remedy.",
                mail.state
            ),
        ));
    }
    if mail.digest().map_err(anyhow::Error::from)? != statement.mail_digest {
        return Err(ApiError::new(
            ErrorCode::DigestMismatch,
            format!("Message {message_id} changed since it was shown: read it again."),
        ));
    }
    if !mail.remedies().contains(&statement.remedy) {
        return Err(ApiError::validation(
            "/payload",
            format!(
                "A {} message cannot be given {}.",
                mail.state,
                statement.remedy.as_str()
            ),
        ));
    }
    let used: Option<i64> = sqlx::query_scalar("SELECT 1 FROM mail_remedies WHERE nonce = $1")
        .bind(&statement.nonce)
        .fetch_optional(&mut *w.tx)
        .await?;
    if used.is_some() {
        return Err(ApiError::new(
            ErrorCode::NonceReused,
            "This remedy was already sent.",
        ));
    }
    let (state, recipient, refunded) = match statement.remedy {
        Remedy::Release => {
            let to = mail.release_to.clone().unwrap_or_default();
            sqlx::query(
                "UPDATE email_outbox SET state = 'pending', recipient = $1, release_to = NULL,
                                         next_attempt_at = NULL, last_error = NULL
                 WHERE id = $2",
            )
            .bind(&to)
            .bind(message_id)
            .execute(&mut *w.tx)
            .await?;
            ("pending", Some(to), Credits::cents(0))
        }
        Remedy::Resend => {
            sqlx::query(
                "UPDATE email_outbox SET state = 'pending', attempts = 0, next_attempt_at = NULL,
                                         last_error = NULL
                 WHERE id = $1",
            )
            .bind(message_id)
            .execute(&mut *w.tx)
            .await?;
            ("pending", Some(mail.recipient.clone()), Credits::cents(0))
        }
        Remedy::Cancel => {
            sqlx::query(
                "UPDATE email_outbox SET state = 'cancelled', next_attempt_at = NULL WHERE id = $1",
            )
            .bind(message_id)
            .execute(&mut *w.tx)
            .await?;
            let agent: String = sqlx::query_scalar("SELECT agent_id FROM plans WHERE id = $1")
                .bind(plan_id)
                .fetch_one(&mut *w.tx)
                .await?;
            wallet::refund(&mut w.tx, &agent, mail.charge).await?;
            ("cancelled", None, mail.charge)
        }
    };
    sqlx::query(
        "INSERT INTO mail_remedies (message_id, plan_id, approver_id, key_id, remedy, mail_digest,
                                    nonce, envelope, refunded, decided_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .bind(message_id)
    .bind(plan_id)
    .bind(&approver.id)
    .bind(&statement.key_id)
    .bind(statement.remedy.as_str())
    .bind(&statement.mail_digest)
    .bind(&statement.nonce)
    .bind(&envelope)
    .bind(refunded.to_string())
    .bind(ids::to_text(now))
    .execute(&mut *w.tx)
    .await?;
    w.commit().await?;
    Ok(Remedied {
        message_id,
        remedy: statement.remedy,
        state: state.to_owned(),
        recipient,
        refunded,
    })
}
