//! The HTTP API as an OpenAPI 3.1 description, served at `GET /v1/openapi.json`. Bodies are the
//! wire types of `countersign-proto` (their JSON Schemas derived from the Rust types); each
//! operation below names the handler in `app()` it describes. Every failure is the seed 002 error
//! envelope. `docs/openapi.json` is this description committed; a test holds the two equal.

use axum::response::{IntoResponse, Response};
use countersign_proto::approvals::{
    ApprovalList, DecisionResponse, EnrollRequest, EnrollResponse, PlanRecord,
};
use countersign_proto::describe::{CapabilityList, Describe, GatewayInfo};
use countersign_proto::dsse::Envelope;
use countersign_proto::enrollment::{
    BoundEnrollRequest, BoundEnrollResponse, IdentityProof, IdentityRequest,
};
use countersign_proto::envelope::SuccessEnvelope;
use countersign_proto::error::ErrorEnvelope;
use countersign_proto::guard::SubjectPage;
use countersign_proto::keys::RotatedKey;
use countersign_proto::plan::{DryRunRequest, InvalidPreview, InvokeRequest, Preview};
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};

use crate::capabilities::Capability;

/// A dry run's answer: the plan, or seed 000's `valid: false` with what to fix. A repeat with
/// the same idempotency key answers the stored plan with its `status` now.
#[derive(serde::Serialize, ToSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum DryRunAnswer {
    Plan(Box<Preview>),
    Invalid(InvalidPreview),
}

/// An agent's budget: `limit_credits`, `spent_credits`, `remaining_credits` (decimal strings).
#[derive(ToSchema)]
#[allow(dead_code)]
struct Wallet {
    agent_id: String,
    limit_credits: countersign_proto::Credits,
    spent_credits: countersign_proto::Credits,
    remaining_credits: countersign_proto::Credits,
}

#[derive(OpenApi)]
#[openapi(
    info(title = "Countersign gateway", description = "Dry runs, plans, signed decisions, execution (spec/PROTOCOL.md)."),
    paths(gateway, capabilities, describe, dry_run, invoke, identity, enroll, enroll_bound,
          rotate_key, wallet, approvals, plan, decide, refresh, subjects, events, audit, openapi),
    components(schemas(ErrorEnvelope, DryRunAnswer, Wallet)),
    modifiers(&Refine),
    security(("bearer" = [])),
)]
struct Api;

/// What the derive cannot say: the bearer scheme, and the capability ids.
struct Refine;

impl Modify for Refine {
    fn modify(&self, api: &mut utoipa::openapi::OpenApi) {
        let components = api.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
        // A capability is one of those this gateway serves; say which.
        let ids: Vec<&str> = Capability::all().map(|c| c.id()).collect();
        for (path, item) in api.paths.paths.iter_mut() {
            if !path.starts_with("/v1/capabilities/{id}") {
                continue;
            }
            for operation in [&mut item.get, &mut item.post].into_iter().flatten() {
                for param in operation.parameters.iter_mut().flatten() {
                    if param.name == "id" {
                        param.schema = Some(
                            ObjectBuilder::new()
                                .schema_type(Type::String)
                                .enum_values(Some(ids.clone()))
                                .into(),
                        );
                    }
                }
            }
        }
    }
}

/// The description, as served and as committed.
pub fn description() -> utoipa::openapi::OpenApi {
    Api::openapi()
}

/// Served from text built once: the description never changes while the gateway runs.
pub async fn serve() -> Response {
    static SERVED: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        serde_json::to_string(&description()).expect("the description serializes")
    });
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        SERVED.as_str(),
    )
        .into_response()
}

// The operations. Each is the documentation of the handler named in its summary; none is routed.

/// Who this gateway is (`agent::gateway`).
#[utoipa::path(get, path = "/v1/gateway",
    responses((status = 200, body = GatewayInfo), (status = "4XX", body = ErrorEnvelope)))]
#[allow(dead_code)]
fn gateway() {}

/// Every capability's description (`agent::capabilities`).
#[utoipa::path(get, path = "/v1/capabilities",
    responses((status = 200, body = CapabilityList), (status = "4XX", body = ErrorEnvelope)))]
#[allow(dead_code)]
fn capabilities() {}

/// One capability's description (`agent::describe`).
#[utoipa::path(get, path = "/v1/capabilities/{id}", params(("id" = String, Path)),
    responses((status = 200, body = Describe), (status = "4XX", body = ErrorEnvelope)))]
#[allow(dead_code)]
fn describe() {}

/// Preview a request against the current state; writes nothing but the preview audit
/// (`agent::dry_run`).
#[utoipa::path(post, path = "/v1/capabilities/{id}/dry_run", params(("id" = String, Path)),
    request_body = DryRunRequest,
    responses((status = 200, body = DryRunAnswer), (status = "4XX", body = ErrorEnvelope),
              (status = 503, body = ErrorEnvelope)))]
#[allow(dead_code)]
fn dry_run() {}

