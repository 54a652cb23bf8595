//! The window's commands, each a few lines over one function of `countersign-console`. None
//! waits behind another's network I/O or the sync task's: queue and status read the live
//! snapshot, the rest work on a clone of the current session.

use countersign_console::amend::AmendDraft;
use countersign_console::audit::history::HistoryEntry;
use countersign_console::error::{ConsoleError, ErrorView};
use countersign_console::insights::InsightsView;
use countersign_console::live::window::WindowAsk;
use countersign_console::mail::RemedyOutcome;
use countersign_console::review::batch::{BatchItem, BatchOutcome, BatchView};
use countersign_console::review::subjects::SubjectsPage;
use countersign_console::review::window::{QueueQuery, QueueWindow};
use countersign_console::review::{DecisionView, PlanView, RefreshView, RowGist};
use countersign_console::session::StatusView;
use countersign_console::settings::{Settings, SettingsView};
use countersign_console::standing::{StandingDraft, StandingView};
use countersign_desktop::memory::Release;
use countersign_proto::decision::Decision;
use countersign_proto::mail::Remedy;
use tauri::{AppHandle, State};
use tauri_plugin_dialog::DialogExt;

use crate::confirm::NativeConfirm;
use crate::shell::{self, Shell};

type Answer<T> = Result<T, ErrorView>;

fn view(e: ConsoleError) -> ErrorView {
    e.view()
}

/// The plan a link named before the window listened for `open-plan`, asked once as it starts.
#[tauri::command]
pub fn linked_plan(shell: State<'_, Shell>) -> Option<String> {
    shell.take_linked()
}

#[tauri::command]
pub fn status(shell: State<'_, Shell>) -> Answer<StatusView> {
    Ok(shell.running()?.session.status())
}

/// The rows of the queue in view under the window's query, with the counts; live changes are
/// told against them from now on. Off the main thread: a new query sorts the whole queue.
#[tauri::command(async)]
pub fn queue_window(
    shell: State<'_, Shell>,
    release: State<'_, Release>,
    ask: WindowAsk,
) -> Answer<QueueWindow> {
    release.after_work();
    shell
        .running()?
        .session
        .console()
        .queue_window(ask)
        .map_err(view)
}

/// The plans between two in the list the query shows: a range picked for batch review.
#[tauri::command(async)]
pub fn queue_between(
    shell: State<'_, Shell>,
    query: QueueQuery,
    from: String,
    to: String,
) -> Answer<Vec<String>> {
    shell
        .running()?
        .session
        .console()
        .queue_between(&query, &from, &to)
        .map_err(view)
}

/// The gists of the rows the window shows; the queue itself reads no plan.
#[tauri::command]
pub async fn gists(shell: State<'_, Shell>, plan_ids: Vec<String>) -> Answer<Vec<RowGist>> {
    let running = shell.running()?;
    running
        .session
        .console()
        .gists(&plan_ids)
        .await
        .map_err(view)
}

#[tauri::command]
pub async fn plan(
    shell: State<'_, Shell>,
    release: State<'_, Release>,
    plan_id: String,
) -> Answer<PlanView> {
    let running = shell.running()?;
    let console = running.session.console();
    release
        .after(console.plan_view(&plan_id))
        .await
        .map_err(view)
}

#[tauri::command]
pub async fn approve(
    app: AppHandle,
    shell: State<'_, Shell>,
    plan_id: String,
    digest: String,
    reason: Option<String>,
) -> Answer<DecisionView> {
    let running = shell.running()?;
    let confirm = NativeConfirm::new(&app);
    let console = running.session.console();
    console
        .approve(&plan_id, &digest, reason, &confirm)
        .await
        .map_err(view)
}

#[tauri::command]
pub async fn reject(
    shell: State<'_, Shell>,
    plan_id: String,
    digest: String,
    reason: String,
) -> Answer<DecisionView> {
    let running = shell.running()?;
    let console = running.session.console();
    console
        .reject(&plan_id, &digest, reason)
        .await
        .map_err(view)
}

