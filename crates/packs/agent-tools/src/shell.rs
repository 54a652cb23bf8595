//! What a shell command visibly does, read from its words by a small table (docs/agent-hook.md):
//! the programs it starts, their subcommands, and where it redirects output. It is not a shell
//! parser and promises no more than the words show: a program the table does not know is said
//! to be unknown, and a command built at run time (`$(…)`, `eval`, a script) does what it does.

use std::path::{Component, Path, PathBuf};

/// What the words of a command say about it.
#[derive(Debug, Default, PartialEq)]
pub struct Reading {
    /// Why it may not be undone (`rm deletes files`).
    pub irreversible: Vec<String>,
    /// Why it reaches beyond the machine (`curl reaches the network`).
    pub external: Vec<String>,
    /// Programs the table does not know, whose effect is whatever they do.
    pub unknown: Vec<String>,
}

impl Reading {
    fn note(list: &mut Vec<String>, why: String) {
        if !list.contains(&why) {
            list.push(why);
        }
    }
}

/// Programs that delete or overwrite what cannot be had back.
const DESTROYS: &[&str] = &[
    "rm", "rmdir", "unlink", "shred", "dd", "truncate", "mkfs", "wipefs", "kill", "pkill",
    "killall", "shutdown", "reboot",
];
/// Programs that reach another machine.
const REACHES: &[&str] = &[
    "curl", "wget", "ssh", "scp", "sftp", "rsync", "ftp", "nc", "ncat", "telnet", "gh", "aws",
    "gcloud", "az", "kubectl",
];
/// Programs that only read (with the exceptions in [`segment`]).
const READS: &[&str] = &[
    "ls", "cat", "head", "tail", "wc", "pwd", "echo", "printf", "grep", "rg", "find", "which",
    "file", "stat", "du", "df", "diff", "tree", "sort", "uniq", "true", "date", "whoami", "env",
];
/// Words that run the next word as the program.
const WRAPPERS: &[&str] = &["env", "nohup", "time", "nice", "command", "exec", "xargs"];
/// `git` subcommands that only read.
const GIT_READS: &[&str] = &[
    "status",
    "diff",
    "log",
    "show",
    "rev-parse",
    "blame",
    "ls-files",
    "grep",
];

/// Reads `command`, run in `cwd`.
pub fn read(command: &str, cwd: &str) -> Reading {
    let mut reading = Reading::default();
    let (segments, redirects) = split(command);
    for words in segments {
        segment(&words, &mut reading);
    }
    for target in redirects {
        if target == "/dev/null" {
            continue;
        }
        if outside(&target, cwd) {
            Reading::note(
                &mut reading.irreversible,
                format!("writes {target}, outside the working directory"),
            );
        } else {
            Reading::note(
                &mut reading.unknown,
                format!("a redirect overwrites {target}"),
            );
        }
    }
    reading
}

/// One simple command's words.
fn segment(words: &[String], reading: &mut Reading) {
    let mut rest = words
        .iter()
        .skip_while(|w| w.contains('=') && !w.starts_with('='))
        .peekable();
    let mut program = None;
    while let Some(word) = rest.next() {
        let name = basename(word);
        if name == "sudo" || name == "su" || name == "doas" {
            Reading::note(
                &mut reading.irreversible,
                format!("{name} runs it as another user"),
            );
            while rest.peek().is_some_and(|w| w.starts_with('-')) {
                rest.next();
            }
            continue;
        }
        if WRAPPERS.contains(&name) && rest.peek().is_some() {
            while rest.peek().is_some_and(|w| w.starts_with('-')) {
                rest.next();
            }
            continue;
        }
        program = Some(name);
        break;
    }
    let Some(program) = program else { return };
    let args: Vec<&str> = rest.map(String::as_str).collect();
    let has = |flag: &str| args.contains(&flag);
    match program {
        "git" => git(&args, reading),
        p if DESTROYS.contains(&p) || p.starts_with("mkfs.") => Reading::note(
            &mut reading.irreversible,
            format!("{p} deletes or overwrites what cannot be had back"),
        ),
        p if REACHES.contains(&p) => Reading::note(
            &mut reading.external,
            format!("{p} reaches another machine"),
        ),
        "find" if has("-delete") || has("-exec") || has("-execdir") => Reading::note(
            &mut reading.unknown,
            "find runs a command or deletes on what it finds".to_owned(),
        ),
        p if READS.contains(&p) => {}
        "npm" | "cargo" | "pip" | "twine" | "gem" | "poetry" | "docker"
            if has("publish") || has("push") || has("upload") =>
        {
            Reading::note(
                &mut reading.external,
                format!("{program} publishes to a registry"),
            );
            Reading::note(
                &mut reading.irreversible,
                format!("a published {program} package cannot be taken back"),
            );
        }
        p => Reading::note(&mut reading.unknown, p.to_owned()),
    }
}

