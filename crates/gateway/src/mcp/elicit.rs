//! URL elicitation (SEP-1036) for a client that declares it: once per plan that waits for
//! people, the client's user is asked to open `countersign://plan/<id>`, which the desktop app
//! opens on that plan. The answer is the user's business: accepting, declining or cancelling
//! changes nothing on the gateway (docs/mcp.md).
//!
//! At 2026-07-28 the ask rides the call itself (SEP-2322): the first round answers
//! `input_required` with the elicitation and the plan's id as `requestState`, and the retry is
//! answered for that plan, not a new one. A session of an earlier version with a channel back to
//! the client (stdio) is sent the elicitation as a request of its own, beside the answer.

use std::collections::BTreeMap;
use std::time::Duration;

use countersign_proto::plan::{self, Preview};
use rmcp::model::{
    ClientCapabilities, ElicitRequest, ElicitRequestParams, InputRequest, InputRequiredResult,
};
use rmcp::service::RequestContext;
use rmcp::RoleServer;

use countersign_engine::ids;

/// The key of the one input request a call asks for.
pub const OPEN_PLAN: &str = "countersign_open_plan";

/// Whether the request's client takes URL elicitations.
pub fn declared(capabilities: Option<&ClientCapabilities>) -> bool {
    capabilities
        .and_then(|c| c.elicitation.as_ref())
        .is_some_and(|e| e.url.is_some())
}

/// What the user is asked: the plan's one-line consequence, and that it waits for a person.
pub fn message(plan: &Preview) -> String {
    let first = plan
        .effects
        .first()
        .map_or("no effects", |e| e.description.trim_end_matches('.'));
    let more = match plan.effects.len() {
        0 | 1 => String::new(),
        2 => " (and 1 more effect)".to_owned(),
        n => format!(" (and {} more effects)", n - 1),
    };
    format!(
        "{}: {first}{more}. Plan {} waits for approval until {}; open it in Countersign to see \
         every effect.",
        plan.capability_id,
        plan.plan_id,
        ids::to_text(plan.expires_at)
    )
}

fn params(plan: &Preview) -> ElicitRequestParams {
    ElicitRequestParams::UrlElicitationParams {
        meta: None,
        message: message(plan),
        url: plan::link(&plan.plan_id),
        elicitation_id: plan.plan_id.clone(),
    }
}

/// The first round's answer at 2026-07-28: open the plan, then ask again with its id.
pub fn within(plan: &Preview) -> InputRequiredResult {
    let request = InputRequest::Elicitation(ElicitRequest::new(params(plan)));
    InputRequiredResult::new(
        Some(BTreeMap::from([(OPEN_PLAN.to_owned(), request)])),
        Some(plan.plan_id.clone()),
    )
}

/// Sends the elicitation over a session's channel back to the client, without waiting for the
/// user: the call's answer does not depend on it. Given up when the plan expires; as many are
/// open as the agent has plans waiting, which its pending-plan cap bounds.
pub fn send(context: &RequestContext<RoleServer>, plan: &Preview) {
    let peer = context.peer.clone();
    let message = message(plan);
    let Ok(url) = url::Url::parse(&plan::link(&plan.plan_id)) else {
        return;
    };
    let id = plan.plan_id.clone();
    let left = (plan.expires_at - ids::now())
        .to_std()
        .unwrap_or(Duration::ZERO);
    tokio::spawn(async move {
        if let Err(error) = peer
            .elicit_url_with_timeout(message, url, id.clone(), Some(left))
            .await
        {
            tracing::debug!(plan_id = %id, %error, "the client did not take the plan's link");
        }
    });
}
