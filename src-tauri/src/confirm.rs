//! The core's confirmation before a risky signature, as a native dialog: outside the webview, so
//! a script in the page cannot answer it.

use countersign_console::confirm::Confirm;
use countersign_console::text::visible;
use tauri::{AppHandle, Manager};
use tauri_plugin_dialog::{DialogExt, MessageDialogButtons, MessageDialogKind};

pub struct NativeConfirm {
    app: AppHandle,
    /// The label of the button that says yes.
    yes: &'static str,
}

impl NativeConfirm {
    /// The confirmation before a risky signature.
    pub fn new(app: &AppHandle) -> NativeConfirm {
        NativeConfirm {
            app: app.clone(),
            yes: "Approve and sign",
        }
    }

    /// The confirmation before a standing approval is signed.
    pub fn standing(app: &AppHandle) -> NativeConfirm {
        NativeConfirm {
            app: app.clone(),
            yes: "Sign standing approval",
        }
    }

    /// The confirmation before a credential is sent to another URL.
    pub fn moving(app: &AppHandle) -> NativeConfirm {
        NativeConfirm {
            app: app.clone(),
            yes: "Move credential",
        }
    }
}

/// The dialog's text: the consequence in words, then each plan and the digest it signs, every
/// character visible (agent text reaches it through the plan).
pub fn text(consequence: &str, lines: &[String]) -> String {
    if lines.is_empty() {
        return visible(consequence);
    }
    visible(&format!(
        "{consequence}\n\nThis signs:\n{}",
        lines.join("\n")
    ))
}

impl Confirm for NativeConfirm {
    /// Blocks until answered: the core calls it off the async workers, never on the main thread.
    fn confirm(&self, title: &str, consequence: &str, lines: &[String]) -> bool {
        let mut dialog = self
            .app
            .dialog()
            .message(text(consequence, lines))
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
        let shown = text("removes 37 members from grp_support; irreversible", &lines);
        assert!(shown.starts_with("removes 37 members"));
        assert!(shown.contains("pln_1  grp_support −37 · sha256:abcd…wxyz\npln_2"));
        assert_eq!(text("irreversible", &[]), "irreversible");
        assert_eq!(
            text("grants admin to usr_\u{202E}29", &[]),
            "grants admin to usr_\u{FFFD}29"
        );
    }
}