#[tauri::command]
pub async fn refresh(shell: State<'_, Shell>, plan_id: String) -> Answer<RefreshView> {
    let running = shell.running()?;
    running
        .session
        .console()
        .refresh(&plan_id)
        .await
        .map_err(view)
}

#[tauri::command]
pub async fn subjects(
    shell: State<'_, Shell>,
    release: State<'_, Release>,
    plan_id: String,
    effect_id: String,
    query: String,
    offset: u64,
    limit: u64,
) -> Answer<SubjectsPage> {
    let running = shell.running()?;
    let console = running.session.console();
    let page = console.subjects_page(&plan_id, &effect_id, &query, offset, limit);
    release.after(page).await.map_err(view)
}

#[tauri::command]
pub async fn batch(
    shell: State<'_, Shell>,
    release: State<'_, Release>,
    plan_ids: Vec<String>,
) -> Answer<BatchView> {
    let running = shell.running()?;
    let console = running.session.console();
    release
        .after(console.batch_view(&plan_ids))
        .await
        .map_err(view)
}

#[tauri::command]
pub async fn decide_batch(
    app: AppHandle,
    shell: State<'_, Shell>,
    decision: String,
    items: Vec<BatchItem>,
    reason: Option<String>,
) -> Answer<BatchOutcome> {
    let decision = match decision.as_str() {
        "approve" => Decision::Approve,
        "reject" => Decision::Reject,
        other => {
            let why = format!("a decision is \"approve\" or \"reject\", not {other:?}");
            return Err(view(ConsoleError::Invalid(why)));
        }
    };
    let running = shell.running()?;
    let confirm = NativeConfirm::new(&app);
    let console = running.session.console();
    console
        .decide_batch(decision, &items, reason, &confirm)
        .await
        .map_err(view)
}

#[tauri::command]
pub async fn history(shell: State<'_, Shell>) -> Answer<Vec<HistoryEntry>> {
    let running = shell.running()?;
    running.session.console().history().await.map_err(view)
}

/// Asks where to write the history (a native save dialog); `None` when that was cancelled.
/// `format` is `json` (the console's own entries) or `in-toto` (an audit others can verify).
#[tauri::command]
pub async fn export_history(
    app: AppHandle,
    shell: State<'_, Shell>,
    format: String,
) -> Answer<Option<String>> {
    let in_toto = match format.as_str() {
        "json" => false,
        "in-toto" => true,
        other => {
            let why = format!("an export is \"json\" or \"in-toto\", not {other:?}");
            return Err(view(ConsoleError::Invalid(why)));
        }
    };
    let running = shell.running()?;
    let name = match in_toto {
        true => "countersign-history.intoto.jsonl",
        false => "countersign-history.jsonl",
    };
    let ask = app
        .dialog()
        .file()
        .set_title("Export the decision history")
        .set_file_name(name)
        .add_filter("JSON Lines", &["jsonl"]);
    let chosen = tauri::async_runtime::spawn_blocking(move || ask.blocking_save_file())
        .await
        .map_err(|e| view(ConsoleError::Invalid(e.to_string())))?;
    let Some(path) = chosen.and_then(|p| p.into_path().ok()) else {
        return Ok(None);
    };
    let console = running.session.console();
    match in_toto {
        true => console.export_in_toto(&path).await.map(|_| ()),
        false => console.export_history(&path).await,
    }
    .map_err(view)?;
    Ok(Some(path.display().to_string()))
}

/// How approvals are going at the gateway over `window` (`24h`, `7d`, `30d`).
#[tauri::command]
pub async fn insights(shell: State<'_, Shell>, window: String) -> Answer<InsightsView> {
    let running = shell.running()?;
    running
        .session
        .console()
        .insights(&window)
        .await
        .map_err(view)
}

