//! Gateway- and agent-written text as the approver may read it anywhere outside the webview (the
//! native confirmation, notifications, the terminal): the same rule as the window's
//! (`ui/src/backend/visible.ts`). Bidirectional overrides, zero-width marks, line and paragraph
//! separators and control characters could reorder or hide what the approver reads before
//! signing; each becomes U+FFFD.

/// Characters that reorder, hide or break text: bidirectional controls, zero-width and invisible
/// marks, the soft hyphen, Unicode line and paragraph separators, tag characters.
pub fn hidden(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{061C}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{FEFF}'
            | '\u{E0000}'..='\u{E007F}'
    )
}

/// `text` with every hidden and control character (but line breaks and tabs) shown as U+FFFD.
pub fn visible(text: &str) -> String {
    text.chars()
        .map(|c| {
            if hidden(c) || (c.is_control() && c != '\n' && c != '\t') {
                '\u{FFFD}'
            } else {
                c
            }
        })
        .collect()
}

/// `text` for a notification body, which desktop notification servers read as markup: visible,
/// and its markup characters escaped.
pub fn notification_body(text: &str) -> String {
    visible(text)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_could_reorder_or_hide_text_is_shown_as_a_replacement_character() {
        let shown = visible("Grant \u{202E}nimda\u{202C} to usr\u{200B}_92\u{2028}x\u{7}\ty\nz");
        assert_eq!(
            shown,
            "Grant \u{FFFD}nimda\u{FFFD} to usr\u{FFFD}_92\u{FFFD}x\u{FFFD}\ty\nz"
        );
        assert_eq!(
            notification_body("<b>bold</b> & \u{202E}"),
            "&lt;b&gt;bold&lt;/b&gt; &amp; \u{FFFD}"
        );
    }
}
