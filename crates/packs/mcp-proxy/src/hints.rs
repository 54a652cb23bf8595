//! A tool's annotations read as the MCP specification reads them: hints, with its defaults
//! where a hint is absent (not read-only, destructive, open-world).

use rmcp::model::ToolAnnotations;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hints {
    pub read_only: bool,
    pub destructive: bool,
    pub open_world: bool,
    /// The tool declared no annotations at all: every hint above is the default.
    pub declared: bool,
}

impl Hints {
    pub fn of(annotations: Option<&ToolAnnotations>) -> Hints {
        let Some(a) = annotations else {
            return Hints {
                read_only: false,
                destructive: true,
                open_world: true,
                declared: false,
            };
        };
        let read_only = a.read_only_hint.unwrap_or(false);
        Hints {
            read_only,
            // The specification: destructiveHint is meaningful only when readOnlyHint is false.
            destructive: !read_only && a.destructive_hint.unwrap_or(true),
            open_world: a.open_world_hint.unwrap_or(true),
            declared: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_hints_take_the_specifications_defaults() {
        assert_eq!(
            Hints::of(None),
            Hints {
                read_only: false,
                destructive: true,
                open_world: true,
                declared: false
            }
        );
        let mut only_read = ToolAnnotations::default();
        only_read.read_only_hint = Some(true);
        let read = Hints::of(Some(&only_read));
        assert!(read.read_only && !read.destructive && read.open_world && read.declared);
        let mut commit = ToolAnnotations::default();
        commit.read_only_hint = Some(false);
        commit.destructive_hint = Some(false);
        commit.open_world_hint = Some(false);
        let commit = Hints::of(Some(&commit));
        assert!(!commit.read_only && !commit.destructive && !commit.open_world);
    }
}
