//! Tauri commands: take the state, call one function of `countersign-console`, map the error.

use countersign_console::error::ErrorView;
use countersign_console::review::{decision_view, DecisionView, PlanView, QueueView};
use countersign_console::session::{Session, SessionConfig, StatusView};
use tauri::State;
use tokio::sync::Mutex;

#[derive(Default)]
pub struct AppModel {
    pub session: Mutex<Option<Session>>,
    startup_error: std::sync::Mutex<Option<ErrorView>>,
}

impl AppModel {
    pub async fn start(&self, config: SessionConfig) {
        match Session::start(config).await {
            Ok(session) => *self.session.lock().await = Some(session),
            Err(e) => {
                tracing::error!(error = %e, "the console could not start");
                if let Ok(mut slot) = self.startup_error.lock() {
                    *slot = Some(e.view());
                }
            }
        }
    }

    fn not_ready(&self) -> ErrorView {
        self.startup_error
            .lock()
            .ok()
            .and_then(|e| e.clone())
            .unwrap_or_else(|| ErrorView {
                code: "starting".to_owned(),
                message: "Connecting to the gateway…".to_owned(),
            })
    }
}

type Answer<T> = Result<T, ErrorView>;

#[tauri::command]
pub async fn status(model: State<'_, AppModel>) -> Answer<StatusView> {
    let session = model.session.lock().await;
    session
        .as_ref()
        .map(Session::status)
        .ok_or_else(|| model.not_ready())
}

#[tauri::command]
pub async fn queue(model: State<'_, AppModel>) -> Answer<QueueView> {
    let session = model.session.lock().await;
    session
        .as_ref()
        .map(|s| s.console.queue())
        .ok_or_else(|| model.not_ready())
}

#[tauri::command]
pub async fn plan(model: State<'_, AppModel>, plan_id: String) -> Answer<PlanView> {
    let session = model.session.lock().await;
    let session = session.as_ref().ok_or_else(|| model.not_ready())?;
    session
        .console
        .plan_view(&plan_id)
        .await
        .map_err(|e| e.view())
}

#[tauri::command]
pub async fn approve(
    model: State<'_, AppModel>,
    plan_id: String,
    digest: String,
    reason: Option<String>,
) -> Answer<DecisionView> {
    let mut session = model.session.lock().await;
    let session = session.as_mut().ok_or_else(|| model.not_ready())?;
    let answer = session
        .console
        .approve(&plan_id, &digest, reason)
        .await
        .map_err(|e| e.view())?;
    // The queue changed by our own hand: list again before the UI asks.
    let _ = session.sync().await;
    Ok(decision_view(&answer))
}
