//! The core's confirmation before a risky signature, as a native dialog: outside the webview, so
//! a script in the page cannot answer it.

use countersign_console::signing::confirm::Confirm;
use countersign_console::text::visible;
use tauri::{AppHandle, Manager};
use tauri_plugin_dialog::{DialogExt, MessageDialogButtons, MessageDialogKind};

pub struct NativeConfirm {
    app: AppHandle,
    /// The label of the button that says yes.
    yes: &'static str,
    /// What the lines under the consequence are.
    heading: &'static str,
}

impl NativeConfirm {
    /// The confirmation before a risky signature.
    pub fn new(app: &AppHandle) -> NativeConfirm {
        NativeConfirm {
            app: app.clone(),
            yes: "Approve and sign",
            heading: SIGNS,
        }
    }

    /// The confirmation before a standing approval is signed.
    pub fn standing(app: &AppHandle) -> NativeConfirm {
        NativeConfirm {
            app: app.clone(),
            yes: "Sign standing approval",
            heading: SIGNS,
        }
    }

    /// The confirmation before a remedy for a held or failed email is signed.
    pub fn mail(app: &AppHandle) -> NativeConfirm {
        NativeConfirm {
            app: app.clone(),
            yes: "Sign remedy",
            heading: "The email",
        }
    }

    /// The confirmation before an amended request is sent.
    pub fn amend(app: &AppHandle) -> NativeConfirm {
        NativeConfirm {
            app: app.clone(),
            yes: "Send changed request",
            heading: "It changes:",
        }
    }

    /// The confirmation before a credential is sent to another URL.
    pub fn moving(app: &AppHandle) -> NativeConfirm {
        NativeConfirm {
            app: app.clone(),
            yes: "Move credential",
            heading: SIGNS,
        }
    }
}

const SIGNS: &str = "This signs:";

/// The dialog's text: the consequence in words, then under `heading` each line (each plan and
/// the digest it signs, or each param an amendment changes), every character visible (agent
/// text reaches it through the plan).
pub fn text(consequence: &str, heading: &str, lines: &[String]) -> String {
    if lines.is_empty() {
        return visible(consequence);
    }
    visible(&format!("{consequence}\n\n{heading}\n{}", lines.join("\n")))
}

impl Confirm for NativeConfirm {
    /// Blocks until answered: the core calls it off the async workers, never on the main thread.
    fn confirm(&self, title: &str, consequence: &str, lines: &[String]) -> bool {
        let mut dialog = self
            .app
            .dialog()
            .message(text(consequence, self.heading, lines))
            .title(visible(title))
            .kind(MessageDialogKind::Warning)
            .buttons(MessageDialogButtons::OkCancelCustom(
                self.yes.to_owned(),
                "Cancel".to_owned(),
            ));
        if let Some(window) = self.app.get_webview_window("main") {
            dialog = dialog.parent(&window);
        }
        dialog.blocking_show()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_confirmation_lists_what_each_plan_signs() {
        let lines = vec![
            "pln_1  grp_support −37 · sha256:abcd…wxyz".to_owned(),
            "pln_2  prj_184 retention 30 → 14 · sha256:1234…7890".to_owned(),
        ];
        let shown = text(
            "removes 37 members from grp_support; irreversible",
            SIGNS,
            &lines,
        );
        assert!(shown.starts_with("removes 37 members"));
        assert!(shown.contains("pln_1  grp_support −37 · sha256:abcd…wxyz\npln_2"));
        assert_eq!(text("irreversible", SIGNS, &[]), "irreversible");
        assert_eq!(
            text("grants admin to usr_\u{202E}29", SIGNS, &[]),
            "grants admin to usr_\u{FFFD}29"
        );
    }
}
