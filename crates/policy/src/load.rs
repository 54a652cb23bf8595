//! Reading a policy directory: its `.rego` files (in subdirectories too, in path order) and an
//! optional `data.json`, each refused with its file, line and message.

use std::path::{Path, PathBuf};

use thiserror::Error;

/// A policy's text: its modules by path relative to the directory, and its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sources {
    pub modules: Vec<(String, String)>,
    pub data: Option<String>,
}

/// Why a policy did not load.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum LoadError {
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    #[error("{file}:{line}: {message}")]
    Syntax {
        file: String,
        line: u32,
        message: String,
    },
    #[error("{0}")]
    Contract(String),
}

impl Sources {
    /// The `.rego` files under `dir` and its `data.json`.
    pub fn read(dir: &Path) -> Result<Sources, LoadError> {
        let io = |path: &Path, e: std::io::Error| LoadError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        let mut files = Vec::new();
        collect(dir, &mut files).map_err(|e| io(dir, e))?;
        files.sort();
        let mut modules = Vec::with_capacity(files.len());
        for file in files {
            let text = std::fs::read_to_string(&file).map_err(|e| io(&file, e))?;
            let name = file
                .strip_prefix(dir)
                .unwrap_or(&file)
                .to_string_lossy()
                .replace('\\', "/");
            modules.push((name, text));
        }
        if modules.is_empty() {
            return Err(LoadError::Contract(format!(
                "{}: no .rego file: a policy needs package countersign.approval with its rules",
                dir.display()
            )));
        }
        let data_path = dir.join("data.json");
        let data = match std::fs::read_to_string(&data_path) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io(&data_path, e)),
        };
        Ok(Sources { modules, data })
    }

    /// The file and line where `"id"` is written, the first place in path order.
    pub fn locate(&self, id: &str) -> Option<(String, u32)> {
        let quoted = format!("\"{id}\"");
        self.modules.iter().find_map(|(file, text)| {
            let line = text.lines().position(|l| l.contains(&quoted))?;
            Some((file.clone(), line as u32 + 1))
        })
    }

    /// Every `test_…` rule and its package, from the rule heads at the start of a line.
    pub fn tests(&self) -> Vec<(String, String)> {
        let mut tests = Vec::new();
        for (_, text) in &self.modules {
            let mut package = None;
            for line in text.lines() {
                if let Some(rest) = line.strip_prefix("package ") {
                    package = Some(rest.trim().to_owned());
                }
                let Some(package) = &package else { continue };
                let name: String = line
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if name.starts_with("test_") && !tests.contains(&(package.clone(), name.clone())) {
                    tests.push((package.clone(), name));
                }
            }
        }
        tests
    }
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect(&path, files)?;
        } else if path.extension().is_some_and(|e| e == "rego") {
            files.push(path);
        }
    }
    Ok(())
}

/// regorus's parse error (`--> file:line:col`, the source line, `error: message`) as one line.
pub(crate) fn syntax(file: &str, error: &str) -> LoadError {
    let line = error
        .lines()
        .find_map(|l| l.trim().strip_prefix("-->"))
        .and_then(|at| at.trim().rsplit(':').nth(1)?.parse().ok())
        .unwrap_or(0);
    let message = error
        .lines()
        .find_map(|l| l.trim().strip_prefix("error:"))
        .unwrap_or(error)
        .trim()
        .to_owned();
    LoadError::Syntax {
        file: file.to_owned(),
        line,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parse_error_is_one_line_with_file_and_line() {
        let regorus = "\n--> bad.rego:5:1\n  |\n5 | }\n  | ^\nerror: expecting expression";
        assert_eq!(
            syntax("bad.rego", regorus).to_string(),
            "bad.rego:5: expecting expression"
        );
    }

    #[test]
    fn rego_files_are_read_in_path_order_with_data() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("teams")).unwrap();
        std::fs::write(dir.path().join("teams/b.rego"), "package b\n").unwrap();
        std::fs::write(dir.path().join("a.rego"), "package a\ntest_x if true\n").unwrap();
        std::fs::write(dir.path().join("notes.md"), "not a policy").unwrap();
        std::fs::write(dir.path().join("data.json"), "{}").unwrap();
        let sources = Sources::read(dir.path()).unwrap();
        let names: Vec<&str> = sources.modules.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a.rego", "teams/b.rego"]);
        assert_eq!(sources.data.as_deref(), Some("{}"));
        assert_eq!(sources.tests(), [("a".to_owned(), "test_x".to_owned())]);
    }

    #[test]
    fn a_directory_without_rego_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = Sources::read(dir.path()).unwrap_err();
        assert!(err.to_string().contains("no .rego file"), "{err}");
    }
}
