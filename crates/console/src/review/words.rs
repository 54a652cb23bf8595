//! Plans in words: the one-line gist a queue row shows, the consequence a risky approval is
//! confirmed on, and what an effect does to one of its subjects. Built from the effects alone
//! (kind, resource, subjects, changes, reversibility), never from agent-written descriptions.

use countersign_proto::plan::{Effect, EffectKind, Preview};
use serde_json::Value;

/// Longest value a gist quotes before it is cut.
const GIST_VALUE: usize = 32;

/// The last segment of a resource path: `groups/grp_support` → `grp_support`.
fn name(resource: &str) -> &str {
    resource.rsplit('/').next().unwrap_or(resource)
}

fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "∅".to_owned(),
        other => other.to_string(),
    }
}

/// A value as it is, when it is short and one line: what the consequence quotes whole.
fn whole(value: &Value) -> Option<String> {
    let text = text_of(value);
    (text.chars().count() <= GIST_VALUE && !text.contains('\n')).then_some(text)
}

/// A long value by its size, never a piece of it: "2 lines", "120 characters".
fn size(value: &Value) -> String {
    let text = text_of(value);
    match text.lines().count() {
        n if n > 1 => format!("{n} lines"),
        _ => format!("{} characters", text.chars().count()),
    }
}

/// A value for the one-line gist: whole when short; otherwise the words that fit and "…", never
/// a word cut in two; a value whose first word does not fit is named by its size.
fn short(value: &Value) -> String {
    let flat: String = text_of(value)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if flat.chars().count() <= GIST_VALUE {
        return flat;
    }
    let mut cut = String::new();
    for word in flat.split(' ') {
        let len = cut.chars().count() + usize::from(!cut.is_empty()) + word.chars().count();
        if len > GIST_VALUE - 1 {
            break;
        }
        if !cut.is_empty() {
            cut.push(' ');
        }
        cut.push_str(word);
    }
    match cut.is_empty() {
        true => format!("({})", size(value)),
        false => format!("{cut}…"),
    }
}

/// What a collection belongs to: `projects/prj_421/members` → `prj_421`.
fn owner(resource: &str) -> &str {
    let mut segments = resource.rsplit('/');
    let last = segments.next().unwrap_or(resource);
    match segments.next() {
        Some(parent) if ["members", "items", "documents"].contains(&last) => parent,
        _ => last,
    }
}

/// `/retention_days` → `retention days`.
fn field(path: &str) -> String {
    path.rsplit('/').next().unwrap_or(path).replace('_', " ")
}

/// A subject count as words show it: `100,000`, not `100000`.
#[derive(Clone, Copy)]
struct Count(u64);

impl std::fmt::Display for Count {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let digits = self.0.to_string();
        let lead = digits.len() % 3;
        let mut out = String::with_capacity(digits.len() + digits.len() / 3);
        for (i, d) in digits.chars().enumerate() {
            if i > 0 && (i + 3 - lead).is_multiple_of(3) {
                out.push(',');
            }
            out.push(d);
        }
        f.write_str(&out)
    }
}

impl PartialEq<u64> for Count {
    fn eq(&self, other: &u64) -> bool {
        self.0 == *other
    }
}

fn subjects(effect: &Effect) -> Option<Count> {
    effect.subjects.as_ref().map(|s| Count(s.total))
}

/// One effect in a few words, for the gist.
fn effect_gist(effect: &Effect) -> String {
    let target = name(&effect.resource);
    if let Some(change) = effect.changes.first() {
        let more = match effect.changes.len() {
            1 => String::new(),
            n => format!(" (+{} more)", n - 1),
        };
        return format!(
            "{target} {} {} → {}{more}",
            field(&change.path),
            short(&change.before),
            short(&change.after)
        );
    }
    match (effect.kind, subjects(effect)) {
        (EffectKind::Revoke | EffectKind::Delete | EffectKind::Archive, Some(n)) => {
            format!("{target} −{n}")
        }
        (EffectKind::Grant | EffectKind::Create, Some(n)) => format!("{target} +{n}"),
        (_, Some(n)) => format!("{target} {} {n}", kind_word(effect.kind)),
        (kind, None) => format!("{target} {}", kind_word(kind)),
    }
}

