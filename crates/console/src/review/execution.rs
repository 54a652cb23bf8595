//! An executed plan's result as the gateway recorded it: the seed 002 envelope (content, usage,
//! modalities, metadata with unknown keys kept) and the execution journal, before → after.

use countersign_proto::mail::HeldMail;
use serde::Serialize;
use serde_json::{Map, Value};
use ts_rs::TS;

use crate::review::media::{media, MediaView};
use crate::review::words;

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct ExecutionView {
    pub success: bool,
    pub content: String,
    pub provider: String,
    #[ts(
        type = "{ input_tokens: number, output_tokens: number, credits: string | null, units: Array<[string, number]> }"
    )]
    pub usage: UsageView,
    /// Every metadata key, unknown ones included, value as compact JSON text (strings unquoted).
    pub metadata: Vec<(String, String)>,
    /// The envelope's images, files and videos, with what may be shown inline.
    pub media: Vec<MediaView>,
    /// The error contract of a failed execution.
    pub error: Option<FailureView>,
    /// What the wallet was charged, and the range the plan estimated.
    pub charged: Option<String>,
    pub estimated: Option<String>,
    /// The provider call has been sent and has not answered yet.
    pub in_flight: bool,
    /// What was applied, before → after, as the gateway recorded it.
    #[ts(type = "Array<{ effect_id: string, resource: string, before: string, after: string }>")]
    pub journal: Vec<JournalRow>,
    pub executed_at: Option<String>,
    /// How the emails the execution queued stand, when the gateway says.
    pub deliveries: Option<DeliveriesView>,
}

/// The emails of an execution: a count per state, the ones a person must look at, and what
/// approvers did about them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, TS)]
pub struct DeliveriesView {
    #[ts(type = "number")]
    pub sent: u64,
    #[ts(type = "number")]
    pub pending: u64,
    #[ts(type = "number")]
    pub held: u64,
    #[ts(type = "number")]
    pub failed: u64,
    #[ts(type = "number")]
    pub cancelled: u64,
    /// Held or failed messages: who, where, and why, in the gateway's words.
    pub attention: Vec<DeliveryIssue>,
    /// Releases, resends and cancellations, oldest first.
    pub remedies: Vec<RemedyTaken>,
}

/// A held or failed message, shown exactly as the digest a remedy signs covers it: a message
/// whose members do not hash to the digest the gateway lists is not offered a remedy.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct DeliveryIssue {
    #[ts(type = "number")]
    pub message_id: i64,
    pub user_id: String,
    pub recipient: String,
    pub subject: String,
    pub state: String,
    pub reason: String,
    /// Where a release sends it: the address its recipient has now.
    pub release_to: Option<String>,
    /// Refunded to the agent if it is cancelled.
    pub charge: String,
    pub digest: String,
    /// `release`, `resend`, `cancel`: what fits it as it stands; none when it did not check.
    pub remedies: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct RemedyTaken {
    pub user_id: String,
    pub remedy: String,
    pub approver: String,
    pub refunded: String,
    pub decided_at: String,
}

/// `None` when the execution queued no email: the gateway reports empty counts then.
fn deliveries(value: &Value) -> Option<DeliveriesView> {
    let counts = value
        .get("counts")?
        .as_object()
        .filter(|c| c.values().any(|n| n.as_u64() > Some(0)))?;
    let count = |state: &str| counts.get(state).and_then(Value::as_u64).unwrap_or(0);
    let list = |key: &str| {
        value
            .get(key)
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice)
    };
    let attention = list("attention").iter().map(issue).collect();
    let remedies = list("remedies")
        .iter()
        .map(|r| RemedyTaken {
            user_id: text(&r["user_id"]),
            remedy: text(&r["remedy"]),
            approver: text(&r["approver"]),
            refunded: text(&r["refunded"]),
            decided_at: text(&r["decided_at"]),
        })
        .collect();
    Some(DeliveriesView {
        sent: count("sent"),
        pending: count("pending"),
        held: count("held"),
        failed: count("failed"),
        cancelled: count("cancelled"),
        attention,
        remedies,
    })
}

fn issue(item: &Value) -> DeliveryIssue {
    let checked = held_mail(item);
    let remedies = checked.as_ref().map_or_else(Vec::new, |mail| {
        mail.remedies()
            .iter()
            .map(|r| r.as_str().to_owned())
            .collect()
    });
    DeliveryIssue {
        message_id: item["message_id"].as_i64().unwrap_or_default(),
        user_id: text(&item["user_id"]),
        recipient: text(&item["recipient"]),
        subject: text(&item["subject"]),
        state: text(&item["state"]),
        reason: text(&item["reason"]),
        release_to: item["release_to"].as_str().map(str::to_owned),
        charge: text(&item["charge"]),
        digest: text(&item["digest"]),
        remedies,
    }
}

