//! An audit others can verify (`docs/audit-export.md`): each decision, each standing approval and
//! each plan a standing approval let run, as an in-toto Statement (v1) wrapping the same DSSE
//! envelope the approver signed and the gateway's receipt for it; and the offline check of such
//! an export against the approvers' and the gateway's public keys. An entry verifies only when
//! every member of it is what its signed statement (and, for a plan that ran, the plan it
//! carries) and its receipt say: the entry is rebuilt from what is signed and compared whole, so
//! a single changed byte fails; and a key's revocation is judged by when the gateway accepted
//! what it signed, not by the time its signer wrote into it.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use countersign_proto::approvals::{ApproverKey, ApproverKeys, RiskFlag};
use countersign_proto::decision::{Decision, Statement};
use countersign_proto::digest::{plan_core, plan_digest, sha256};
use countersign_proto::dsse::{decode_public_key, Envelope, DECISION_PAYLOAD_TYPE};
use countersign_proto::enrollment::fingerprint;
use countersign_proto::plan::Preview;
use countersign_proto::receipt::{envelope_digest, Accepted, Receipt};
use countersign_proto::standing::{
    StandingApproval, StandingStatement, StandingUse, STANDING_PAYLOAD_TYPE,
};
use countersign_proto::statement::Signed as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// The shape of in-toto's human-review predicate (a result, who reviewed, when), with what a
/// countersign decision adds.
pub const PREDICATE_TYPE: &str = "https://countersign.dev/attestation/human-review/v1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InTotoStatement {
    #[serde(rename = "_type")]
    pub kind: String,
    pub subject: Vec<Subject>,
    #[serde(rename = "predicateType")]
    pub predicate_type: String,
    pub predicate: Review,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Subject {
    pub name: String,
    pub digest: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewKind {
    /// A decision on one plan.
    Decision,
    /// A standing approval itself.
    Standing,
    /// A plan a standing approval counted for.
    StandingUse,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Review {
    /// `pass` for an approval, `fail` for a rejection.
    pub result: String,
    pub reviewer: Reviewer,
    #[serde(rename = "timeReviewed")]
    pub time_reviewed: DateTime<Utc>,
    pub kind: ReviewKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standing_id: Option<String>,
    /// For a covered plan: the plan's core, exactly what its digest (the subject's) covers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Value>,
    /// The DSSE envelope exactly as signed.
    pub envelope: Envelope,
    /// The gateway's receipt for it (`countersign.receipt/v1`): what it accepted, and when.
    pub receipt: Envelope,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reviewer {
    pub id: String,
    pub name: String,
}

fn subject(name: &str, digest: &str) -> Subject {
    let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
    Subject {
        name: name.to_owned(),
        digest: BTreeMap::from([("sha256".to_owned(), hex.to_owned())]),
    }
}

fn statement(subject: Vec<Subject>, predicate: Review) -> InTotoStatement {
    InTotoStatement {
        kind: STATEMENT_TYPE.to_owned(),
        subject,
        predicate_type: PREDICATE_TYPE.to_owned(),
        predicate,
    }
}

/// A decision entry from its envelope, the approver's display name and the gateway's receipt;
/// the envelope's statement read without verifying it (export writes what was signed; [`verify`]
/// checks it).
pub fn decision(
    envelope: &Envelope,
    name: &str,
    receipt: &Envelope,
) -> Result<InTotoStatement, String> {
    let signed = Statement::from_payload(&payload(envelope)?).map_err(|e| e.to_string())?;
    Ok(decision_of(&signed, envelope, name, receipt))
}

fn decision_of(
    signed: &Statement,
    envelope: &Envelope,
    name: &str,
    receipt: &Envelope,
) -> InTotoStatement {
    let result = match signed.decision {
        Decision::Approve => "pass",
        Decision::Reject => "fail",
    };
    statement(
        vec![subject(&signed.plan_id, &signed.plan_digest)],
        Review {
            result: result.to_owned(),
            reviewer: Reviewer {
                id: signed.approver_id.clone(),
                name: name.to_owned(),
            },
            time_reviewed: signed.issued_at,
            kind: ReviewKind::Decision,
            reason: signed.reason.clone(),
            standing_id: None,
            plan: None,
            envelope: envelope.clone(),
            receipt: receipt.clone(),
        },
    )
}

/// A standing approval's entry: its subject the statement's own bytes.
pub fn standing(standing: &StandingApproval) -> Result<InTotoStatement, String> {
    let payload = payload(&standing.envelope)?;
    let signed = StandingStatement::from_payload(&payload).map_err(|e| e.to_string())?;
    let signer = Signer {
        name: &standing.display_name,
        envelope: &standing.envelope,
        receipt: &standing.receipt,
    };
    Ok(standing_of(&signed, signer))
}

/// Who signed a standing approval's entry, the envelope they signed, and the gateway's receipt.
#[derive(Clone, Copy)]
struct Signer<'a> {
    name: &'a str,
    envelope: &'a Envelope,
    receipt: &'a Envelope,
}

fn standing_of(signed: &StandingStatement, signer: Signer<'_>) -> InTotoStatement {
    let digest = payload(signer.envelope)
        .map(|p| sha256(&p))
        .unwrap_or_default();
    let subject = subject(&signed.standing_id, &digest);
    standing_review(signed, signer, subject, None)
}

/// An entry signed by standing approval `signed`: itself, or (with `plan`) a plan it let run.
fn standing_review(
    signed: &StandingStatement,
    signer: Signer<'_>,
    subject: Subject,
    plan: Option<Value>,
) -> InTotoStatement {
    let kind = match plan {
        Some(_) => ReviewKind::StandingUse,
        None => ReviewKind::Standing,
    };
    statement(
        vec![subject],
        Review {
            result: "pass".to_owned(),
            reviewer: Reviewer {
                id: signed.approver_id.clone(),
                name: signer.name.to_owned(),
            },
            time_reviewed: signed.issued_at,
            kind,
            reason: Some(signed.reason.clone()),
            standing_id: Some(signed.standing_id.clone()),
            plan,
            envelope: signer.envelope.clone(),
            receipt: signer.receipt.clone(),
        },
    )
}

/// A plan `standing` let run (its use `used`), from the plan as served: its core is carried, its
/// digest is the subject, and the use's receipt says when it ran on it.
pub fn standing_use(
    standing: &StandingApproval,
    used: &StandingUse,
    plan: &Value,
) -> Result<InTotoStatement, String> {
    let payload = payload(&standing.envelope)?;
    let signed = StandingStatement::from_payload(&payload).map_err(|e| e.to_string())?;
    let signer = Signer {
        name: &standing.display_name,
        envelope: &standing.envelope,
        receipt: &used.receipt,
    };
    use_of(&signed, signer, plan)
}

fn use_of(
    signed: &StandingStatement,
    signer: Signer<'_>,
    plan: &Value,
) -> Result<InTotoStatement, String> {
    let digest = plan_digest(plan).map_err(|e| e.to_string())?;
    let plan_id = plan["plan_id"].as_str().unwrap_or_default();
    let core = plan_core(plan).map_err(|e| e.to_string())?;
    let subject = subject(plan_id, &digest);
    Ok(standing_review(signed, signer, subject, Some(core)))
}

/// A plan's core read as a preview, for what a standing approval covers: the members outside the
/// core (none of which that reads) filled in, and nothing else than the core accepted.
fn preview_of(core: &Value) -> Result<Preview, String> {
    if plan_core(core).map_err(|e| e.to_string())? != *core {
        return Err("the covered plan carries more than its core".to_owned());
    }
    let mut plan = core.clone();
    let filled = serde_json::json!({"mode": "preview", "valid": true, "executable": true,
                                    "audit_id": "", "plan_digest": ""});
    if let (Value::Object(plan), Value::Object(filled)) = (&mut plan, filled) {
        plan.extend(filled);
        if let Some(Value::Array(effects)) = plan.get_mut("effects") {
            for effect in effects {
                if let Some(Value::Object(subjects)) = effect.get_mut("subjects") {
                    subjects.insert("sample".to_owned(), Value::Array(Vec::new()));
                }
            }
        }
    }
    serde_json::from_value(plan)
        .map_err(|e| format!("the covered plan does not read as a plan: {e}"))
}

fn payload(envelope: &Envelope) -> Result<Vec<u8>, String> {
    envelope.payload_bytes().map_err(|e| e.to_string())
}

/// Checks one exported line against `keys` (the gateway's approver keys and its own): what it
/// verifies, or why it does not.
pub fn verify(line: &str, keys: &ApproverKeys) -> Result<String, String> {
    countersign_proto::strict_json::check(line.as_bytes())?;
    let entry: InTotoStatement =
        serde_json::from_str(line).map_err(|e| format!("not an exported entry: {e}"))?;
    let receipt = receipt_of(&entry, keys)?;
    let envelope = &entry.predicate.envelope;
    let keyid = &envelope.signature().map_err(|e| e.to_string())?.keyid;
    let key: &ApproverKey = keys
        .keys
        .iter()
        .find(|k| &k.key_id == keyid && k.approver_id == entry.predicate.reviewer.id)
        .ok_or_else(|| {
            format!(
                "signed with {keyid}, not a key of {}",
                entry.predicate.reviewer.id
            )
        })?;
    let public = decode_public_key(&key.public_key).map_err(|e| e.to_string())?;
    let name = key.display_name.as_str();
    let receipt_envelope = &entry.predicate.receipt;
    let (expected, what, audience, issued_at) = match envelope.payload_type.as_str() {
        DECISION_PAYLOAD_TYPE => {
            let signed = Statement::open(envelope, &public).map_err(|e| e.to_string())?;
            accepted(&receipt, Accepted::Decision)?;
            if receipt.plan_id.as_ref() != Some(&signed.plan_id)
                || receipt.plan_digest.as_ref() != Some(&signed.plan_digest)
            {
                return Err("its receipt is for another plan".to_owned());
            }
            let what = format!(
                "{} of {} {} by {name}",
                if signed.decision == Decision::Approve {
                    "approval"
                } else {
                    "rejection"
                },
                signed.plan_id,
                signed.plan_digest,
            );
            let expected = decision_of(&signed, envelope, name, receipt_envelope);
            (expected, what, signed.audience, signed.issued_at)
        }
        STANDING_PAYLOAD_TYPE => {
            let signed = StandingStatement::open(envelope, &public).map_err(|e| e.to_string())?;
            if receipt.standing_id.as_ref() != Some(&signed.standing_id) {
                return Err("its receipt is for another standing approval".to_owned());
            }
            let signer = Signer {
                name,
                envelope,
                receipt: receipt_envelope,
            };
            let (expected, what) = match entry.predicate.kind {
                ReviewKind::StandingUse => {
                    accepted(&receipt, Accepted::StandingUse)?;
                    let plan = entry
                        .predicate
                        .plan
                        .as_ref()
                        .ok_or("a plan that ran without its plan")?;
                    let preview = preview_of(plan)?;
                    ran_under(&signed, (&preview, plan), &receipt)?;
                    let what = format!(
                        "plan {} ran under standing approval {} of {name} (its use {}; its terms \
                         checked here, its caps are the gateway's record)",
                        preview.plan_id,
                        signed.standing_id,
                        receipt.use_number.unwrap_or_default()
                    );
                    (use_of(&signed, signer, plan)?, what)
                }
                _ => {
                    accepted(&receipt, Accepted::Standing)?;
                    let what = format!("standing approval {} by {name}", signed.standing_id);
                    (standing_of(&signed, signer), what)
                }
            };
            (expected, what, signed.audience, signed.issued_at)
        }
        other => {
            return Err(format!(
                "payload type {other} is neither a decision nor a standing approval"
            ))
        }
    };
    if audience != keys.gateway_id {
        return Err(format!(
            "addressed to {audience}, not gateway {}",
            keys.gateway_id
        ));
    }
    // The signer's own issued_at proves nothing: the gateway's time of acceptance does.
    if key.revoked_at.is_some_and(|at| at <= receipt.accepted_at) {
        return Err(format!(
            "signed with {keyid}, which was revoked before the gateway accepted it"
        ));
    }
    if issued_at > receipt.accepted_at + chrono::Duration::seconds(60) {
        return Err("issued after the gateway accepted it".to_owned());
    }
    if expected != entry {
        return Err("the entry differs from what its signed statement says".to_owned());
    }
    Ok(format!(
        "{what}, accepted by the gateway at {}",
        receipt.accepted_at.format("%Y-%m-%d %H:%M:%SZ")
    ))
}

/// The gateway's receipt in `entry`, verified under the gateway key `keys` name, for the
/// envelope `entry` carries.
fn receipt_of(entry: &InTotoStatement, keys: &ApproverKeys) -> Result<Receipt, String> {
    let gateway = keys.gateway_key.as_ref().ok_or(
        "the keys name no gateway key to check receipts with: fetch them again \
         (countersign-cli keys)",
    )?;
    let public = decode_public_key(&gateway.public_key).map_err(|e| e.to_string())?;
    if fingerprint(&public) != gateway.fingerprint {
        return Err("the gateway key is not the one its fingerprint names".to_owned());
    }
    let receipt = Receipt::open(&entry.predicate.receipt, &public)
        .map_err(|e| format!("its receipt does not verify: {e}"))?;
    if receipt.gateway_id != keys.gateway_id {
        return Err(format!(
            "its receipt is from gateway {}, not {}",
            receipt.gateway_id, keys.gateway_id
        ));
    }
    let digest = envelope_digest(&entry.predicate.envelope).map_err(|e| e.to_string())?;
    if receipt.envelope_digest != digest {
        return Err("its receipt is for another envelope".to_owned());
    }
    Ok(receipt)
}

fn accepted(receipt: &Receipt, kind: Accepted) -> Result<(), String> {
    match receipt.accepted == kind {
        true => Ok(()),
        false => Err(format!(
            "its receipt is for a {:?}, not a {kind:?}",
            receipt.accepted
        )),
    }
}

/// Whether `preview` is a plan standing approval `signed` let run, as `receipt` says: its terms
/// cover it, it was made and ran within its time, and the receipt names it.
fn ran_under(
    signed: &StandingStatement,
    (preview, core): (&Preview, &Value),
    receipt: &Receipt,
) -> Result<(), String> {
    // Offline, the policy that let a standing approval cover a flag is not known: only the
    // statement's own terms are checked.
    if let Some(why) = signed.refuses(preview, &RiskFlag::ALL) {
        return Err(format!(
            "standing approval {} does not cover {}: {why}",
            signed.standing_id, preview.plan_id
        ));
    }
    if preview.created_at < signed.issued_at || preview.created_at > signed.expires_at {
        return Err(format!(
            "plan {} was made outside standing approval {}'s time",
            preview.plan_id, signed.standing_id
        ));
    }
    if receipt.accepted_at > signed.expires_at {
        return Err(format!(
            "plan {} ran after standing approval {} expired",
            preview.plan_id, signed.standing_id
        ));
    }
    let digest = plan_digest(core).map_err(|e| e.to_string())?;
    let names_it = receipt.plan_id.as_ref() == Some(&preview.plan_id)
        && receipt.plan_digest.as_ref() == Some(&digest)
        && receipt.use_number.is_some();
    match names_it {
        true => Ok(()),
        false => Err("its receipt is for another plan".to_owned()),
    }
}

#[cfg(test)]
mod tests;