fn kind_word(kind: EffectKind) -> &'static str {
    match kind {
        EffectKind::Create => "create",
        EffectKind::Update => "update",
        EffectKind::Delete => "delete",
        EffectKind::Archive => "archive",
        EffectKind::Grant => "grant",
        EffectKind::Revoke => "revoke",
        EffectKind::Notify => "notify",
        EffectKind::Charge => "charge",
        EffectKind::ExternalCall => "external call",
        EffectKind::Job => "job",
    }
}

/// One line: `prj_184 retention days 30 → 14`, `grp_support −37`; the first direct effect, and
/// how many more there are.
pub fn gist(plan: &Preview) -> String {
    let direct: Vec<&Effect> = plan.effects.iter().filter(|e| !e.derived).collect();
    let Some(first) = direct.first().copied().or(plan.effects.first()) else {
        return "no effects".to_owned();
    };
    match direct.len() {
        0 | 1 => effect_gist(first),
        n => format!("{} +{} more", effect_gist(first), n - 1),
    }
}

/// One effect as a clause of the consequence sentence.
fn clause(effect: &Effect) -> String {
    let target = name(&effect.resource);
    let n = subjects(effect);
    let kept = effect.effect_type.contains("retain") || effect.effect_type.contains("keep");
    match (effect.kind, n) {
        (EffectKind::Grant, Some(n)) if kept => {
            let through = effect
                .effect_type
                .split_once("via_")
                .map(|(_, rest)| rest.replace('_', " "))
                .map_or_else(String::new, |via| format!(" through {via}s"));
            format!("{n} keep access{through}")
        }
        (EffectKind::Revoke, Some(n)) if effect.effect_type.contains("member") => {
            format!("removes {n} members from {target}")
        }
        (EffectKind::Revoke, Some(n)) => format!("{n} lose {}", target.replace('_', "-")),
        (EffectKind::Grant, Some(n)) => {
            // A name only when the plan signs it: the sample is outside the digest.
            let whom = match crate::review::sample::only_subject(effect) {
                Some(one) => one.to_owned(),
                None if n == 1 => "1 subject".to_owned(),
                None => format!("{n} subjects"),
            };
            // A grant that sets a role names it: "grants editor on prj_421 to usr_92".
            let role = effect.changes.first().filter(|c| c.before.is_null());
            match role.and_then(|c| whole(&c.after)) {
                Some(role) => format!("grants {role} on {} to {whom}", owner(&effect.resource)),
                None => format!("grants {} to {whom}", owner(&effect.resource)),
            }
        }
        (EffectKind::Notify, Some(n)) => format!("notifies {n} by {target}{}", carries(effect)),
        (EffectKind::Delete, Some(n)) => format!("deletes {n} from {target}"),
        (EffectKind::Archive, Some(n)) => format!("archives {n} in {target}"),
        (_, _) if !effect.changes.is_empty() => effect
            .changes
            .iter()
            .map(|c| match (whole(&c.before), whole(&c.after)) {
                (Some(before), Some(after)) => format!(
                    "changes {} {} from {before} to {after}",
                    effect.resource,
                    field(&c.path)
                ),
                // A value too long to quote is named by its size, never cut mid-word.
                _ => format!(
                    "changes {} {}, {}",
                    effect.resource,
                    field(&c.path),
                    size(&c.after)
                ),
            })
            .collect::<Vec<_>>()
            .join("; "),
        (kind, Some(n)) => format!("{} {target} for {n}", verb(kind)),
        (kind, None) => format!("{} {target}", verb(kind)),
    }
}