/// The message as its members say, if they hash to the digest the gateway lists beside them.
pub(crate) fn held_mail(item: &Value) -> Option<HeldMail> {
    let mail: HeldMail = serde_json::from_value(item.clone()).ok()?;
    (mail.digest().ok()? == text(&item["digest"])).then_some(mail)
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UsageView {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub credits: Option<String>,
    pub units: Vec<(String, u64)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct FailureView {
    pub code: String,
    pub message: String,
    pub retryable: bool,
}

/// `"0.12–4.10 credits"`, or one amount when the range is a point.
fn range(estimated: &Value) -> Option<String> {
    let min = estimated.get("amount_min")?.as_str()?;
    let max = estimated.get("amount_max")?.as_str()?;
    Some(if min == max {
        format!("{max} credits")
    } else {
        format!("{min}–{max} credits")
    })
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JournalRow {
    pub effect_id: String,
    pub resource: String,
    pub before: String,
    pub after: String,
}

fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn array(object: &Map<String, Value>, key: &str) -> Vec<Value> {
    object
        .get(key)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The envelope inside the record: under `result` (or `response`, `envelope`), or the record
/// itself when it carries the envelope's fields at its top level.
fn envelope(execution: &Map<String, Value>) -> &Map<String, Value> {
    ["result", "response", "envelope"]
        .iter()
        .find_map(|k| execution.get(*k).and_then(Value::as_object))
        .unwrap_or(execution)
}

/// Journal rows: one per recorded change (resource and path, before, after); an entry that
/// names subjects without changes shows how many it touched.
pub(crate) fn journal(entries: &[Value]) -> Vec<JournalRow> {
    let mut rows = Vec::new();
    for entry in entries {
        let effect_id = text(&entry["effect_id"]);
        let resource = text(&entry["resource"]);
        let changes = entry["changes"].as_array().map_or(&[][..], Vec::as_slice);
        let subjects = entry["subjects"].as_array().map_or(0, Vec::len);
        for change in changes {
            let path = text(&change["path"]);
            let after = match change["after"].as_str() {
                Some(digest) if path == words::RECIPIENTS => {
                    words::recipients(subjects as u64, digest)
                }
                _ => text(&change["after"]),
            };
            rows.push(JournalRow {
                effect_id: effect_id.clone(),
                resource: format!("{resource}{path}"),
                before: text(&change["before"]),
                after,
            });
        }
        if changes.is_empty() {
            let kind = text(&entry["type"]).replace('_', " ");
            rows.push(JournalRow {
                effect_id,
                resource,
                before: String::new(),
                after: match subjects {
                    0 => kind,
                    n => format!("{kind}: {n} subjects"),
                },
            });
        }
    }
    rows
}

const SHOWN_AS_COST: [&str; 2] = ["charged", "estimated"];

/// The view of a plan record's `execution`, whatever of the envelope it carries: metadata keys
/// the console does not know are kept; absent modalities are empty.
pub fn execution_view(execution: &Value) -> Option<ExecutionView> {
    let record = execution.as_object()?;
    let env = envelope(record);
    // What the cost lines show (`charged`, `estimated`) is not listed again as raw JSON.
    let mut metadata: Vec<(String, String)> = env
        .get("metadata")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter(|(k, _)| !SHOWN_AS_COST.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), text(v)))
                .collect()
        })
        .unwrap_or_default();
    // Bookkeeping the gateway keeps beside the envelope is metadata too, for the approver.
    for (key, value) in record {
        let known = [
            "result",
            "response",
            "envelope",
            "journal",
            "deliveries",
            "executed_at",
            "in_flight",
            "charged",
            "estimated",
            "success",
            "content",
            "provider",
            "usage",
            "metadata",
            "images",
            "files",
            "videos",
        ];
        if !known.contains(&key.as_str()) && !metadata.iter().any(|(k, _)| k == key) {
            metadata.push((key.clone(), text(value)));
        }
    }
    let usage = &env.get("usage").cloned().unwrap_or_default();
    let journal_entries = record
        .get("journal")
        .or_else(|| env.get("journal"))
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let in_flight = record
        .get("in_flight")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let gateway_error = env
        .get("error")
        .and_then(Value::as_object)
        .map(|e| FailureView {
            code: e.get("code").map(text).unwrap_or_default(),
            message: e.get("message").map(text).unwrap_or_default(),
            retryable: e.get("retryable").and_then(Value::as_bool).unwrap_or(false),
        });
    // Seed 002: every answer says whether it succeeded. One that does not (an `error` without
    // `success` among them) is not the protocol, and is never shown as a success. A call still
    // in flight has no answer yet.
    let (success, error) = match env.get("success").and_then(Value::as_bool) {
        Some(success) => (success, gateway_error),
        None if in_flight => (true, gateway_error),
        None => (false, Some(unanswered(gateway_error))),
    };
    Some(ExecutionView {
        success,
        content: env.get("content").map(text).unwrap_or_default(),
        provider: env.get("provider").map(text).unwrap_or_default(),
        usage: UsageView {
            input_tokens: usage["input_tokens"].as_u64().unwrap_or(0),
            output_tokens: usage["output_tokens"].as_u64().unwrap_or(0),
            credits: usage["credits"].as_str().map(str::to_owned),
            units: usage["units"]
                .as_object()
                .map(|u| {
                    u.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_u64()?)))
                        .collect()
                })
                .unwrap_or_default(),
        },
        metadata,
        media: media(
            &array(env, "images"),
            &array(env, "files"),
            &array(env, "videos"),
        ),
        error,
        charged: record
            .get("charged")
            .and_then(|c| c.get("amount"))
            .and_then(Value::as_str)
            .map(|a| format!("{a} credits")),
        estimated: record.get("estimated").and_then(range),
        in_flight,
        journal: journal(journal_entries),
        executed_at: record
            .get("executed_at")
            .or_else(|| env.get("executed_at"))
            .map(text)
            .filter(|t| !t.is_empty()),
        deliveries: record.get("deliveries").and_then(deliveries),
    })
}

