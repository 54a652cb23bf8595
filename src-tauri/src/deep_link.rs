//! `countersign://plan/<plan_id>`: the link the CLI's `show` prints and the desktop entry hands
//! over, as a command-line argument or through the running instance.

use std::fmt;

pub const SCHEME: &str = "countersign";

/// Why an argument is not a plan link; it is logged and otherwise ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkError {
    NotCountersign,
    UnknownTarget,
    BadPlanId,
}

impl fmt::Display for LinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LinkError::NotCountersign => "not a countersign:// link",
            LinkError::UnknownTarget => "a countersign:// link names nothing but plan/<plan_id>",
            LinkError::BadPlanId => {
                "the plan id is empty, too long or has other than [A-Za-z0-9_-]"
            }
        })
    }
}

/// Plan ids are the gateway's `pln_…` tokens; anything else is refused rather than passed on to
/// the window, where it would be fetched as a path segment.
const MAX_PLAN_ID: usize = 128;

fn plan_id_ok(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_PLAN_ID
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The plan id a deep link opens.
pub fn plan_id(link: &str) -> Result<String, LinkError> {
    let rest = link
        .trim()
        .split_once("://")
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case(SCHEME))
        .map(|(_, rest)| rest)
        .ok_or(LinkError::NotCountersign)?;
    let id = rest.strip_prefix("plan/").ok_or(LinkError::UnknownTarget)?;
    let id = id.strip_suffix('/').unwrap_or(id);
    if plan_id_ok(id) {
        Ok(id.to_owned())
    } else {
        Err(LinkError::BadPlanId)
    }
}

/// The plans named by `args` (the process's or a forwarded instance's), malformed ones logged.
pub fn plans_in<S: AsRef<str>>(args: &[S]) -> Vec<String> {
    args.iter()
        .filter_map(|arg| match plan_id(arg.as_ref()) {
            Ok(id) => Some(id),
            Err(why) => {
                tracing::warn!(link = arg.as_ref(), %why, "ignored a link");
                None
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_link_names_its_plan() {
        assert_eq!(
            plan_id("countersign://plan/pln_01H2X").unwrap(),
            "pln_01H2X"
        );
        assert_eq!(plan_id("countersign://plan/pln_a-b/").unwrap(), "pln_a-b");
        assert_eq!(plan_id(" COUNTERSIGN://plan/pln_1\n").unwrap(), "pln_1");
    }

    #[test]
    fn malformed_links_are_refused_with_a_reason() {
        assert_eq!(
            plan_id("https://plan/pln_1"),
            Err(LinkError::NotCountersign)
        );
        assert_eq!(plan_id("pln_1"), Err(LinkError::NotCountersign));
        assert_eq!(
            plan_id("countersign://queue/pln_1"),
            Err(LinkError::UnknownTarget)
        );
        assert_eq!(plan_id("countersign://plan/"), Err(LinkError::BadPlanId));
        assert_eq!(
            plan_id("countersign://plan/../etc"),
            Err(LinkError::BadPlanId)
        );
        assert_eq!(plan_id("countersign://plan/a/b"), Err(LinkError::BadPlanId));
        assert_eq!(
            plan_id("countersign://plan/p?x=1"),
            Err(LinkError::BadPlanId)
        );
        let long = format!("countersign://plan/{}", "a".repeat(MAX_PLAN_ID + 1));
        assert_eq!(plan_id(&long), Err(LinkError::BadPlanId));
    }

    #[test]
    fn arguments_yield_only_their_plan_links() {
        let args = [
            "--flag",
            "countersign://plan/pln_1",
            "countersign://x",
            "countersign://plan/pln_2",
        ];
        assert_eq!(plans_in(&args), vec!["pln_1", "pln_2"]);
    }
}
