//! An upstream as the operator names it: `NAME=COMMAND` or `NAME=URL`.

use std::fmt;

/// One `--mcp-upstream` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    pub name: String,
    pub target: Target,
}

#[derive(Clone, PartialEq, Eq)]
pub enum Target {
    /// A command line run by `sh -c`, speaking MCP on its stdin and stdout.
    Command(String),
    /// A streamable HTTP endpoint; its bearer token, if any, from the environment.
    Http { url: String, token: Option<String> },
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Command(command) => write!(f, "Command({command:?})"),
            Target::Http { url, token } => {
                let token = token.as_ref().map(|_| "***");
                write!(f, "Http {{ url: {url:?}, token: {token:?} }}")
            }
        }
    }
}

impl Spec {
    /// Reads `NAME=COMMAND` or `NAME=URL`; `token` answers the environment variable that holds
    /// an HTTP upstream's bearer token (`COUNTERSIGN_MCP_<NAME>_TOKEN`).
    pub fn parse(text: &str, token: impl Fn(&str) -> Option<String>) -> Result<Spec, String> {
        let Some((name, target)) = text.split_once('=') else {
            return Err(format!(
                "{text:?} is not NAME=COMMAND or NAME=URL (files='npx -y @modelcontextprotocol/server-filesystem /srv/docs')"
            ));
        };
        let valid = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_';
        if name.is_empty() || name.len() > 32 || !name.chars().all(valid) {
            return Err(format!(
                "the upstream name {name:?} must be 1 to 32 of a-z, 0-9, - and _ (it prefixes \
                 its tools' capability ids)"
            ));
        }
        let target = target.trim();
        if target.is_empty() {
            return Err(format!("the upstream {name} has no command or URL"));
        }
        let target = if target.starts_with("https://") || target.starts_with("http://") {
            Target::Http {
                url: target.to_owned(),
                token: token(&token_variable(name)),
            }
        } else {
            Target::Command(target.to_owned())
        };
        Ok(Spec {
            name: name.to_owned(),
            target,
        })
    }
}

/// The environment variable holding the bearer token of the HTTP upstream `name`.
pub fn token_variable(name: &str) -> String {
    format!(
        "COUNTERSIGN_MCP_{}_TOKEN",
        name.to_ascii_uppercase().replace('-', "_")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_or_a_url_under_a_name_that_can_prefix_capability_ids() {
        let none = |_: &str| None;
        assert_eq!(
            Spec::parse("files=npx -y server /srv/docs", none).unwrap(),
            Spec {
                name: "files".into(),
                target: Target::Command("npx -y server /srv/docs".into())
            }
        );
        let token = |var: &str| (var == "COUNTERSIGN_MCP_MY_TRACKER_TOKEN").then(|| "t0k".into());
        let http = Spec::parse("my-tracker=https://mcp.example/mcp", token).unwrap();
        assert_eq!(
            http.target,
            Target::Http {
                url: "https://mcp.example/mcp".into(),
                token: Some("t0k".into())
            }
        );
        assert!(!format!("{http:?}").contains("t0k"));
        for bad in [
            "files",
            "=cmd",
            "Files=cmd",
            "a.b=cmd",
            "files=  ",
            &format!("{}=x", "a".repeat(33)),
        ] {
            assert!(Spec::parse(bad, none).is_err(), "{bad}");
        }
    }
}