/// What a notify effect's message says, where its plan signs one: ` (“Your access changed”)`.
fn carries(effect: &Effect) -> String {
    let message = effect.changes.iter().find(|c| c.path == MESSAGE);
    let subject = message.map(|c| &c.after["subject"]);
    match subject.filter(|s| s.is_string()) {
        Some(subject) => match whole(subject) {
            Some(text) => format!(" (“{text}”)"),
            None => format!(" (a subject of {})", size(subject)),
        },
        None => String::new(),
    }
}

fn verb(kind: EffectKind) -> &'static str {
    match kind {
        EffectKind::Create => "creates",
        EffectKind::Update => "updates",
        EffectKind::Delete => "deletes",
        EffectKind::Archive => "archives",
        EffectKind::Grant => "grants",
        EffectKind::Revoke => "revokes",
        EffectKind::Notify => "notifies",
        EffectKind::Charge => "charges",
        EffectKind::ExternalCall => "calls",
        EffectKind::Job => "schedules",
    }
}

/// The sentence a risky approval is confirmed on, e.g. "removes 37 members from grp_support;
/// 4 keep access through nested groups; 6 lose on-call; notifies 37 by email; irreversible;
/// external; up to 0.37 credits". Empty when `risky` is false.
pub fn consequence(plan: &Preview, risky: bool) -> String {
    if !risky {
        return String::new();
    }
    let mut parts: Vec<String> = Vec::new();
    for effect in plan.effects.iter().filter(|e| !e.derived) {
        parts.push(clause(effect));
    }
    for effect in plan.effects.iter().filter(|e| e.derived) {
        parts.push(clause(effect));
    }
    if plan.effects.is_empty() {
        parts.push("changes nothing".to_owned());
    }
    let irreversible = plan
        .effects
        .iter()
        .any(|e| !e.reversible || matches!(e.kind, EffectKind::Delete | EffectKind::Archive));
    if irreversible {
        parts.push("irreversible".to_owned());
    }
    if plan.effects.iter().any(|e| e.external) {
        parts.push("external".to_owned());
    }
    let max = plan.estimated_cost.amount_max.value();
    if !max.is_zero() {
        parts.push(format!(
            "up to {} {}",
            plan.estimated_cost.amount_max, plan.estimated_cost.currency
        ));
    }
    if !plan.assumptions.is_empty() {
        parts.push(format!(
            "depends on {}",
            plan.assumptions
                .iter()
                .map(|a| a.dependency.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    parts.join("; ")
}

/// What `effect` does to one subject in its set: "loses on-call", "keeps access through nested
/// groups", "is notified by email".
pub fn for_subject(effect: &Effect) -> String {
    let target = name(&effect.resource);
    let kept = effect.effect_type.contains("retain") || effect.effect_type.contains("keep");
    match effect.kind {
        EffectKind::Grant if kept => {
            let via = effect
                .effect_type
                .split_once("via_")
                .map(|(_, rest)| format!(" through {}s", rest.replace('_', " ")));
            format!("keeps access{}", via.unwrap_or_default())
        }
        EffectKind::Revoke if effect.effect_type.contains("member") => {
            format!("leaves {target}")
        }
        EffectKind::Revoke => format!("loses {}", target.replace('_', "-")),
        EffectKind::Grant => format!("gains {target}"),
        EffectKind::Notify => format!("is notified by {target}"),
        EffectKind::Delete => format!("deleted from {target}"),
        EffectKind::Archive => format!("archived in {target}"),
        kind => format!("{} {target}", verb(kind)),
    }
}

/// The path under which a notify effect binds its recipients' addresses (a digest of them).
pub const RECIPIENTS: &str = "/recipients_digest";

/// The path under which a notify effect signs the message it sends (subject and body).
pub const MESSAGE: &str = "/message";

/// A recipients digest in words: how many addresses it binds, and the digest as the header
/// shortens digests ("37 addresses · sha256:96e5…b5bc").
pub fn recipients(count: u64, digest: &str) -> String {
    let noun = if count == 1 { "address" } else { "addresses" };
    format!(
        "{} {noun} · {}",
        Count(count),
        crate::signing::confirm::short_digest(digest)
    )
}

/// A subject's `detail` in words: an expiry that moves (`expires 2026-12-30 → 2026-12-14`), a
/// legal hold, then any other scalar fields as `key value`. Dates are cut to the day.
pub fn detail(detail: &Value) -> Option<String> {
    let object = detail.as_object()?;
    let day = |key: &str| {
        object.get(key).and_then(Value::as_str).map(|t| {
            let date = t.get(..10).filter(|d| d.as_bytes().get(4) == Some(&b'-'));
            date.unwrap_or(t).to_owned()
        })
    };
    let mut parts = Vec::new();
    match (
        day("expires_before"),
        day("expires_after"),
        day("expires_at"),
    ) {
        (Some(before), Some(after), _) => parts.push(format!("expires {before} → {after}")),
        (_, _, Some(at)) => parts.push(format!("expires {at}")),
        _ => {}
    }
    if object.get("legal_hold") == Some(&Value::Bool(true)) {
        parts.push("legal hold".to_owned());
    }
    const SAID: [&str; 4] = [
        "expires_before",
        "expires_after",
        "expires_at",
        "legal_hold",
    ];
    for (key, value) in object.iter().filter(|(k, _)| !SAID.contains(&k.as_str())) {
        if !value.is_object() && !value.is_array() {
            parts.push(format!("{} {}", key.replace('_', " "), short(value)));
        }
    }
    (!parts.is_empty()).then(|| parts.join(" · "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fixture(name: &str) -> Preview {
        let path = format!(
            "{}/../../../shared/fixtures/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn counts_are_grouped_by_thousands() {
        let shown: Vec<String> = [0, 7, 999, 1_000, 37_512, 100_000, 1_234_567]
            .into_iter()
            .map(|n| Count(n).to_string())
            .collect();
        assert_eq!(
            shown,
            ["0", "7", "999", "1,000", "37,512", "100,000", "1,234,567"]
        );
    }

    #[test]
    fn the_bulk_removal_reads_as_its_consequence() {
        let plan = fixture("plan-bulk.json");
        assert_eq!(gist(&plan), "grp_support −37");
        let sentence = consequence(&plan, true);
        assert!(
            sentence.starts_with(
                "removes 37 members from grp_support; 4 keep access through nested groups; \
                 6 lose on-call; notifies 37 by email; irreversible; external"
            ),
            "{sentence}"
        );
        assert_eq!(consequence(&plan, false), "");
        assert_eq!(
            for_subject(&plan.effects[2]),
            "loses on-call",
            "what happens to one subject"
        );
        assert_eq!(
            for_subject(&plan.effects[1]),
            "keeps access through nested groups"
        );
    }

    #[test]
    fn a_settings_change_reads_as_before_and_after() {
        let plan = fixture("plan-small.json");
        let line = gist(&plan);
        assert!(line.starts_with("prj_184 retention days 30 → 14"), "{line}");
    }

    #[test]
    fn a_subject_detail_says_its_expiry_and_hold_in_words() {
        let moved = json!({"expires_before": "2026-12-30T10:00:00Z", "expires_after": "2026-12-14T10:00:00Z"});
        assert_eq!(detail(&moved).unwrap(), "expires 2026-12-30 → 2026-12-14");
        let held = json!({"expires_at": "2027-01-02T00:00:00Z", "legal_hold": true});
        assert_eq!(detail(&held).unwrap(), "expires 2027-01-02 · legal hold");
        let other = json!({"seat_pool": "seats_main", "nested": {"x": 1}});
        assert_eq!(detail(&other).unwrap(), "seat pool seats_main");
        assert_eq!(detail(&json!(null)), None);
        assert_eq!(detail(&json!({})), None);
    }

    #[test]
    fn a_role_grant_names_the_role_the_project_and_the_person_the_plan_signs() {
        let signed = countersign_proto::digest::subjects_digest(["usr_92"]);
        let mut plan = serde_json::to_value(fixture("plan-small.json")).unwrap();
        plan["effects"] = json!([
            {"id": "eff_1", "type": "role_granted", "kind": "grant",
             "resource": "projects/prj_421/members", "description": "", "reversible": true,
             "external": false, "derived": false,
             "changes": [{"path": "/usr_92/role", "before": null, "after": "editor"}],
             "subjects": {"total": 1, "sample": ["usr_92"], "digest": signed}},
            {"id": "eff_2", "type": "seat_consumed", "kind": "update", "resource": "seats/org",
             "description": "", "reversible": true, "external": false, "derived": true,
             "cause": "eff_1", "changes": [{"path": "/used", "before": 4, "after": 5}]}
        ]);
        plan["estimated_cost"]["amount_max"] = json!("0");
        plan["assumptions"] = json!([]);
        let mut forged = plan.clone();
        let plan: Preview = serde_json::from_value(plan).unwrap();
        assert_eq!(
            consequence(&plan, true),
            "grants editor on prj_421 to usr_92; changes seats/org used from 4 to 5"
        );
        // A relay's sample names nobody: the plan signs a different set.
        forged["effects"][0]["subjects"]["sample"] = json!(["usr_innocent"]);
        let forged: Preview = serde_json::from_value(forged).unwrap();
        assert!(consequence(&forged, true).starts_with("grants editor on prj_421 to 1 subject;"));
    }

    #[test]
    fn long_values_are_cut_at_a_word_or_named_never_cut_mid_word() {
        let note = json!("Keep the release notes for the whole of the audit period");
        assert_eq!(short(&note), "Keep the release notes for the…");
        let token = json!("a".repeat(40));
        assert_eq!(short(&token), "(40 characters)");
        let mut plan = serde_json::to_value(fixture("plan-small.json")).unwrap();
        plan["effects"] = json!([
            {"id": "eff_1", "type": "settings_changed", "kind": "update",
             "resource": "projects/prj_184", "description": "", "reversible": true,
             "external": false, "derived": false,
             "changes": [{"path": "/retention_note", "before": "short",
                          "after": "First line of the note\nand its second line"},
                         {"path": "/retention_days", "before": 30, "after": 14}]}
        ]);
        plan["estimated_cost"]["amount_max"] = json!("0");
        plan["assumptions"] = json!([]);
        let plan: Preview = serde_json::from_value(plan).unwrap();
        assert_eq!(
            consequence(&plan, true),
            "changes projects/prj_184 retention note, 2 lines; \
             changes projects/prj_184 retention days from 30 to 14"
        );
    }

    #[test]
    fn a_notification_says_what_its_email_carries_where_the_plan_signs_it() {
        let mut plan = fixture("plan-bulk.json");
        let notify = plan
            .effects
            .iter_mut()
            .find(|e| e.kind == EffectKind::Notify)
            .unwrap();
        notify.changes.push(countersign_proto::plan::Change {
            path: MESSAGE.to_owned(),
            before: Value::Null,
            after: json!({"subject": "Your access changed", "body": "You are no longer…"}),
        });
        let sentence = consequence(&plan, true);
        assert!(
            sentence.contains("notifies 37 by email (“Your access changed”);"),
            "{sentence}"
        );
    }

    #[test]
    fn a_recipients_digest_says_how_many_it_binds() {
        let digest = "sha256:96e586515977be9e4861faf5098720099ea7b5a27eda012ae322ddcd69eab5bc";
        assert_eq!(recipients(37, digest), "37 addresses · sha256:96e5…b5bc");
        assert_eq!(recipients(1, digest), "1 address · sha256:96e5…b5bc");
    }
}
