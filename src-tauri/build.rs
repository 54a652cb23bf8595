/// The app's commands, each with an `allow-<command>` permission; capabilities/default.json
/// grants the window exactly these. Declaring them is what makes an ungranted one refused.
const COMMANDS: &[&str] = &[
    "status",
    "queue_window",
    "queue_between",
    "gists",
    "plan",
    "approve",
    "reject",
    "refresh",
    "subjects",
    "batch",
    "decide_batch",
    "history",
    "export_history",
    "insights",
    "settings",
    "save_settings",
    "enroll",
    "move_credential",
    "linked_plan",
    "standing",
    "standing_draft",
    "create_standing",
    "revoke_standing",
    "remedy_mail",
    "amend_draft",
    "amend",
    "snooze",
    "unsnooze",
];

fn main() {
    tauri_build::try_build(
        tauri_build::Attributes::new()
            .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS)),
    )
    .expect("the Tauri configuration and capabilities are valid");
}
