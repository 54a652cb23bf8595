//! What a coding agent's file tools make of a file: `Write`, `Edit` and `MultiEdit` as the whole
//! text after, `NotebookEdit` as the one cell's source before and after. The text before is the
//! one the agent's hook read and sent with the request (`files`), since the gateway cannot read
//! the agent's machine; the tools' rules are Claude Code's (an edit's `old_string` must occur
//! exactly once unless `replace_all`).

use serde::Deserialize;
use serde_json::Value;

/// Why a tool call cannot do what it asks, as a blocker says it.
#[derive(Debug, PartialEq)]
pub struct Refusal {
    pub code: &'static str,
    pub message: String,
    pub repair: &'static str,
}

fn refuse(code: &'static str, message: String, repair: &'static str) -> Refusal {
    Refusal {
        code,
        message,
        repair,
    }
}

#[derive(Deserialize)]
pub struct Edit {
    pub old_string: String,
    pub new_string: String,
    #[serde(default)]
    pub replace_all: bool,
}

/// `before` with each edit applied in order, as `Edit` (one) and `MultiEdit` (several) do.
pub fn edit(path: &str, before: Option<&str>, edits: &[Edit]) -> Result<String, Refusal> {
    let Some(before) = before else {
        return Err(refuse(
            "file_not_found",
            format!("{path} does not exist: there is nothing to edit."),
            "Write the file instead, or edit a file that exists.",
        ));
    };
    let mut text = before.to_owned();
    for (n, e) in edits.iter().enumerate() {
        let which = if edits.len() > 1 {
            format!("edit {} of {}", n + 1, edits.len())
        } else {
            "the edit".to_owned()
        };
        if e.old_string == e.new_string {
            return Err(refuse(
                "edit_changes_nothing",
                format!("In {path}, {which} replaces a text with itself."),
                "Give the edit a new_string that differs from its old_string.",
            ));
        }
        let found = if e.old_string.is_empty() {
            0
        } else {
            text.matches(&e.old_string).count()
        };
        match found {
            0 => {
                return Err(refuse(
                    "edit_not_found",
                    format!("In {path}, {which} finds no text to replace."),
                    "Read the file again and edit the text it holds now.",
                ))
            }
            1 => text = text.replacen(&e.old_string, &e.new_string, 1),
            _ if e.replace_all => text = text.replace(&e.old_string, &e.new_string),
            n => {
                return Err(refuse(
                    "edit_not_unique",
                    format!("In {path}, {which} matches {n} places; it must match one."),
                    "Give more of the surrounding text, or set replace_all.",
                ))
            }
        }
    }
    Ok(text)
}

/// A notebook cell's source before and after an edit, and where it stands.
#[derive(Debug, PartialEq)]
pub struct CellChange {
    /// `/cells/ID/source`, or `/cells/new/source` for a cell inserted.
    pub path: String,
    pub before: Option<String>,
    pub after: Option<String>,
    pub description: String,
}

#[derive(Deserialize)]
pub struct NotebookEdit {
    pub notebook_path: String,
    pub new_source: Option<String>,
    pub cell_id: Option<String>,
    #[serde(default)]
    pub edit_mode: Option<String>,
}