/// Execute an approved, current plan, or params that need nobody (`invoke::invoke`).
#[utoipa::path(post, path = "/v1/capabilities/{id}/invoke", params(("id" = String, Path)),
    request_body = InvokeRequest,
    responses((status = 200, body = SuccessEnvelope), (status = "4XX", body = ErrorEnvelope),
              (status = 503, body = ErrorEnvelope)))]
#[allow(dead_code)]
fn invoke() {}

/// The gateway's identity key, proven over a nonce (`approver::identity`).
#[utoipa::path(post, path = "/v1/gateway/identity", request_body = IdentityRequest, security(()),
    responses((status = 200, body = IdentityProof), (status = "4XX", body = ErrorEnvelope)))]
#[allow(dead_code)]
fn identity() {}

/// Enroll an approver key with a single-use code (`approver::enroll`).
#[utoipa::path(post, path = "/v1/approvers/enroll", request_body = EnrollRequest, security(()),
    responses((status = 200, body = EnrollResponse), (status = "4XX", body = ErrorEnvelope)))]
#[allow(dead_code)]
fn enroll() {}

/// Enroll bound to the gateway's identity (`approver::enroll_bound`).
#[utoipa::path(post, path = "/v1/approvers/enroll/bound", request_body = BoundEnrollRequest,
    security(()),
    responses((status = 200, body = BoundEnrollResponse), (status = "4XX", body = ErrorEnvelope)))]
#[allow(dead_code)]
fn enroll_bound() {}

/// Rotate the calling approver's key, proven with the current one (`approver::rotate_key`).
#[utoipa::path(post, path = "/v1/approvers/keys", request_body = Envelope,
    responses((status = 200, body = RotatedKey), (status = "4XX", body = ErrorEnvelope)))]
#[allow(dead_code)]
fn rotate_key() {}

/// An agent's wallet (`approver::wallet`).
#[utoipa::path(get, path = "/v1/agents/{id}/wallet", params(("id" = String, Path)),
    responses((status = 200, body = Wallet), (status = "4XX", body = ErrorEnvelope)))]
#[allow(dead_code)]
fn wallet() {}

/// The approval queue; `If-None-Match` with the last ETag answers 304 when nothing changed
/// (`approver::approvals`).
#[utoipa::path(get, path = "/v1/approvals",
    params(("status" = Option<String>, Query), ("limit" = Option<u32>, Query),
           ("cursor" = Option<String>, Query), ("If-None-Match" = Option<String>, Header)),
    responses((status = 200, body = ApprovalList), (status = 304, description = "Unchanged."),
              (status = "4XX", body = ErrorEnvelope)))]
#[allow(dead_code)]
fn approvals() {}

/// A plan with its status, approvals and what moved (`approver::plan`).
#[utoipa::path(get, path = "/v1/plans/{id}", params(("id" = String, Path)),
    responses((status = 200, body = PlanRecord), (status = "4XX", body = ErrorEnvelope)))]
#[allow(dead_code)]
fn plan() {}

/// A signed decision: a DSSE envelope over a `countersign.decision/v1` statement
/// (`decisions::decide`).
#[utoipa::path(post, path = "/v1/plans/{id}/decisions", params(("id" = String, Path)),
    request_body = Envelope,
    responses((status = 200, body = DecisionResponse), (status = "4XX", body = ErrorEnvelope),
              (status = 503, body = ErrorEnvelope)))]
#[allow(dead_code)]
fn decide() {}

/// A fresh preview of a stale plan, superseding it (`plans::refresh`).
#[utoipa::path(post, path = "/v1/plans/{id}/refresh", params(("id" = String, Path)),
    responses((status = 200, body = PlanRecord), (status = "4XX", body = ErrorEnvelope),
              (status = 503, body = ErrorEnvelope)))]
#[allow(dead_code)]
fn refresh() {}

/// One page of an effect's subjects, ids ascending (`plans::subjects`).
#[utoipa::path(get, path = "/v1/plans/{id}/effects/{effect}/subjects",
    params(("id" = String, Path), ("effect" = String, Path), ("cursor" = Option<String>, Query),
           ("limit" = Option<u32>, Query)),
    responses((status = 200, body = SubjectPage), (status = "4XX", body = ErrorEnvelope)))]
#[allow(dead_code)]
fn subjects() {}

/// The queue's changes as server-sent events, resumable with `Last-Event-ID` (`events::events`).
#[utoipa::path(get, path = "/v1/events",
    params(("Last-Event-ID" = Option<String>, Header)),
    responses((status = 200, content_type = "text/event-stream", description = "An event stream."),
              (status = "4XX", body = ErrorEnvelope)))]
#[allow(dead_code)]
fn events() {}

/// A plan's decisions and executions, with their journals (`plans::audit`).
#[utoipa::path(get, path = "/v1/audit", params(("plan_id" = String, Query)),
    responses((status = 200, body = Object), (status = "4XX", body = ErrorEnvelope)))]
#[allow(dead_code)]
fn audit() {}

/// This description (`openapi::serve`).
#[utoipa::path(get, path = "/v1/openapi.json", security(()),
    responses((status = 200, body = Object)))]
#[allow(dead_code)]
fn openapi() {}
