//! The terminal's yes before a signature: what the console asks a native dialog for in the
//! desktop app.

use std::io::BufRead as _;

use countersign_console::Confirm;

use crate::style;

/// Risky plans are approved on purpose: `--yes`, or a yes on the terminal to the consequence.
pub struct Prompt {
    pub yes: bool,
}

impl Confirm for Prompt {
    fn confirm(&self, title: &str, consequence: &str, lines: &[String]) -> bool {
        if self.yes {
            return true;
        }
        let listed: String = lines
            .iter()
            .map(|l| format!("  {}\n", style::clean(l)))
            .collect();
        let consequence: Vec<String> = consequence.lines().map(style::clean).collect();
        eprint!(
            "{}\n{}{} [y/N] ",
            style::clean(title),
            listed,
            consequence.join("\n")
        );
        let mut answer = String::new();
        if std::io::stdin().lock().read_line(&mut answer).is_err() {
            return false;
        }
        let answer = answer.trim();
        answer.eq_ignore_ascii_case("y") || answer.eq_ignore_ascii_case("yes")
    }
}
