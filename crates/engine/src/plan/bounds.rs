//! Bounds on what an agent writes: every string of a request may reach an approver (in the plan,
//! its validation messages, the preview audit), so lengths and counts are capped before anything
//! is stored or evaluated. What the characters may do on a screen is the console's and the CLI's
//! to neutralise: they must not trust any gateway's text.

use countersign_proto::plan::{pointer_token, DryRunRequest, InvokeRequest};
use serde_json::Value;

use crate::{ApiError, ApiResult};

/// Characters in any string value of the params, unless the capability says otherwise.
pub use countersign_pack::MAX_STRING;
/// Characters in an object key anywhere in the params.
pub const MAX_KEY: usize = 100;
/// Members of an object or items of an array anywhere in the params.
pub const MAX_ITEMS: usize = 1000;
/// Nesting of objects and arrays in the params.
pub const MAX_DEPTH: usize = 8;
/// Entries of `expected_revisions`.
pub const MAX_EXPECTED: usize = 50;
/// Characters in a key of `expected_revisions` (a resource such as `projects/prj_184`).
pub const MAX_RESOURCE: usize = 200;
/// Characters in a revision, an idempotency key or a plan id.
pub const MAX_TOKEN: usize = 100;
/// Characters of a resource an agent says it observed: a file's path on its machine (up to
/// Linux's 4,096) behind its kind.
pub const MAX_OBSERVED: usize = 4200;

/// `request` within the bounds, its strings within `max_string` characters (the capability's).
pub fn dry_run(request: &DryRunRequest, max_string: usize) -> ApiResult<()> {
    params(&request.params, max_string)?;
    if let Some(expected) = &request.expected_revisions {
        revisions("expected_revisions", expected, MAX_RESOURCE)?;
    }
    if let Some(key) = &request.idempotency_key {
        text("/idempotency_key", key, MAX_TOKEN, "The idempotency key")?;
    }
    Ok(())
}

pub fn invoke(request: &InvokeRequest, max_string: usize) -> ApiResult<()> {
    if let Some(params_value) = &request.params {
        params(params_value, max_string)?;
    }
    if let Some(plan_id) = &request.plan_id {
        text("/plan_id", plan_id, MAX_TOKEN, "The plan id")?;
    }
    if let Some(key) = &request.idempotency_key {
        text("/idempotency_key", key, MAX_TOKEN, "The idempotency key")?;
    }
    if let Some(observed) = &request.observed {
        revisions("observed", observed, MAX_OBSERVED)?;
    }
    Ok(())
}

/// A map of revisions by resource (`expected_revisions`, `observed`) within its bounds.
fn revisions(
    member: &str,
    map: &std::collections::BTreeMap<String, String>,
    max_resource: usize,
) -> ApiResult<()> {
    if map.len() > MAX_EXPECTED {
        return Err(ApiError::validation(
            &format!("/{member}"),
            format!("{member} holds at most {MAX_EXPECTED} entries."),
        ));
    }
    for (resource, revision) in map {
        let pointer = format!("/{member}/{}", pointer_token(&clip(resource)));
        text(&pointer, resource, max_resource, "A resource name")?;
        text(&pointer, revision, MAX_TOKEN, "A revision")?;
    }
    Ok(())
}

/// An approver's amended params (`docs/amend.md`): the request an agent's plan will run, held to
/// the bounds of the agent's own.
pub fn amend(params_value: &Value, max_string: usize) -> ApiResult<()> {
    params(params_value, max_string)
}

fn params(value: &Value, max_string: usize) -> ApiResult<()> {
    walk("/params", value, 0, max_string)
}

fn walk(pointer: &str, value: &Value, depth: usize, max_string: usize) -> ApiResult<()> {
    if depth > MAX_DEPTH {
        return Err(ApiError::validation(
            pointer,
            format!("Params nest at most {MAX_DEPTH} levels deep."),
        ));
    }
    match value {
        Value::String(s) => text(pointer, s, max_string, "A string"),
        Value::Array(items) => {
            if items.len() > MAX_ITEMS {
                return Err(ApiError::validation(
                    pointer,
                    format!("An array holds at most {MAX_ITEMS} items."),
                ));
            }
            for (i, item) in items.iter().enumerate() {
                walk(&format!("{pointer}/{i}"), item, depth + 1, max_string)?;
            }
            Ok(())
        }
        Value::Object(members) => {
            if members.len() > MAX_ITEMS {
                return Err(ApiError::validation(
                    pointer,
                    format!("An object holds at most {MAX_ITEMS} members."),
                ));
            }
            for (key, member) in members {
                let inner = format!("{pointer}/{}", pointer_token(&clip(key)));
                text(&inner, key, MAX_KEY, "A member name")?;
                walk(&inner, member, depth + 1, max_string)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn text(pointer: &str, value: &str, max: usize, what: &str) -> ApiResult<()> {
    if value.chars().count() > max {
        return Err(ApiError::validation(
            pointer,
            format!("{what} is at most {max} characters."),
        ));
    }
    Ok(())
}

/// The start of an over-long key, so a refusal never echoes the whole of it.
fn clip(key: &str) -> String {
    key.chars().take(MAX_KEY).collect()
}

/// A member name as a JSON pointer segment, clipped as every refusal clips it.
pub fn pointer_segment(key: &str) -> String {
    pointer_token(&clip(key))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pointer_of(error: ApiError) -> String {
        error.details["violations"][0]["schema_pointer"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    #[test]
    fn long_strings_keys_and_arrays_are_refused_with_their_pointer() {
        let long = "x".repeat(MAX_STRING + 1);
        let error = params(&json!({"filter": {"users": ["usr_1", long]}}), MAX_STRING).unwrap_err();
        assert_eq!(pointer_of(error), "/params/filter/users/1");
        let key = "k".repeat(MAX_KEY + 1);
        assert!(params(&json!({ key: 1 }), MAX_STRING).is_err());
        let many: Vec<u32> = (0..=MAX_ITEMS as u32).collect();
        assert_eq!(
            pointer_of(params(&json!({ "a": many }), MAX_STRING).unwrap_err()),
            "/params/a"
        );
        assert!(params(
            &json!({"project": "prj_184", "filename": "a.pdf"}),
            MAX_STRING
        )
        .is_ok());
    }

    #[test]
    fn a_capability_that_takes_whole_documents_raises_the_string_bound_alone() {
        let document = json!({"content": "x".repeat(100_000)});
        assert!(params(&document, MAX_STRING).is_err());
        assert!(params(&document, 1 << 20).is_ok());
        let key = "k".repeat(MAX_KEY + 1);
        assert!(
            params(&json!({ key: 1 }), 1 << 20).is_err(),
            "keys stay bounded"
        );
    }

    #[test]
    fn deep_nesting_is_refused() {
        let mut deep = json!(1);
        for _ in 0..=MAX_DEPTH {
            deep = json!([deep]);
        }
        assert!(params(&deep, MAX_STRING).is_err());
    }
}
