//! The OpenAPI description the gateway serves is the one committed in `docs/openapi.json`, so a
//! change to the API shows in review. `UPDATE_OPENAPI=1` rewrites the file.

use crate::common::Gateway;
use axum::http::StatusCode;

#[tokio::test]
async fn the_served_description_is_the_committed_one() {
    let gw = Gateway::new().await;
    let reply = gw.call("GET", "/v1/openapi.json", None, None).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["openapi"], "3.1.0");
    let served = serde_json::to_string_pretty(&reply.body).unwrap() + "\n";
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi.json");
    if std::env::var_os("UPDATE_OPENAPI").is_some() {
        std::fs::write(&path, &served).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == served,
        "docs/openapi.json is not what the gateway serves: UPDATE_OPENAPI=1 cargo test -p countersign-gateway --test gateway openapi"
    );
}

#[tokio::test]
async fn every_route_is_described() {
    let gw = Gateway::new().await;
    let reply = gw.call("GET", "/v1/openapi.json", None, None).await;
    let paths = reply.body["paths"].as_object().unwrap();
    for route in [
        "/v1/gateway",
        "/v1/capabilities",
        "/v1/capabilities/{id}",
        "/v1/capabilities/{id}/invoke",
        "/v1/gateway/identity",
        "/v1/approvers/enroll",
        "/v1/approvers/enroll/bound",
        "/v1/approvers/keys",
        "/v1/approvers/me",
        "/v1/agents/{id}/wallet",
        "/v1/approvals",
        "/v1/plans/{id}",
        "/v1/plans/{id}/decisions",
        "/v1/plans/{id}/refresh",
        "/v1/plans/{id}/mail/{message}",
        "/v1/plans/{id}/effects/{effect}/subjects",
        "/v1/events",
        "/v1/audit",
        "/v1/openapi.json",
        "/healthz",
        "/readyz",
        "/v1/stats",
    ] {
        assert!(paths.contains_key(route), "{route} is not described");
    }
    // A dry run is described per capability with a preview, its params its input schema; so is
    // the invoke of each capability that runs on params alone.
    let previewed = [
        "documents.document.upload",
        "projects.settings.update",
        "memberships.grant",
        "groups.members.remove",
        "storage.quota.update",
        "text.generate",
        "speech.synthesize",
        "image.generate",
        "video.generate",
        "agent.tool_call",
    ];
    let direct = [
        "documents.document.upload",
        "storage.quota.update",
        "wallet.agent_budget.guard.check",
    ];
    let own_paths = (previewed
        .iter()
        .map(|id| format!("/v1/capabilities/{id}/dry_run")))
    .chain(
        direct
            .iter()
            .map(|id| format!("/v1/capabilities/{id}/invoke")),
    );
    for path in own_paths {
        assert!(paths.contains_key(&path), "{path} is not described");
    }
    assert_eq!(
        paths.len(),
        25 + previewed.len() + direct.len(),
        "a described route that app() does not serve"
    );
}
