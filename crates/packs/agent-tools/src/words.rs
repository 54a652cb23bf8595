//! A shell command cut into simple commands and words, as far as its text shows them: quotes
//! taken off (`'…'`, `"…"`, `$'…'` with its escapes), comments dropped, substitutions (`$(…)`,
//! backticks, inside double quotes too) read as commands of their own, output redirects'
//! targets set apart. What it cannot read to the end (a here-document, whose lines the shell
//! does not run as they stand; an unclosed quote) it says, and the reader trusts none of it.

/// The command's simple commands, its redirect targets, and why it could not all be read.
#[derive(Debug, Default, PartialEq)]
pub struct Split {
    pub segments: Vec<Vec<String>>,
    pub redirects: Vec<String>,
    pub unread: Vec<&'static str>,
}

#[derive(Clone, Copy, PartialEq)]
enum Quote {
    Single,
    Double,
    /// `$'…'`: backslash escapes, a quote ends it.
    AnsiC,
}

pub fn split(command: &str) -> Split {
    let mut words = Words::default();
    let mut quote: Option<Quote> = None;
    // Open substitutions: what closes each, the quote to resume and the command to go on with.
    let mut open: Vec<(char, Option<Quote>, usize)> = Vec::new();
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        let substitution = match (quote, c) {
            (None | Some(Quote::Double), '$') if chars.peek() == Some(&'(') => {
                chars.next();
                Some('(')
            }
            (None | Some(Quote::Double), '`') => Some('`'),
            (None, ')') if open.last().is_some_and(|o| o.0 == ')') => Some(')'),
            _ => None,
        };
        if let Some(seen) = substitution {
            words.end();
            match open.last() {
                Some(&(close, resume, outer)) if close == seen => {
                    open.pop();
                    quote = resume;
                    words.current = outer;
                }
                _ => {
                    open.push((if seen == '(' { ')' } else { '`' }, quote, words.current));
                    quote = None;
                    words.begin();
                }
            }
            continue;
        }
        match (quote, c) {
            (Some(Quote::Single), '\'') | (Some(Quote::Double), '"') => quote = None,
            (Some(Quote::AnsiC), '\'') => quote = None,
            (Some(Quote::Double | Quote::AnsiC) | None, '\\') => {
                if let Some(next) = chars.next() {
                    words.word.push(next);
                }
            }
            (Some(_), c) => words.word.push(c),
            (None, '\'') => {
                quote = Some(Quote::Single);
                words.quoted = true;
            }
            (None, '"') => {
                quote = Some(Quote::Double);
                words.quoted = true;
            }
            (None, '$') if chars.peek() == Some(&'\'') => {
                chars.next();
                quote = Some(Quote::AnsiC);
                words.quoted = true;
            }
            // A comment runs to the end of its line; the newline still ends the command.
            (None, '#') if words.word.is_empty() && !words.quoted => {
                while chars.peek().is_some_and(|n| *n != '\n') {
                    chars.next();
                }
            }
            (None, '<') if chars.peek() == Some(&'<') => {
                while chars.peek() == Some(&'<') {
                    chars.next();
                }
                words
                    .unread
                    .push("a here-document, whose lines are not read");
                words.end();
            }
            (None, '<') => words.end(),
            (None, '>') => {
                // `2>`: the descriptor is no word of the command.
                if !words.word.is_empty() && words.word.chars().all(|d| d.is_ascii_digit()) {
                    words.word.clear();
                }
                words.end();
                if chars.peek() == Some(&'>') {
                    chars.next();
                }
                if chars.peek() == Some(&'|') {
                    chars.next();
                }
                match chars.peek() {
                    // `>(…)`: a command the output goes to, read as one.
                    Some('(') => {}
                    // `>&1`, `>&-` copy a descriptor; `>&FILE` writes the file.
                    Some('&') => {
                        chars.next();
                        let mut descriptor = false;
                        while chars
                            .peek()
                            .is_some_and(|d| d.is_ascii_digit() || *d == '-')
                        {
                            chars.next();
                            descriptor = true;
                        }
                        let ended = chars
                            .peek()
                            .is_none_or(|n| n.is_whitespace() || ";&|()".contains(*n));
                        words.redirect_next = !(descriptor && ended);
                    }
                    _ => words.redirect_next = true,
                }
            }
            (None, ';' | '&' | '|' | '\n' | '(' | ')') => {
                words.end();
                words.redirect_next = false;
                words.begin();
            }
            (None, c) if c.is_whitespace() => words.end(),
            (None, c) => words.word.push(c),
        }
    }
    if quote.is_some() || !open.is_empty() {
        words.unread.push("an unclosed quote or substitution");
    }
    words.end();
    words.segments.retain(|s| !s.is_empty());
    Split {
        segments: words.segments,
        redirects: words.redirects,
        unread: words.unread,
    }
}

