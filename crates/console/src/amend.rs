//! Amending a plan from the console (`docs/amend.md`): the editor's starting point (the plan's
//! params and the capability's input schema, as a form when the schema is flat), and the
//! amended request previewed by the gateway as the successor, shown as a refresh is.

use serde::Serialize;
use serde_json::{Map, Value};
use ts_rs::TS;

use countersign_proto::approvals::ParamChange;

use crate::console::Console;
use crate::error::ConsoleError;
use crate::review::RefreshView;
use crate::signing::confirm::{self, Confirm};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum FormFieldKind {
    String,
    Integer,
    Number,
    Boolean,
    /// One of the schema's `enum` of strings.
    Choice,
    /// One of the schema's `enum` of numbers: chosen, never typed, and sent as the number.
    NumberChoice,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct FormField {
    pub name: String,
    pub label: String,
    pub kind: FormFieldKind,
    pub choices: Vec<String>,
    pub required: bool,
    pub description: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct AmendDraft {
    pub plan_id: String,
    pub capability_id: String,
    /// The plan's params now.
    #[ts(type = "unknown")]
    pub params: Value,
    /// The capability's input_schema.
    #[ts(type = "unknown")]
    pub schema: Value,
    /// A form when the schema is a flat object of scalar properties; null: edit JSON.
    pub form: Option<Vec<FormField>>,
}

/// One input per property when `schema` is an object of scalar properties (strings, numbers,
/// booleans, enums of strings or of numbers); anything else is edited as JSON.
pub fn form_of(schema: &Value) -> Option<Vec<FormField>> {
    if schema.get("type")? != "object" {
        return None;
    }
    let properties: &Map<String, Value> = schema.get("properties")?.as_object()?;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    properties
        .iter()
        .map(|(name, property)| {
            let listed = property.get("enum").and_then(Value::as_array);
            let strings: Option<Vec<String>> =
                listed.and_then(|e| e.iter().map(|v| v.as_str().map(str::to_owned)).collect());
            let numbers: Option<Vec<String>> = listed.and_then(|e| {
                e.iter()
                    .map(|v| v.as_number().map(|n| n.to_string()))
                    .collect()
            });
            // An enum of neither all strings nor all numbers is edited as JSON.
            if listed.is_some() && strings.is_none() && numbers.is_none() {
                return None;
            }
            let kind = match (&strings, &numbers, property.get("type")?.as_str()?) {
                (Some(_), _, _) => FormFieldKind::Choice,
                (_, Some(_), _) => FormFieldKind::NumberChoice,
                (None, None, "string") => FormFieldKind::String,
                (None, None, "integer") => FormFieldKind::Integer,
                (None, None, "number") => FormFieldKind::Number,
                (None, None, "boolean") => FormFieldKind::Boolean,
                _ => return None,
            };
            Some(FormField {
                label: property
                    .get("title")
                    .and_then(Value::as_str)
                    .map_or_else(|| name.replace('_', " "), str::to_owned),
                name: name.clone(),
                kind,
                choices: strings.or(numbers).unwrap_or_default(),
                required: required.contains(&name.as_str()),
                description: property
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            })
        })
        .collect()
}

/// Whether `value` holds U+FFFD anywhere: what a window shows in place of a hidden character.
fn holds_replacement(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains('\u{FFFD}'),
        Value::Array(items) => items.iter().any(holds_replacement),
        Value::Object(members) => members
            .iter()
            .any(|(k, v)| k.contains('\u{FFFD}') || holds_replacement(v)),
        _ => false,
    }
}

impl Console {
    /// What the amend editor starts from: the plan's params and its capability's input schema.
    pub async fn amend_draft(&self, plan_id: &str) -> Result<AmendDraft, ConsoleError> {
        let plan = self.fetch(plan_id).await?.record.plan;
        let describe = self.client().describe(&plan.capability_id).await?;
        Ok(AmendDraft {
            plan_id: plan.plan_id,
            form: form_of(&describe.input_schema),
            capability_id: plan.capability_id,
            params: plan.request.params,
            schema: describe.input_schema,
        })
    }

    /// Asks the gateway to preview `params` as the successor of `plan_id`, once `confirm` says yes
    /// to the params changed (the approver writes the successor's request, which someone else
    /// must then approve), and says what changed and who changed it.
    pub async fn amend(
        &self,
        plan_id: &str,
        params: Value,
        confirm: &dyn Confirm,
    ) -> Result<RefreshView, ConsoleError> {
        // A window shows a hidden character as U+FFFD; sent back, it would change the request
        // where the approver sees no change.
        if holds_replacement(&params) {
            return Err(ConsoleError::Invalid(
                "The request holds a character shown as \u{FFFD}: the plan's text has hidden \
                 characters the editor cannot show. Reject the plan instead."
                    .to_owned(),
            ));
        }
        let old = self.client().plan(plan_id).await?;
        let changes = ParamChange::between(&old.record.plan.request.params, &params);
        if changes.is_empty() {
            return Err(ConsoleError::Invalid(
                "The request is unchanged: refresh the plan instead.".to_owned(),
            ));
        }
        let lines: Vec<String> = changes.iter().map(ParamChange::words).collect();
        let consequence = format!(
            "You write a new request for {} and the gateway previews it as plan {plan_id}'s \
             successor. You cannot approve what you wrote: someone else must.",
            old.record.plan.caller.agent_id
        );
        if !confirm::ask(confirm, "Change this request?", &consequence, &lines) {
            return Err(ConsoleError::Cancelled);
        }
        let new = self.client().amend(plan_id, &params).await?;
        let mut view = self.changed_between(&old, &new).await?;
        view.amended = new.record.amendment.as_ref().map(|a| a.summary.clone());
        Ok(view)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_flat_schema_is_a_form_and_a_nested_one_is_json() {
        let flat = json!({"type": "object", "required": ["project"], "properties": {
            "project": {"type": "string", "description": "Which project"},
            "retention_days": {"type": "integer", "title": "Retention (days)"},
            "mode": {"type": "string", "enum": ["fast", "safe"]},
            "dry": {"type": "boolean"}}});
        let form = form_of(&flat).unwrap();
        let kinds: Vec<(&str, FormFieldKind, bool)> = form
            .iter()
            .map(|f| (f.name.as_str(), f.kind, f.required))
            .collect();
        assert_eq!(
            kinds,
            [
                ("dry", FormFieldKind::Boolean, false),
                ("mode", FormFieldKind::Choice, false),
                ("project", FormFieldKind::String, true),
                ("retention_days", FormFieldKind::Integer, false),
            ]
        );
        assert_eq!(form[3].label, "Retention (days)");
        assert_eq!(form[1].choices, ["fast", "safe"]);
        let nested = json!({"type": "object", "properties": {
            "group": {"type": "string"}, "filter": {"type": "object"}}});
        assert_eq!(form_of(&nested), None);
        assert_eq!(form_of(&json!({"type": "array"})), None);
    }

    #[test]
    fn an_enum_of_numbers_is_a_choice_and_a_mixed_one_is_json() {
        let numbers = json!({"type": "object", "properties": {
            "retention_days": {"type": "integer", "enum": [7, 14, 30]}}});
        let form = form_of(&numbers).unwrap();
        assert_eq!(form[0].kind, FormFieldKind::NumberChoice);
        assert_eq!(form[0].choices, ["7", "14", "30"]);
        let mixed = json!({"type": "object", "properties": {
            "size": {"type": ["integer", "string"], "enum": [7, "large"]}}});
        assert_eq!(form_of(&mixed), None);
    }

    #[test]
    fn a_replacement_character_anywhere_is_found() {
        assert!(holds_replacement(&json!({"a": ["x", "bad\u{FFFD}"]})));
        assert!(!holds_replacement(&json!({"a": ["x", 1, null]})));
    }
}
