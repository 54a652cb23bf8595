//! Whether a plan's effects hang together: the console groups derived effects under their causes
//! and says "because of …", so a cause the plan does not hold, or causes that lead round in a
//! circle, would have the approver sign a story the plan does not tell.

use std::collections::HashMap;

use countersign_proto::plan::Effect;

/// Why `effects` cannot be read as one plan, if they cannot: an effect naming a cause the plan
/// does not hold, or causes that form a cycle.
pub fn broken(effects: &[Effect]) -> Option<String> {
    let cause_of: HashMap<&str, Option<&str>> = effects
        .iter()
        .map(|e| (e.id.as_str(), e.cause.as_deref()))
        .collect();
    for effect in effects {
        if let Some(cause) = effect.cause.as_deref() {
            if !cause_of.contains_key(cause) {
                return Some(format!(
                    "Effect {} names a cause, {cause}, that the plan does not hold.",
                    effect.id
                ));
            }
        }
        // Following causes from here must end within as many steps as there are effects.
        let mut at = effect.id.as_str();
        for _ in 0..=effects.len() {
            match cause_of.get(at).copied().flatten() {
                Some(next) => at = next,
                None => break,
            }
        }
        if cause_of.get(at).copied().flatten().is_some() {
            return Some(format!(
                "The causes of effect {} lead round in a circle.",
                effect.id
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn effects(causes: &[(&str, Option<&str>)]) -> Vec<Effect> {
        causes
            .iter()
            .map(|(id, cause)| {
                serde_json::from_value(json!({
                    "id": id, "type": "t", "kind": "update", "derived": cause.is_some(),
                    "cause": cause, "resource": "r", "description": "d",
                    "reversible": true, "external": false
                }))
                .unwrap()
            })
            .collect()
    }

    #[test]
    fn causes_must_be_in_the_plan_and_end_somewhere() {
        let sound = effects(&[
            ("eff_1", None),
            ("eff_2", Some("eff_1")),
            ("eff_3", Some("eff_2")),
        ]);
        assert_eq!(broken(&sound), None);
        let missing = effects(&[("eff_1", None), ("eff_2", Some("eff_404"))]);
        assert!(broken(&missing).unwrap().contains("eff_404"));
        let cycle = effects(&[("eff_1", Some("eff_2")), ("eff_2", Some("eff_1"))]);
        assert!(broken(&cycle).unwrap().contains("circle"));
        let own = effects(&[("eff_1", Some("eff_1"))]);
        assert!(broken(&own).unwrap().contains("circle"));
    }
}