/// The words read so far, and the simple command the next one belongs to.
#[derive(Default)]
struct Words {
    segments: Vec<Vec<String>>,
    current: usize,
    redirects: Vec<String>,
    unread: Vec<&'static str>,
    word: String,
    quoted: bool,
    redirect_next: bool,
}

impl Words {
    /// Ends the word being read (an empty one only if it was quoted: `""`).
    fn end(&mut self) {
        if self.word.is_empty() && !self.quoted {
            return;
        }
        let word = std::mem::take(&mut self.word);
        self.quoted = false;
        if std::mem::take(&mut self.redirect_next) {
            self.redirects.push(word);
        } else {
            if self.segments.is_empty() {
                self.segments.push(Vec::new());
            }
            self.segments[self.current].push(word);
        }
    }

    /// Starts a simple command.
    fn begin(&mut self) {
        self.segments.push(Vec::new());
        self.current = self.segments.len() - 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(command: &str) -> Vec<Vec<String>> {
        split(command).segments
    }

    #[test]
    fn quotes_come_off_as_the_shell_takes_them() {
        assert_eq!(
            words("echo 'a b' \"c\\\"d\" $'e\\'f'"),
            [["echo", "a b", "c\"d", "e'f"]]
        );
        // Bash reads `$'\''` as one quote: the `rm` between two of them runs.
        assert_eq!(
            words("echo $'\\''; rm -rf ~; echo $'\\''"),
            [vec!["echo", "'"], vec!["rm", "-rf", "~"], vec!["echo", "'"]]
        );
    }

    #[test]
    fn a_comment_hides_nothing_past_its_line() {
        assert_eq!(
            words("echo hi # ' quoted?\nrm -rf ~ # '"),
            [vec!["echo", "hi"], vec!["rm", "-rf", "~"]]
        );
        assert_eq!(words("echo a#b"), [["echo", "a#b"]]);
    }

    #[test]
    fn what_cannot_be_read_to_its_end_says_so() {
        assert!(!split("cat <<'X'\necho '\nX\nrm -rf ~ # '")
            .unread
            .is_empty());
        assert!(!split("echo 'open").unread.is_empty());
        assert!(split("echo 'closed' $(ls)").unread.is_empty());
    }

    #[test]
    fn redirects_name_their_files_and_not_their_descriptors() {
        assert_eq!(split("cat a 2>&1 >/dev/null").redirects, ["/dev/null"]);
        assert_eq!(split("echo x >& ~/.bashrc").redirects, ["~/.bashrc"]);
        assert_eq!(split("echo x >&/etc/x").redirects, ["/etc/x"]);
        let through = split("cat x >(rm -rf ~)");
        assert!(through.redirects.is_empty());
        assert!(through
            .segments
            .contains(&vec!["rm".into(), "-rf".into(), "~".into()]));
        // A redirect with no target before a separator takes nothing after it.
        assert_eq!(split("echo >; rm x").segments[1], ["rm", "x"]);
    }
}
