//! Approver names are shown to other approvers and in terminals: printable text of bounded length.

use unicode_general_category::{get_general_category, GeneralCategory};

/// Characters in a name, at most.
pub const MAX_NAME_CHARS: usize = 80;

/// `raw` trimmed, if it is 1 to [`MAX_NAME_CHARS`] characters with no control, format (bidi,
/// zero-width), separator-of-lines, private-use or unassigned characters; otherwise why not.
pub fn approver_name(raw: &str) -> Result<&str, String> {
    let name = raw.trim();
    let length = name.chars().count();
    if length == 0 || length > MAX_NAME_CHARS {
        return Err(format!(
            "an approver name is 1-{MAX_NAME_CHARS} characters, not {length}"
        ));
    }
    if let Some(c) = name.chars().find(|c| !printable(*c)) {
        return Err(format!(
            "an approver name is printable text: U+{:04X} is not allowed",
            u32::from(c)
        ));
    }
    Ok(name)
}

fn printable(c: char) -> bool {
    use GeneralCategory::*;
    !matches!(
        get_general_category(c),
        Control | Format | LineSeparator | ParagraphSeparator | PrivateUse | Surrogate | Unassigned
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_printable_and_bounded() {
        assert_eq!(approver_name("  Dana Ölçer "), Ok("Dana Ölçer"));
        assert_eq!(approver_name("李 小龙"), Ok("李 小龙"));
        for bad in [
            "",
            "   ",
            "Dana\u{7}",
            "Dana\nEve",
            "Dana\u{202E}evE",
            "Da\u{200B}na",
            "Dana\u{2066}",
            "Dana\u{FEFF}",
            "Da\u{2028}na",
            "Dana\u{E000}",
        ] {
            assert!(approver_name(bad).is_err(), "{bad:?}");
        }
        assert!(approver_name(&"a".repeat(80)).is_ok());
        assert!(approver_name(&"a".repeat(81)).is_err());
    }
}