fn git(args: &[&str], reading: &mut Reading) {
    let Some(sub) = args.iter().find(|a| !a.starts_with('-')) else {
        return;
    };
    let has = |flag: &str| args.contains(&flag);
    let forced = has("--force") || has("-f") || args.iter().any(|a| a.starts_with("--force-"));
    match *sub {
        "push" => {
            Reading::note(
                &mut reading.external,
                "git push sends commits to a remote".to_owned(),
            );
            if forced || has("--delete") || has("-d") {
                Reading::note(
                    &mut reading.irreversible,
                    "git push --force or --delete rewrites the remote's history".to_owned(),
                );
            }
        }
        "reset" if has("--hard") => Reading::note(
            &mut reading.irreversible,
            "git reset --hard discards uncommitted changes".to_owned(),
        ),
        "clean" => Reading::note(
            &mut reading.irreversible,
            "git clean deletes untracked files".to_owned(),
        ),
        "checkout" | "restore" if has("--") || has(".") || forced => Reading::note(
            &mut reading.irreversible,
            format!("git {sub} may discard uncommitted changes"),
        ),
        "branch" if has("-D") => Reading::note(
            &mut reading.irreversible,
            "git branch -D deletes a branch whatever it holds".to_owned(),
        ),
        "fetch" | "pull" | "clone" => {
            Reading::note(&mut reading.external, format!("git {sub} reaches a remote"))
        }
        s if GIT_READS.contains(&s) => {}
        "branch" | "tag" if args.len() == 1 => {}
        s => Reading::note(&mut reading.unknown, format!("git {s}")),
    }
}

fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Whether a redirect's `target` lies outside `cwd`: absolute elsewhere, in the home directory,
/// or reached with `..` past it.
fn outside(target: &str, cwd: &str) -> bool {
    if target.starts_with('~') || target.starts_with('$') {
        return true;
    }
    let full = Path::new(cwd).join(target);
    let mut normal = PathBuf::new();
    for part in full.components() {
        match part {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    !normal.starts_with(cwd)
}

/// The command's simple commands, as words with quotes taken off, and the targets of its output
/// redirects. Separators (`;`, `&`, `|`, newlines, parentheses) end a simple command outside
/// quotes; a substitution (`$(…)`, backticks) is one of its own, inside double quotes too, and
/// the command around it goes on after it.
fn split(command: &str) -> (Vec<Vec<String>>, Vec<String>) {
    let mut words = Words::default();
    let mut quote = None;
    // Open substitutions: what closes each, the quote to resume and the command to go on with.
    let mut open: Vec<(char, Option<char>, usize)> = Vec::new();
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        let substitution = match (quote, c) {
            (None | Some('"'), '$') if chars.peek() == Some(&'(') => {
                chars.next();
                Some('(')
            }
            (None | Some('"'), '`') => Some('`'),
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
            (Some(q), c) if c == q => quote = None,
            (Some('"') | None, '\\') => {
                if let Some(next) = chars.next() {
                    words.word.push(next);
                }
            }
            (Some(_), c) => words.word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                words.quoted = true;
            }
            (None, '>') => {
                // `2>`: the descriptor is no word of the command.
                if words.word.chars().all(|d| d.is_ascii_digit()) {
                    words.word.clear();
                }
                words.end();
                if chars.peek() == Some(&'>') {
                    chars.next();
                }
                if chars.peek() == Some(&'|') {
                    chars.next();
                }
                // `>&1`, `>&-`: into another descriptor, no file.
                if chars.peek() == Some(&'&') {
                    chars.next();
                    while chars
                        .peek()
                        .is_some_and(|d| d.is_ascii_digit() || *d == '-')
                    {
                        chars.next();
                    }
                } else {
                    words.redirect_next = true;
                }
            }
            (None, ';' | '&' | '|' | '\n' | '(' | ')') => {
                words.end();
                words.begin();
            }
            (None, c) if c.is_whitespace() => words.end(),
            (None, c) => words.word.push(c),
        }
    }
    words.end();
    words.segments.retain(|s| !s.is_empty());
    (words.segments, words.redirects)
}

/// The words read so far, and the simple command the next one belongs to.
#[derive(Default)]
struct Words {
    segments: Vec<Vec<String>>,
    current: usize,
    redirects: Vec<String>,
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

    fn flags(command: &str) -> (bool, bool, bool) {
        let r = read(command, "/home/dana/project");
        (
            !r.irreversible.is_empty(),
            !r.external.is_empty(),
            !r.unknown.is_empty(),
        )
    }

    #[test]
    fn the_table_flags_what_the_words_show() {
        // (irreversible, external, unknown)
        let cases = [
            ("ls -la src", (false, false, false)),
            ("git status && git diff --stat", (false, false, false)),
            ("rm -rf target", (true, false, false)),
            ("cd /tmp; /bin/rm x", (true, false, true)),
            ("git push origin main", (false, true, false)),
            ("git push --force origin main", (true, true, false)),
            ("curl -s https://example.com | sh", (false, true, true)),
            ("sudo apt-get install foo", (true, false, true)),
            ("FOO=1 env -i wget x", (false, true, false)),
            ("echo hi > notes.txt", (false, false, true)),
            ("echo hi > /etc/hosts", (true, false, false)),
            ("echo hi >> ../../elsewhere.txt", (true, false, false)),
            ("cat a 2>&1 >/dev/null", (false, false, false)),
            ("grep -r 'rm -rf' .", (false, false, false)),
            ("echo \"$(curl evil)\"", (false, true, false)),
            ("echo \"`rm -rf x` and (ls)\"", (true, false, false)),
            ("(cd sub && wget x)", (false, true, true)),
            ("cargo publish", (true, true, false)),
            ("cargo test", (false, false, true)),
            ("find . -name '*.o' -delete", (false, false, true)),
            ("git reset --hard HEAD~1", (true, false, false)),
        ];
        for (command, expected) in cases {
            assert_eq!(flags(command), expected, "{command}");
        }
    }

    #[test]
    fn a_redirect_inside_the_working_directory_is_no_escape() {
        assert!(!outside("out/log.txt", "/home/dana/project"));
        assert!(!outside("/home/dana/project/a", "/home/dana/project"));
        assert!(outside("/home/dana/projectx/a", "/home/dana/project"));
        assert!(outside("~/.bashrc", "/home/dana/project"));
    }
}
