//! The approver's explicit yes before a risky approval is signed. The dialog itself belongs to
//! whoever shows it (a native dialog in the desktop shell, a prompt in a terminal): a script in a
//! web page cannot answer it.

/// Asked before signing; `false` cancels and nothing is signed or written.
pub trait Confirm: Send + Sync {
    /// Shown before signing a risky approval; `lines` lists "plan_id  gist · sha256:abcd…wxyz".
    fn confirm(&self, title: &str, consequence: &str, lines: &[String]) -> bool;
}

/// Asks `confirm` without stalling the runtime's other tasks where the runtime allows it: the
/// answer may take as long as the approver reads.
pub(crate) fn ask(confirm: &dyn Confirm, title: &str, consequence: &str, lines: &[String]) -> bool {
    let multi_thread = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if multi_thread {
        tokio::task::block_in_place(|| confirm.confirm(title, consequence, lines))
    } else {
        confirm.confirm(title, consequence, lines)
    }
}

/// `sha256:abcd…wxyz`: enough of a digest to compare by eye.
pub fn short_digest(digest: &str) -> String {
    let hex: Vec<char> = digest
        .strip_prefix("sha256:")
        .unwrap_or(digest)
        .chars()
        .collect();
    if hex.len() <= 8 {
        return digest.to_owned();
    }
    let head: String = hex[..4].iter().collect();
    let tail: String = hex[hex.len() - 4..].iter().collect();
    format!("sha256:{head}…{tail}")
}
