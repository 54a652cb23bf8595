//! Text for a terminal: ANSI styling (only for a terminal, only without `NO_COLOR`), and the
//! cleaning that keeps gateway- and agent-written text from acting on the terminal.

use std::io::IsTerminal as _;

/// ANSI styling, only for a terminal and only without `NO_COLOR`.
pub struct Style(bool);

impl Style {
    pub fn detect() -> Style {
        Style(std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none())
    }

    #[cfg(test)]
    pub fn plain() -> Style {
        Style(false)
    }

    /// Marks `text` for styling; [`finish`] turns the marks into escape codes.
    fn paint(&self, code: &str, text: &str) -> String {
        if self.0 {
            format!("{OPEN}{code}{CLOSE}{text}{OPEN}0{CLOSE}")
        } else {
            text.to_owned()
        }
    }

    pub fn red(&self, t: &str) -> String {
        self.paint("31", t)
    }
    pub fn green(&self, t: &str) -> String {
        self.paint("32", t)
    }
    pub fn yellow(&self, t: &str) -> String {
        self.paint("33", t)
    }
    pub fn bold(&self, t: &str) -> String {
        self.paint("1", t)
    }
    pub fn dim(&self, t: &str) -> String {
        self.paint("2", t)
    }
    pub fn emphasis(&self, t: &str) -> String {
        self.paint("7", t)
    }
}

/// Style marks: private-use characters that [`clean`] removes from any text it is given.
const OPEN: char = '\u{E000}';
const CLOSE: char = '\u{E001}';

pub use countersign_console::text::hidden;

/// Gateway- and agent-written text as one terminal line: no control characters, no line breaks,
/// no bidirectional tricks, no style marks.
pub fn clean(text: &str) -> String {
    text.chars()
        .filter(|c| !hidden(*c) && *c != OPEN && *c != CLOSE)
        .map(|c| if c.is_control() { '\u{FFFD}' } else { c })
        .collect()
}

/// The last pass over everything printed: whatever escaped [`clean`] cannot reach the terminal
/// as a control sequence; then the style marks become escape codes.
pub fn finish(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            OPEN => {
                let code: String = chars.by_ref().take_while(|c| *c != CLOSE).collect();
                if code.chars().all(|c| c.is_ascii_digit()) {
                    out.push_str(&format!("\x1b[{code}m"));
                }
            }
            CLOSE => {}
            c if hidden(c) => {}
            c if c.is_control() && c != '\n' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_text_cannot_drive_the_terminal() {
        let hostile = "ok\x1b[2J\x1b]0;pwned\x07\nfake line \u{202E}txt.exe\u{E000}31\u{E001}";
        let line = clean(hostile);
        assert!(!line.contains('\x1b') && !line.contains('\n') && !line.contains('\u{202E}'));
        let painted = Style(true).red(&line);
        let shown = finish(&format!("{painted}\n{hostile}"));
        // Every escape left is a style (ESC [ digits m): no clearing, titles or cursor moves.
        for escape in shown.split('\x1b').skip(1) {
            let code = escape
                .strip_prefix('[')
                .and_then(|e| e.split_once('m'))
                .map(|(c, _)| c);
            assert!(
                code.is_some_and(|c| c.chars().all(|c| c.is_ascii_digit())),
                "{shown:?}"
            );
        }
        assert!(shown.starts_with("\x1b[31mok"));
        assert!(!shown.contains('\u{202E}') && !shown.contains('\x07'));
    }
}