/// What `NotebookEdit` does to the notebook whose text is `before`.
pub fn notebook(before: Option<&str>, e: &NotebookEdit) -> Result<CellChange, Refusal> {
    let path = &e.notebook_path;
    let Some(before) = before else {
        return Err(refuse(
            "file_not_found",
            format!("{path} does not exist: there is no notebook to edit."),
            "Edit a notebook that exists.",
        ));
    };
    let book: Value = serde_json::from_str(before).map_err(|_| {
        refuse(
            "notebook_unreadable",
            format!("{path} is not a notebook: its text is not JSON."),
            "Edit it as a text file instead.",
        )
    })?;
    let cells = book["cells"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let source = |cell: &Value| match &cell["source"] {
        Value::String(s) => s.clone(),
        Value::Array(lines) => lines.iter().filter_map(Value::as_str).collect(),
        _ => String::new(),
    };
    let cell = |id: &str| cells.iter().find(|c| c["id"].as_str() == Some(id));
    let mode = e.edit_mode.as_deref().unwrap_or("replace");
    let missing = |id: &str| {
        refuse(
            "cell_not_found",
            format!("{path} has no cell {id}."),
            "Read the notebook again and name a cell it holds.",
        )
    };
    match (mode, e.cell_id.as_deref()) {
        ("insert", after) => {
            if let Some(id) = after {
                cell(id).ok_or_else(|| missing(id))?;
            }
            Ok(CellChange {
                path: "/cells/new/source".to_owned(),
                before: None,
                after: Some(e.new_source.clone().unwrap_or_default()),
                description: match after {
                    Some(id) => format!("Inserts a cell after cell {id} of {path}."),
                    None => format!("Inserts a cell at the top of {path}."),
                },
            })
        }
        ("replace" | "delete", Some(id)) => {
            let was = source(cell(id).ok_or_else(|| missing(id))?);
            let delete = mode == "delete";
            Ok(CellChange {
                path: format!("/cells/{id}/source"),
                before: Some(was),
                after: if delete {
                    None
                } else {
                    Some(e.new_source.clone().unwrap_or_default())
                },
                description: if delete {
                    format!("Deletes cell {id} of {path}.")
                } else {
                    format!("Replaces the source of cell {id} of {path}.")
                },
            })
        }
        ("replace" | "delete", None) => Err(refuse(
            "cell_not_named",
            format!("The edit of {path} names no cell."),
            "Name the cell to change with cell_id.",
        )),
        (other, _) => Err(refuse(
            "edit_mode_unknown",
            format!("NotebookEdit has no edit_mode {other}."),
            "Use replace, insert or delete.",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(old: &str, new: &str, all: bool) -> Vec<Edit> {
        vec![Edit {
            old_string: old.into(),
            new_string: new.into(),
            replace_all: all,
        }]
    }

    #[test]
    fn an_edit_replaces_exactly_one_place_unless_told_all() {
        let text = Some("a b a");
        assert_eq!(
            edit("f", Some("a b"), &one("b", "c", false)),
            Ok("a c".into())
        );
        assert_eq!(edit("f", text, &one("a", "x", true)), Ok("x b x".into()));
        assert_eq!(
            edit("f", text, &one("a", "x", false)).unwrap_err().code,
            "edit_not_unique"
        );
        assert_eq!(
            edit("f", text, &one("z", "x", false)).unwrap_err().code,
            "edit_not_found"
        );
        assert_eq!(
            edit("f", None, &one("a", "x", false)).unwrap_err().code,
            "file_not_found"
        );
        assert_eq!(
            edit("f", text, &one("", "x", false)).unwrap_err().code,
            "edit_not_found"
        );
    }

    #[test]
    fn several_edits_apply_in_order_each_to_the_text_the_last_left() {
        let edits = [one("a", "b", false), one("b b", "c", false)].map(|mut e| e.remove(0));
        assert_eq!(edit("f", Some("a b"), &edits), Ok("c".into()));
    }

    #[test]
    fn a_notebook_cell_is_shown_by_its_source() {
        let book =
            r#"{"cells": [{"id": "c1", "cell_type": "code", "source": ["x = 1\n", "y = 2"]}]}"#;
        let e = |mode: &str, id: Option<&str>| NotebookEdit {
            notebook_path: "n.ipynb".into(),
            new_source: Some("x = 3".into()),
            cell_id: id.map(Into::into),
            edit_mode: Some(mode.into()),
        };
        let replaced = notebook(Some(book), &e("replace", Some("c1"))).unwrap();
        assert_eq!(replaced.before.as_deref(), Some("x = 1\ny = 2"));
        assert_eq!(replaced.after.as_deref(), Some("x = 3"));
        assert_eq!(
            notebook(Some(book), &e("delete", Some("c1")))
                .unwrap()
                .after,
            None
        );
        assert_eq!(
            notebook(Some(book), &e("insert", None)).unwrap().before,
            None
        );
        assert_eq!(
            notebook(Some(book), &e("replace", Some("c9")))
                .unwrap_err()
                .code,
            "cell_not_found"
        );
        assert_eq!(
            notebook(Some("not json"), &e("replace", Some("c1")))
                .unwrap_err()
                .code,
            "notebook_unreadable"
        );
    }
}
