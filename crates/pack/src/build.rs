//! The plan vocabulary every capability shares: descriptions, effects, costs, validation entries,
//! and the digest of a notification's recipients.

use countersign_proto::describe::{
    ApprovalNeed, ApprovalPolicy, Billing, CostClass, Describe, DryRunMode, Preflight,
};
use countersign_proto::plan::{
    Change, Effect, EffectCost, EffectKind, EstimatedCost, Severity, Validation,
};
use countersign_proto::{Credits, INTERFACE_VERSION};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::plan::{JournalEntry, Planned};

/// A capability's description at version 1.0.0; no capability allows self-approval.
pub fn describe(
    id: &str,
    title: &str,
    input_schema: Value,
    dry_run: DryRunMode,
    billing: (Preflight, CostClass),
    required_approvals: u32,
) -> Describe {
    Describe {
        interface_version: INTERFACE_VERSION.to_owned(),
        capability_id: id.to_owned(),
        version: "1.0.0".to_owned(),
        title: title.to_owned(),
        input_schema,
        dry_run,
        billing: Billing {
            preflight: billing.0,
            cost_class: billing.1,
        },
        approval: ApprovalPolicy {
            required_approvals,
            self_approval: false,
            // The registry says what the policy in force makes of the capability's rule.
            needed: ApprovalNeed::DependsOnRequest,
        },
    }
}

/// An input schema: an object of exactly `properties`, `required` among them.
pub fn params(required: &[&str], properties: Value) -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": required,
        "properties": properties,
    })
}

/// A plan with nothing in it yet, at `cost`.
pub fn nothing(cost: Credits) -> Planned {
    Planned {
        read_revisions: vec![],
        effects: vec![],
        validation: vec![],
        assumptions: vec![],
        estimated_cost: credits(cost),
        named: vec![],
    }
}

/// Who a notification goes to, as a change of its effect: `sha256` over `"user_id address\n"`
/// per recipient, in the subjects' order. Being in the effect, the addresses are part of what
/// approvers sign; execution re-derives it, so an address changed since the preview makes the
/// plan stale, and delivery compares each address again before it sends (seed 004).
pub fn recipients<'a>(to: impl IntoIterator<Item = (&'a str, &'a str)>) -> Change {
    let mut hasher = Sha256::new();
    for (user, address) in to {
        hasher.update(user.as_bytes());
        hasher.update(b" ");
        hasher.update(address.as_bytes());
        hasher.update(b"\n");
    }
    Change {
        path: RECIPIENTS.to_owned(),
        before: Value::Null,
        after: json!(format!("sha256:{}", hex::encode(hasher.finalize()))),
    }
}

/// The message a notify effect sends each recipient, as a change its plan signs: what the email
/// carries is then part of what an approver reads and signs, not only that one is sent.
pub fn message(subject: &str, body: &str) -> Change {
    Change {
        path: MESSAGE.to_owned(),
        before: Value::Null,
        after: json!({"subject": subject, "body": body}),
    }
}

/// One outbox row an execution queued: user, address, subject, body.
pub type QueuedMail = (String, String, String, String);

/// The journal of a notify effect, from the outbox rows its execution queued: who, the digest of
/// the addresses the rows hold, and the message they carry (when they all carry one), to hold
/// against the planned ones.
pub fn notified(effect: &Effect, mut queued: Vec<QueuedMail>) -> JournalEntry {
    queued.sort_unstable();
    let to = recipients(queued.iter().map(|(u, a, _, _)| (u.as_str(), a.as_str())));
    let mut changes = vec![to];
    if let Some((_, _, subject, body)) = queued.first() {
        if queued.iter().all(|(_, _, s, b)| s == subject && b == body) {
            changes.push(message(subject, body));
        }
    }
    JournalEntry::of(
        effect,
        queued.into_iter().map(|(u, _, _, _)| u).collect(),
        changes,
    )
}

/// The path of [`recipients`]' change.
pub const RECIPIENTS: &str = "/recipients_digest";

/// The path under which a notify effect signs the message it sends (subject and body).
pub const MESSAGE: &str = "/message";

/// A direct, reversible, internal effect; derived ones override with struct update syntax.
pub fn effect(
    id: usize,
    effect_type: &str,
    kind: EffectKind,
    resource: impl Into<String>,
    description: impl Into<String>,
) -> Effect {
    Effect {
        id: effect_id(id),
        effect_type: effect_type.to_owned(),
        kind,
        derived: false,
        cause: None,
        resource: resource.into(),
        description: description.into(),
        reversible: true,
        external: false,
        changes: vec![],
        subjects: None,
        cost: None,
    }
}

pub fn effect_id(n: usize) -> String {
    format!("eff_{n}")
}

pub fn credits(amount: Credits) -> EstimatedCost {
    EstimatedCost {
        amount_min: amount,
        amount_max: amount,
        currency: "credits".to_owned(),
    }
}

pub fn effect_cost(amount: Credits) -> Option<EffectCost> {
    Some(EffectCost {
        amount,
        currency: "credits".to_owned(),
    })
}

pub fn blocker(code: &str, path: &str, message: String, repair: &str) -> Validation {
    Validation {
        severity: Severity::Error,
        code: code.to_owned(),
        path: Some(path.to_owned()),
        message,
        blocks_execution: true,
        repair: Some(repair.to_owned()),
    }
}

pub fn note(severity: Severity, code: &str, path: &str, message: String) -> Validation {
    Validation {
        severity,
        code: code.to_owned(),
        path: Some(path.to_owned()),
        message,
        blocks_execution: false,
        repair: None,
    }
}

/// "Six subjects", "One item", "1234 projects": how a description counts.
pub fn count(n: usize, singular: &str, plural: &str) -> String {
    const WORDS: [&str; 13] = [
        "No", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine", "Ten",
        "Eleven", "Twelve",
    ];
    let noun = if n == 1 { singular } else { plural };
    match WORDS.get(n) {
        Some(word) => format!("{word} {noun}"),
        None => format!("{n} {noun}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_as_words_when_small() {
        assert_eq!(count(6, "subject", "subjects"), "Six subjects");
        assert_eq!(count(1, "item", "items"), "One item");
        assert_eq!(count(37, "member", "members"), "37 members");
    }
}
