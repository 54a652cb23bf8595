//! `sha256:<hex>` digests over RFC 8785 canonical JSON (PROTOCOL section 0).

use serde::Serialize;
use serde_json::{json, Map, Value};
use sha2::{Digest as _, Sha256};

/// The members of a preview that a plan digest covers, in no particular order (JCS sorts them).
pub const PLAN_CORE_MEMBERS: [&str; 16] = [
    "interface_version",
    "plan_id",
    "capability_id",
    "resolved_version",
    "caller",
    "request",
    "request_digest",
    "read_revisions",
    "created_at",
    "expires_at",
    "would_require_approval",
    "billing",
    "estimated_cost",
    "effects",
    "validation",
    "assumptions",
];

#[derive(Debug, thiserror::Error)]
pub enum DigestError {
    #[error("value cannot be canonicalized: {0}")]
    Canonical(String),
    #[error("the plan is not a JSON object")]
    NotAnObject,
    #[error("effect {0} is not a JSON object")]
    BadEffect(usize),
}

/// RFC 8785 canonical bytes of any serializable value.
pub fn jcs<T: Serialize>(value: &T) -> Result<Vec<u8>, DigestError> {
    serde_json_canonicalizer::to_vec(value).map_err(|e| DigestError::Canonical(e.to_string()))
}

/// `sha256:` followed by the lowercase hex of the SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// `sha256(JCS({"capability_id": C, "params": P}))`.
pub fn request_digest(capability_id: &str, params: &Value) -> Result<String, DigestError> {
    Ok(sha256(&jcs(
        &json!({"capability_id": capability_id, "params": params}),
    )?))
}

/// The plan digest of a preview, computed over the JSON as received so that members a newer gateway
/// adds inside effects stay covered, and members outside the plan core never are.
pub fn plan_digest(preview: &Value) -> Result<String, DigestError> {
    Ok(sha256(&jcs(&plan_core(preview)?)?))
}

/// The preview restricted to [`PLAN_CORE_MEMBERS`], with each effect's `subjects` reduced to
/// `{total, digest}`.
pub fn plan_core(preview: &Value) -> Result<Value, DigestError> {
    let object = preview.as_object().ok_or(DigestError::NotAnObject)?;
    let mut core: Map<String, Value> = PLAN_CORE_MEMBERS
        .iter()
        .filter_map(|m| object.get(*m).map(|v| ((*m).to_owned(), v.clone())))
        .collect();
    if let Some(Value::Array(effects)) = core.get_mut("effects") {
        for (index, effect) in effects.iter_mut().enumerate() {
            let effect = effect
                .as_object_mut()
                .ok_or(DigestError::BadEffect(index))?;
            if let Some(Value::Object(subjects)) = effect.get_mut("subjects") {
                subjects.retain(|k, _| k == "total" || k == "digest");
            }
        }
    }
    Ok(Value::Object(core))
}

/// Digest of a full subject set: each id followed by a newline, ids in ascending byte order.
pub fn subjects_digest<I, S>(ids: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut ids: Vec<S> = ids.into_iter().collect();
    ids.sort_by(|a, b| a.as_ref().as_bytes().cmp(b.as_ref().as_bytes()));
    let mut hasher = SubjectsHasher::default();
    for id in &ids {
        hasher.push(id.as_ref());
    }
    hasher.finish()
}

/// Streaming form of [`subjects_digest`] for ids that already arrive in ascending order (pages).
#[derive(Default)]
pub struct SubjectsHasher(Sha256);

impl SubjectsHasher {
    pub fn push(&mut self, id: &str) {
        self.0.update(id.as_bytes());
        self.0.update(b"\n");
    }

    pub fn finish(self) -> String {
        format!("sha256:{}", hex::encode(self.0.finalize()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_order_does_not_matter() {
        assert_eq!(
            subjects_digest(["b", "a", "c"]),
            subjects_digest(["a", "b", "c"])
        );
        assert_eq!(subjects_digest(["a"]), sha256(b"a\n"));
    }

    #[test]
    fn sample_and_cursor_are_outside_the_digest() {
        let a = json!({"plan_id": "p", "effects": [{"id": "eff_1",
            "subjects": {"total": 2, "digest": "sha256:00", "sample": ["x"], "cursor": "c"}}]});
        let b = json!({"plan_id": "p", "effects": [{"id": "eff_1",
            "subjects": {"total": 2, "digest": "sha256:00", "sample": ["y"]}}]});
        assert_eq!(plan_digest(&a).unwrap(), plan_digest(&b).unwrap());
    }

    #[test]
    fn non_core_members_are_outside_the_digest() {
        let a = json!({"plan_id": "p", "audit_id": "aud_1", "plan_digest": "x"});
        let b = json!({"plan_id": "p", "audit_id": "aud_2"});
        assert_eq!(plan_digest(&a).unwrap(), plan_digest(&b).unwrap());
        let c = json!({"plan_id": "q"});
        assert_ne!(plan_digest(&a).unwrap(), plan_digest(&c).unwrap());
    }

    #[test]
    fn billing_is_inside_the_digest() {
        let flagged = json!({"plan_id": "p", "billing": {"preflight": "estimate", "cost_class": "external_passthrough"}});
        let dropped = json!({"plan_id": "p"});
        let relabelled =
            json!({"plan_id": "p", "billing": {"preflight": "estimate", "cost_class": "free"}});
        assert_ne!(
            plan_digest(&flagged).unwrap(),
            plan_digest(&dropped).unwrap()
        );
        assert_ne!(
            plan_digest(&flagged).unwrap(),
            plan_digest(&relabelled).unwrap()
        );
    }

    #[test]
    fn refuses_a_plan_that_is_not_an_object() {
        assert!(matches!(
            plan_digest(&json!([1])),
            Err(DigestError::NotAnObject)
        ));
        assert!(matches!(
            plan_digest(&json!({"effects": [1]})),
            Err(DigestError::BadEffect(0))
        ));
    }
}