#[tauri::command]
pub async fn standing(shell: State<'_, Shell>) -> Answer<Vec<StandingView>> {
    let running = shell.running()?;
    running.session.console().standing().await.map_err(view)
}

#[tauri::command]
pub async fn standing_draft(shell: State<'_, Shell>, plan_id: String) -> Answer<StandingDraft> {
    let running = shell.running()?;
    let console = running.session.console();
    console.standing_draft(&plan_id).await.map_err(view)
}

/// Signs and sends a standing approval once the native confirmation, which says in words what it
/// lets run, is answered yes.
#[tauri::command]
pub async fn create_standing(
    app: AppHandle,
    shell: State<'_, Shell>,
    draft: StandingDraft,
) -> Answer<StandingView> {
    let running = shell.running()?;
    let confirm = NativeConfirm::standing(&app);
    let console = running.session.console();
    console
        .create_standing(&draft, &confirm)
        .await
        .map_err(view)
}

#[tauri::command]
pub async fn revoke_standing(shell: State<'_, Shell>, id: String) -> Answer<StandingView> {
    let running = shell.running()?;
    let console = running.session.console();
    console.revoke_standing(&id).await.map_err(view)
}

/// Signs and sends a remedy for one of an executed plan's held or failed emails, shown with
/// `digest`, once the native confirmation (where it goes, or that it never does) is answered yes.
#[tauri::command]
pub async fn remedy_mail(
    app: AppHandle,
    shell: State<'_, Shell>,
    plan_id: String,
    message_id: i64,
    remedy: Remedy,
    digest: String,
) -> Answer<RemedyOutcome> {
    let running = shell.running()?;
    let confirm = NativeConfirm::mail(&app);
    let console = running.session.console();
    console
        .remedy_mail((&plan_id, message_id), remedy, &digest, &confirm)
        .await
        .map(RemedyOutcome::from)
        .map_err(view)
}

#[tauri::command]
pub async fn amend_draft(shell: State<'_, Shell>, plan_id: String) -> Answer<AmendDraft> {
    let running = shell.running()?;
    let console = running.session.console();
    console.amend_draft(&plan_id).await.map_err(view)
}

/// Sends an amended request once the native confirmation, which names each changed param, is
/// answered yes: a script in the window cannot rewrite a plan's request on its own.
#[tauri::command]
pub async fn amend(
    app: AppHandle,
    shell: State<'_, Shell>,
    plan_id: String,
    params: serde_json::Value,
) -> Answer<RefreshView> {
    let running = shell.running()?;
    let confirm = NativeConfirm::amend(&app);
    let console = running.session.console();
    console
        .amend(&plan_id, params, &confirm)
        .await
        .map_err(view)
}

#[tauri::command]
pub fn snooze(shell: State<'_, Shell>, plan_id: String, minutes: u32) -> Answer<()> {
    let running = shell.running()?;
    running
        .session
        .console()
        .snooze(&plan_id, minutes)
        .map_err(view)
}

#[tauri::command]
pub fn unsnooze(shell: State<'_, Shell>, plan_id: String) -> Answer<()> {
    shell.running()?.session.console().unsnooze(&plan_id);
    Ok(())
}

#[tauri::command]
pub fn settings(shell: State<'_, Shell>) -> Answer<SettingsView> {
    shell.settings()
}

#[tauri::command]
pub fn save_settings(app: AppHandle, settings: Settings) -> Answer<SettingsView> {
    shell::save(&app, &settings)
}

#[tauri::command]
pub async fn enroll(app: AppHandle, gateway_url: String, code: String) -> Answer<StatusView> {
    Ok(shell::enroll(&app, gateway_url, code)
        .await?
        .session
        .status())
}

/// Moves the credential of the gateway followed now to `gateway_url`; the native dialog it asks
/// first is outside the page's reach.
#[tauri::command]
pub async fn move_credential(app: AppHandle, gateway_url: String) -> Answer<StatusView> {
    Ok(shell::move_credential(&app, gateway_url)
        .await?
        .session
        .status())
}
