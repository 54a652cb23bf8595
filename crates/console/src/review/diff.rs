//! How a changed value is shown: scalars side by side, long texts as a line diff with word-level
//! highlights (`similar`, under a deadline), nested JSON as the list of pointers that differ.

use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;
use similar::{Algorithm, ChangeTag, TextDiff};
use ts_rs::TS;

/// Time a line diff may take before it settles for a coarser answer.
pub const LINE_DEADLINE: Duration = Duration::from_millis(200);
/// Inline (word) highlighting is skipped past this many changed lines or this much time.
const INLINE_LINES: usize = 2_000;
pub const INLINE_BUDGET: Duration = Duration::from_millis(100);
/// Texts longer than this, or with a line break, get a line diff.
const SHORT_TEXT: usize = 80;
/// A structural diff names at most this many pointers; the rest is counted.
const MAX_POINTERS: usize = 1_000;

/// How the value at one JSON pointer changed.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct ValueChange {
    pub path: String,
    pub diff: ValueDiff,
}

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ValueDiff {
    Scalar {
        before: String,
        after: String,
    },
    Text {
        lines: Vec<DiffLine>,
        /// True when the deadline cut the diff short: whole lines only, no word highlights.
        coarse: bool,
    },
    Json {
        entries: Vec<JsonChange>,
        /// Pointers that differ beyond the ones listed.
        omitted: u32,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct DiffLine {
    /// `equal`, `delete` or `insert`.
    pub tag: String,
    pub old_line: Option<u32>,
    pub new_line: Option<u32>,
    pub segments: Vec<Segment>,
}

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct Segment {
    pub text: String,
    /// The words that changed within a changed line.
    pub emphasized: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct JsonChange {
    pub pointer: String,
    /// `added`, `removed` or `changed`.
    pub change: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn is_long(s: &str) -> bool {
    s.len() > SHORT_TEXT || s.contains('\n')
}

/// Time shared by every diff of one view: past it, texts are shown line by line, unhighlighted.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    until: Instant,
}

impl Budget {
    pub fn new(total: Duration) -> Budget {
        Budget {
            until: Instant::now() + total,
        }
    }

    /// Enough for one diff at its own deadlines.
    pub fn one() -> Budget {
        Budget::new(LINE_DEADLINE + INLINE_BUDGET)
    }

    fn left(&self) -> Duration {
        self.until.saturating_duration_since(Instant::now())
    }
}

/// The diff of one change's `before` and `after`.
pub fn value_diff(before: &Value, after: &Value) -> ValueDiff {
    value_diff_within(before, after, &Budget::one())
}

/// [`value_diff`] within what is left of `budget`.
pub fn value_diff_within(before: &Value, after: &Value, budget: &Budget) -> ValueDiff {
    // An absent side (null) is an addition or a removal, not a change from or to "null".
    match (before.is_null(), after.is_null()) {
        (true, false) => return one_sided(after, "added", budget),
        (false, true) => return one_sided(before, "removed", budget),
        _ => {}
    }
    match (before, after) {
        (Value::String(a), Value::String(b)) if is_long(a) || is_long(b) => {
            text_diff_within(a, b, budget)
        }
        (Value::Object(_) | Value::Array(_), _) | (_, Value::Object(_) | Value::Array(_))
            if !before.is_null() && !after.is_null() =>
        {
            json_diff(before, after)
        }
        _ => ValueDiff::Scalar {
            before: text(before),
            after: text(after),
        },
    }
}

/// `value` appearing (`added`) or disappearing (`removed`) as a whole: every line or pointer of
/// it on its side, a scalar as one root entry.
fn one_sided(value: &Value, change: &str, budget: &Budget) -> ValueDiff {
    let added = change == "added";
    let empty = match value {
        Value::Object(_) => Some(Value::Object(Default::default())),
        Value::Array(_) => Some(Value::Array(Vec::new())),
        _ => None,
    };
    match (value, empty) {
        (Value::String(s), _) if is_long(s) => {
            if added {
                text_diff_within("", s, budget)
            } else {
                text_diff_within(s, "", budget)
            }
        }
        (_, Some(empty)) if added => json_diff(&empty, value),
        (_, Some(empty)) => json_diff(value, &empty),
        _ => ValueDiff::Json {
            entries: vec![JsonChange {
                pointer: String::new(),
                change: change.to_owned(),
                before: (!added).then(|| text(value)),
                after: added.then(|| text(value)),
            }],
            omitted: 0,
        },
    }
}

/// A line diff of two texts; word highlights inside changed lines while time and size allow.
pub fn text_diff(before: &str, after: &str) -> ValueDiff {
    text_diff_within(before, after, &Budget::one())
}

fn text_diff_within(before: &str, after: &str, budget: &Budget) -> ValueDiff {
    let started = Instant::now();
    let line_deadline = LINE_DEADLINE.min(budget.left());
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Patience)
        .timeout(line_deadline)
        .diff_lines(before, after);
    let changed = diff
        .iter_all_changes()
        .filter(|c| c.tag() != ChangeTag::Equal)
        .count();
    let inline_until = Instant::now() + INLINE_BUDGET.min(budget.left());
    let mut coarse = started.elapsed() >= line_deadline || changed > INLINE_LINES;
    let mut lines = Vec::new();
    for op in diff.ops() {
        if !coarse && Instant::now() < inline_until {
            for change in diff.iter_inline_changes_deadline(op, Some(inline_until)) {
                lines.push(DiffLine {
                    tag: tag(change.tag()),
                    old_line: change.old_index().map(|i| i as u32 + 1),
                    new_line: change.new_index().map(|i| i as u32 + 1),
                    segments: change
                        .iter_strings_lossy()
                        .map(|(emphasized, text)| Segment {
                            text: text.trim_end_matches('\n').to_owned(),
                            emphasized: emphasized && change.tag() != ChangeTag::Equal,
                        })
                        .filter(|s| !s.text.is_empty())
                        .collect(),
                });
            }
            continue;
        }
        coarse = true;
        for change in diff.iter_changes(op) {
            lines.push(DiffLine {
                tag: tag(change.tag()),
                old_line: change.old_index().map(|i| i as u32 + 1),
                new_line: change.new_index().map(|i| i as u32 + 1),
                segments: vec![Segment {
                    text: change.to_string_lossy().trim_end_matches('\n').to_owned(),
                    emphasized: false,
                }],
            });
        }
    }
    ValueDiff::Text { lines, coarse }
}

fn tag(tag: ChangeTag) -> String {
    match tag {
        ChangeTag::Equal => "equal",
        ChangeTag::Delete => "delete",
        ChangeTag::Insert => "insert",
    }
    .to_owned()
}

/// The JSON pointers at which `after` differs from `before`, in document order.
pub fn json_diff(before: &Value, after: &Value) -> ValueDiff {
    let mut entries = Vec::new();
    let mut omitted = 0u32;
    // An explicit stack: hostile nesting depth cannot overflow ours.
    let mut stack = vec![(String::new(), Some(before), Some(after))];
    while let Some((pointer, a, b)) = stack.pop() {
        let change = match (a, b) {
            (Some(Value::Object(x)), Some(Value::Object(y))) => {
                let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
                keys.sort_unstable();
                keys.dedup();
                for key in keys.into_iter().rev() {
                    let child = format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1"));
                    stack.push((child, x.get(key), y.get(key)));
                }
                continue;
            }
            (Some(Value::Array(x)), Some(Value::Array(y))) => {
                for i in (0..x.len().max(y.len())).rev() {
                    stack.push((format!("{pointer}/{i}"), x.get(i), y.get(i)));
                }
                continue;
            }
            (Some(x), Some(y)) if x == y => continue,
            (Some(x), Some(y)) => JsonChange {
                pointer,
                change: "changed".to_owned(),
                before: Some(text(x)),
                after: Some(text(y)),
            },
            (None, Some(y)) => JsonChange {
                pointer,
                change: "added".to_owned(),
                before: None,
                after: Some(text(y)),
            },
            (Some(x), None) => JsonChange {
                pointer,
                change: "removed".to_owned(),
                before: Some(text(x)),
                after: None,
            },
            (None, None) => continue,
        };
        if entries.len() < MAX_POINTERS {
            entries.push(change);
        } else {
            omitted = omitted.saturating_add(1);
        }
    }
    ValueDiff::Json { entries, omitted }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scalars_stay_side_by_side() {
        assert_eq!(
            value_diff(&json!(30), &json!(14)),
            ValueDiff::Scalar {
                before: "30".into(),
                after: "14".into()
            }
        );
    }

    #[test]
    fn an_absent_before_is_an_addition_not_a_change_from_null() {
        let added = |pointer: &str, after: &str| JsonChange {
            pointer: pointer.into(),
            change: "added".into(),
            before: None,
            after: Some(after.into()),
        };
        assert_eq!(
            value_diff(&Value::Null, &json!(14)),
            ValueDiff::Json {
                entries: vec![added("", "14")],
                omitted: 0
            }
        );
        assert_eq!(
            value_diff(&Value::Null, &json!({"a": 1})),
            ValueDiff::Json {
                entries: vec![added("/a", "1")],
                omitted: 0
            }
        );
        let ValueDiff::Text { lines, .. } = value_diff(&Value::Null, &json!("one\ntwo\n")) else {
            panic!("a text diff");
        };
        assert!(lines.iter().all(|l| l.tag == "insert"));
        let ValueDiff::Json { entries, .. } = value_diff(&json!("x"), &Value::Null) else {
            panic!("a removal");
        };
        assert_eq!(entries[0].change, "removed");
    }

    #[test]
    fn a_long_text_gets_lines_and_highlighted_words() {
        let before = "Keep artifacts for a month.\nReviewed quarterly.\n";
        let after = "Keep artifacts for two weeks.\nReviewed quarterly.\n";
        let ValueDiff::Text { lines, coarse } = value_diff(&json!(before), &json!(after)) else {
            panic!("a text diff");
        };
        assert!(!coarse);
        let tags: Vec<&str> = lines.iter().map(|l| l.tag.as_str()).collect();
        assert_eq!(tags, ["delete", "insert", "equal"]);
        let emphasized: Vec<&str> = lines[1]
            .segments
            .iter()
            .filter(|s| s.emphasized)
            .map(|s| s.text.as_str())
            .collect();
        assert_eq!(emphasized, ["two", "weeks."]);
        assert_eq!(lines[2].old_line, Some(2));
        assert_eq!(lines[2].new_line, Some(2));
    }

    #[test]
    fn nested_json_lists_the_pointers_that_differ() {
        let before = json!({"a": {"b": 1, "c": [1, 2]}, "d/e": true, "gone": 1});
        let after = json!({"a": {"b": 2, "c": [1, 2, 3]}, "d/e": true, "new": "x"});
        let ValueDiff::Json { entries, omitted } = value_diff(&before, &after) else {
            panic!("a structural diff");
        };
        assert_eq!(omitted, 0);
        let got: Vec<(&str, &str)> = entries
            .iter()
            .map(|e| (e.pointer.as_str(), e.change.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("/a/b", "changed"),
                ("/a/c/2", "added"),
                ("/gone", "removed"),
                ("/new", "added")
            ]
        );
    }

    #[test]
    fn hostile_depth_and_width_are_bounded() {
        let mut deep = json!(1);
        for _ in 0..120 {
            deep = json!([deep]);
        }
        let ValueDiff::Json { entries, .. } = json_diff(&deep, &json!([2])) else {
            panic!("a structural diff");
        };
        assert_eq!(entries.len(), 1);
        let wide: Vec<u32> = (0..5_000).collect();
        let ValueDiff::Json { entries, omitted } = json_diff(&json!([]), &json!(wide)) else {
            panic!("a structural diff");
        };
        assert_eq!((entries.len(), omitted), (1_000, 4_000));
    }

    #[test]
    fn a_pathological_text_falls_back_to_whole_lines() {
        let before: String = (0..30_000).map(|i| format!("line {i}\n")).collect();
        let after: String = (0..30_000)
            .map(|i| format!("line {}\n", i * 7 % 30_011))
            .collect();
        let ValueDiff::Text { lines, coarse } = text_diff(&before, &after) else {
            panic!("a text diff");
        };
        assert!(coarse);
        assert!(lines
            .iter()
            .all(|l| l.segments.iter().all(|s| !s.emphasized)));
    }
}