/// The failure shown for an execution answer that does not say whether it succeeded: a protocol
/// error, naming what the gateway said, if anything.
fn unanswered(said: Option<FailureView>) -> FailureView {
    let message = "The gateway's answer does not say whether the execution succeeded \
                   (no `success`), so it is not taken as a success.";
    FailureView {
        code: "protocol_error".to_owned(),
        message: match said {
            Some(said) => format!("{message} It said: {} ({}).", said.message, said.code),
            None => message.to_owned(),
        },
        retryable: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn held_and_failed_emails_are_named_with_why_and_offered_a_remedy_only_as_signed() {
        let mail = countersign_proto::mail::HeldMail {
            message_id: 4,
            plan_id: "plan_1".to_owned(),
            user_id: "usr_92".to_owned(),
            recipient: "sam@example.com".to_owned(),
            subject: "You were invited".to_owned(),
            body: "Role: admin".to_owned(),
            state: "held".to_owned(),
            attempts: 1,
            reason: "recipient_changed: usr_92 is now x@y.z".to_owned(),
            release_to: Some("x@y.z".to_owned()),
            charge: countersign_proto::Credits::cents(0),
        };
        let mut item = serde_json::to_value(&mail).unwrap();
        item["digest"] = json!(mail.digest().unwrap());
        let mut lying = item.clone();
        lying["release_to"] = json!("mallory@example.com");
        let record = json!({
            "result": {"success": true, "content": "Granted."},
            "deliveries": {"counts": {"sent": 36, "held": 2}, "attention": [item, lying],
                           "remedies": [{"user_id": "usr_7", "remedy": "cancel",
                                         "approver": "Dana", "refunded": "0.01",
                                         "decided_at": "2026-12-06T05:00:00Z"}]}
        });
        let view = execution_view(&record).unwrap();
        let deliveries = view.deliveries.unwrap();
        assert_eq!(
            (deliveries.sent, deliveries.held, deliveries.pending),
            (36, 2, 0)
        );
        let shown = &deliveries.attention[0];
        assert_eq!(shown.reason, "recipient_changed: usr_92 is now x@y.z");
        assert_eq!(shown.release_to.as_deref(), Some("x@y.z"));
        assert_eq!(shown.remedies, ["release", "cancel"]);
        // Members that do not hash to the listed digest: shown, but nothing to sign.
        assert!(deliveries.attention[1].remedies.is_empty());
        assert_eq!(deliveries.remedies[0].approver, "Dana");
        assert!(!view.metadata.iter().any(|(k, _)| k == "deliveries"));
        assert!(execution_view(&json!({"result": {}}))
            .unwrap()
            .deliveries
            .is_none());
    }

    #[test]
    fn the_seed_002_envelope_keeps_unknown_metadata_and_the_journal() {
        let record = json!({
            "executed_at": "2026-11-30T10:07:00Z",
            "audit_id": "aud_1",
            "result": {
                "success": true, "content": "Retention set to 14 days.", "provider": "countersign",
                "usage": {"input_tokens": 120, "output_tokens": 64},
                "metadata": {"trace_id": "trc_123", "latency_ms": 540, "future_key": {"a": 1}},
                "images": [{"url": "https://example.com/i.png"}], "files": [], "videos": []
            },
            "journal": [
                {"effect_id": "eff_1", "type": "setting_changed", "resource": "projects/prj_184",
                 "changes": [{"path": "/retention_days", "before": 30, "after": 14}]},
                {"effect_id": "eff_2", "type": "expiry_recalculated",
                 "resource": "projects/prj_184/items", "subjects": ["itm_1", "itm_2"]}
            ]
        });
        let view = execution_view(&record).unwrap();
        assert_eq!(view.content, "Retention set to 14 days.");
        assert_eq!(view.usage.input_tokens, 120);
        assert!(view
            .metadata
            .contains(&("future_key".to_owned(), "{\"a\":1}".to_owned())));
        assert!(view
            .metadata
            .contains(&("trace_id".to_owned(), "trc_123".to_owned())));
        assert!(view
            .metadata
            .contains(&("audit_id".to_owned(), "aud_1".to_owned())));
        assert_eq!(view.media.len(), 1);
        assert_eq!(
            view.journal[0],
            JournalRow {
                effect_id: "eff_1".into(),
                resource: "projects/prj_184/retention_days".into(),
                before: "30".into(),
                after: "14".into()
            }
        );
        assert_eq!(view.journal[1].after, "expiry recalculated: 2 subjects");
        assert_eq!(view.executed_at.as_deref(), Some("2026-11-30T10:07:00Z"));
    }

    #[test]
    fn a_provider_execution_shows_estimate_charge_usage_and_media() {
        let record = json!({
            "executed_at": "2026-12-01T10:00:00Z", "charged": {"amount": "0.31", "currency": "credits"},
            "deliveries": {"counts": {}, "attention": []},
            "estimated": {"amount_min": "0.02", "amount_max": "2.07", "currency": "credits"},
            "result": {"success": true, "content": "Hello", "provider": "openai",
                       "usage": {"input_tokens": 40, "output_tokens": 300, "credits": "0.31",
                                 "units": {}},
                       "metadata": {"model": "gpt-4o", "brand_new_key": {"x": 1},
                                    "charged": {"amount": "0.31"}},
                       "images": [], "videos": [],
                       "files": [{"name": "a.wav", "mime_type": "audio/wav",
                                  "url": "data:audio/wav;base64,UklGRg=="}]}
        });
        let view = execution_view(&record).unwrap();
        assert_eq!(view.charged.as_deref(), Some("0.31 credits"));
        assert_eq!(view.estimated.as_deref(), Some("0.02–2.07 credits"));
        assert_eq!(view.usage.credits.as_deref(), Some("0.31"));
        assert_eq!(
            (view.usage.input_tokens, view.usage.output_tokens),
            (40, 300)
        );
        assert!(view
            .metadata
            .iter()
            .any(|(k, v)| k == "brand_new_key" && v == "{\"x\":1}"));
        assert!(
            !view.metadata.iter().any(|(k, _)| k == "charged"),
            "shown as a cost line, not again as JSON"
        );
        assert_eq!(
            view.media[0].inline.as_deref(),
            Some("data:audio/wav;base64,UklGRg==")
        );
        assert_eq!(view.error, None);
        assert_eq!(view.deliveries, None, "no emails, no email section");

        let failed = json!({"in_flight": false, "charged": {"amount": "0.00"},
            "result": {"success": false, "provider": "openai", "metadata": {"trace_id": "trc_1"},
                       "error": {"code": "provider_rate_limited", "message": "Slow down.",
                                 "details": {}, "retryable": true}}});
        let view = execution_view(&failed).unwrap();
        assert!(!view.success);
        let error = view.error.unwrap();
        assert_eq!(
            (error.code.as_str(), error.retryable),
            ("provider_rate_limited", true)
        );
        assert!(!view.in_flight);
    }

    #[test]
    fn an_answer_that_does_not_say_it_succeeded_is_a_protocol_error_never_a_success() {
        let said = json!({"result": {"content": "Done.", "provider": "openai",
            "error": {"code": "provider_timeout", "message": "No answer.", "retryable": true}}});
        let view = execution_view(&said).unwrap();
        assert!(!view.success);
        let error = view.error.unwrap();
        assert_eq!(error.code, "protocol_error");
        assert!(
            error.message.contains("provider_timeout"),
            "{}",
            error.message
        );

        let silent = execution_view(&json!({"result": {"success": "yes", "content": "Done."}}));
        let silent = silent.unwrap();
        assert!(!silent.success);
        assert_eq!(silent.error.unwrap().code, "protocol_error");

        // A call still in flight has no answer yet: neither failed nor succeeded.
        let flying = execution_view(&json!({"in_flight": true, "charged": {"amount": "0.10"}}));
        let flying = flying.unwrap();
        assert!(flying.in_flight && flying.success && flying.error.is_none());
    }
}
