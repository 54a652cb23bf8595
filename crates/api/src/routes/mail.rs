//! Remedies for an executed plan's emails that could not go as planned (seed 004): an approver's
//! signed release, resend or cancellation of one held or failed message (`docs/mail.md`).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::Json;
use countersign_engine::accounts::Approver;
use countersign_engine::{mail, ApiError};
use countersign_proto::dsse::Envelope;
use countersign_proto::mail::Remedied;

use crate::schemas::WriteRefused;
use crate::{AppState, Auth, HttpResult};

/// A remedy for message `message` of plan `id`: a DSSE envelope over a
/// `countersign.mail-remedy/v1` statement naming the message's digest as the plan record shows it.
#[utoipa::path(post, path = "/v1/plans/{id}/mail/{message}", request_body = Envelope,
    params(("id" = String, Path), ("message" = i64, Path)),
    responses((status = 200, body = Remedied), WriteRefused))]
pub async fn remedy(
    State(state): State<Arc<AppState>>,
    Auth(approver): Auth<Approver>,
    Path((plan_id, message)): Path<(String, String)>,
    body: Bytes,
) -> HttpResult<Json<Remedied>> {
    // A message id is a number the plan record gave; anything else names no message.
    let message_id: i64 = message
        .parse()
        .map_err(|_| ApiError::not_found("message"))?;
    let remedied = mail::apply_remedy(&state, &approver, (&plan_id, message_id), &body).await?;
    Ok(Json(remedied))
}
