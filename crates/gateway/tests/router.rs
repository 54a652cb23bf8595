//! The gateway's HTTP contract for the first capability: errors, previews, the queue.

use crate::common::{assert_error, retention, Gateway};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use countersign_proto::digest::plan_digest;
use serde_json::{json, Value};

fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/../../../shared/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[tokio::test]
async fn every_error_travels_in_the_envelope_with_its_status() {
    let gw = Gateway::new().await;
    let approver = gw.enroll("Dana").await;
    let agent = gw.agent.clone();

    let reply = gw.call("GET", "/v1/approvals", None, None).await;
    assert_error(&reply, "unauthenticated", 401);
    let reply = gw
        .call("GET", "/v1/approvals", Some("csa_nobody"), None)
        .await;
    assert_error(&reply, "unauthenticated", 401);
    let reply = gw.call("GET", "/v1/approvals", Some(&agent), None).await;
    assert_error(&reply, "forbidden", 403);
    let dry_run = "/v1/capabilities/projects.settings.update/dry_run";
    let params = json!({"params": {"project": "prj_184", "retention_days": 14}});
    let reply = gw
        .call("POST", dry_run, Some(&approver.token), Some(params))
        .await;
    assert_error(&reply, "forbidden", 403);
    // serde reads a struct from an array as well; a body is an object.
    let reply = gw
        .call(
            "POST",
            dry_run,
            Some(&agent),
            Some(json!([{"project": "prj_184"}, null])),
        )
        .await;
    assert_error(&reply, "validation_error", 422);
    // A plan that does not exist is not found, whatever cursor comes with it.
    let reply = gw
        .call(
            "GET",
            "/v1/plans/plan_none/effects/eff_1/subjects?cursor=c_x",
            Some(&agent),
            None,
        )
        .await;
    assert_error(&reply, "not_found", 404);
    let reply = gw
        .call("GET", "/v1/capabilities/nope.nothing", Some(&agent), None)
        .await;
    assert_error(&reply, "not_found", 404);
    let reply = gw
        .call("GET", "/v1/plans/plan_missing", Some(&agent), None)
        .await;
    assert_error(&reply, "not_found", 404);
    let reply = gw.call("GET", "/v2/anything", Some(&agent), None).await;
    assert_error(&reply, "not_found", 404);
    let unknown_member = json!({"params": {}, "dry": true});
    let reply = gw
        .call("POST", dry_run, Some(&agent), Some(unknown_member))
        .await;
    assert_error(&reply, "validation_error", 422);
    let reply = gw
        .send(
            Request::post(dry_run)
                .header("authorization", format!("Bearer {agent}"))
                .header("content-type", "application/json")
                .body(Body::from("{\"params\": "))
                .unwrap(),
        )
        .await;
    assert_error(&reply, "validation_error", 422);
    let huge = format!(
        "{{\"params\": {{\"pad\": \"{}\"}}}}",
        "x".repeat(2 * 1024 * 1024)
    );
    let reply = gw
        .send(
            Request::post(dry_run)
                .header("authorization", format!("Bearer {agent}"))
                .header("content-type", "application/json")
                .body(Body::from(huge))
                .unwrap(),
        )
        .await;
    assert_error(&reply, "payload_too_large", 413);
    // A key that is not one, with a real code; with a made-up code the code answers first.
    let code = countersign_engine::accounts::invite_approver(&gw.state.store, "Eve", None)
        .await
        .unwrap();
    for (code, error, status) in [
        (code.as_str(), "validation_error", 422),
        ("cse_spent", "unauthenticated", 401),
    ] {
        let body = json!({"enrollment_code": code, "display_name": "Eve", "public_key": "AAAA"});
        let reply = gw
            .call("POST", "/v1/approvers/enroll", None, Some(body))
            .await;
        assert_error(&reply, error, status);
    }
}

#[tokio::test]
async fn the_demo_preview_is_the_small_fixture() {
    let gw = Gateway::new().await;
    let fixture = fixture("plan-small.json");
    let reply = gw
        .try_preview(
            "projects.settings.update",
            fixture["request"]["params"].clone(),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.headers["cache-control"], "no-store");
    let plan = reply.body;
    assert_eq!(plan["mode"], "preview");
    assert_eq!(plan["request_digest"], fixture["request_digest"]);
    assert_eq!(
        plan["plan_digest"].as_str().unwrap(),
        plan_digest(&plan).unwrap()
    );
    assert_eq!(plan["read_revisions"], fixture["read_revisions"]);
    for member in [
        "effects",
        "validation",
        "assumptions",
        "estimated_cost",
        "billing",
        "caller",
    ] {
        assert_eq!(plan[member], fixture[member], "{member}");
    }
    assert_eq!(plan["would_require_approval"], true);
    assert_eq!(plan["executable"], true);
}

#[tokio::test]
async fn invalid_params_name_every_field_and_store_no_plan() {
    let gw = Gateway::new().await;
    let reply = gw
        .try_preview(
            "projects.settings.update",
            json!({"project": 5, "retention_days": "14", "colour": "red"}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    let body = reply.body;
    assert_eq!(body["valid"], false);
    assert_eq!(body["effects"], json!([]));
    let violation = &body["violations"][0];
    assert_eq!(violation["code"], "validation_error");
    assert_eq!(violation["audit_id"], body["audit_id"]);
    let pointers: Vec<&str> = violation["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["schema_pointer"].as_str().unwrap())
        .collect();
    // Each offending member by its own pointer, the unknown one too.
    assert_eq!(
        pointers,
        [
            "/params/colour",
            "/params/project",
            "/params/retention_days"
        ]
    );
    assert!(violation["details"][0]["message"]
        .as_str()
        .unwrap()
        .contains("colour"));
    let plans: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM plans")
        .fetch_one(gw.state.store.pool())
        .await
        .unwrap();
    assert_eq!(plans, 0);
}

async fn domain_snapshot(gw: &Gateway) -> Vec<String> {
    let pool = gw.state.store.pool();
    let projects: Vec<(String, i64, i64, String)> = sqlx::query_as(
        "SELECT id, revision, retention_days, retention_note FROM projects ORDER BY id",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    let items: Vec<(String, String, i64)> =
        sqlx::query_as("SELECT id, expires_at, legal_hold FROM project_items ORDER BY id")
            .fetch_all(pool)
            .await
            .unwrap();
    let executions: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM execution_audit")
        .fetch_one(pool)
        .await
        .unwrap();
    vec![
        format!("{projects:?}"),
        format!("{items:?}"),
        executions.to_string(),
    ]
}

#[tokio::test]
async fn a_preview_changes_no_domain_table() {
    let gw = Gateway::new().await;
    let before = domain_snapshot(&gw).await;
    gw.dry_run(retention("prj_184", 7)).await;
    gw.dry_run(retention("prj_missing", 7)).await;
    assert_eq!(domain_snapshot(&gw).await, before);
    let audited: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM preview_audit")
        .fetch_one(gw.state.store.pool())
        .await
        .unwrap();
    assert_eq!(audited, 2);
}

async fn poll_since(gw: &Gateway, token: &str, etag: &str) -> crate::common::Reply {
    gw.send(
        Request::get("/v1/approvals?status=pending")
            .header("authorization", format!("Bearer {token}"))
            .header("if-none-match", etag)
            .body(Body::empty())
            .unwrap(),
    )
    .await
}

#[tokio::test]
async fn the_queue_answers_304_until_it_changes() {
    let gw = Gateway::new().await;
    let approver = gw.enroll("Dana").await;
    gw.dry_run(retention("prj_184", 14)).await;
    let first = gw
        .call(
            "GET",
            "/v1/approvals?status=pending",
            Some(&approver.token),
            None,
        )
        .await;
    assert_eq!(first.status, StatusCode::OK);
    assert_eq!(first.headers["x-poll-interval"], "5");
    assert_eq!(first.body["items"].as_array().unwrap().len(), 1);
    let summary = &first.body["items"][0];
    assert_eq!(summary["title"], "Update project settings");
    assert_eq!(summary["subjects_total"], 18);
    assert_eq!(summary["validation_counts"]["warning"], 1);
    let etag = first.headers["etag"].to_str().unwrap().to_owned();

    let again = poll_since(&gw, &approver.token, &etag).await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
    assert_eq!(again.body, Value::Null);

    gw.dry_run(retention("prj_200", 14)).await;
    let changed = poll_since(&gw, &approver.token, &etag).await;
    assert_eq!(changed.status, StatusCode::OK);
    assert_eq!(changed.body["items"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn a_method_a_route_lacks_answers_in_the_error_contract() {
    let gw = Gateway::new().await;
    for (method, uri, allow) in [
        ("DELETE", "/v1/gateway", "GET,HEAD"),
        ("GET", "/v1/plans/plan_x/decisions", "POST"),
        (
            "PUT",
            "/v1/capabilities/projects.settings.update/dry_run",
            "POST",
        ),
    ] {
        let reply = gw.call(method, uri, Some(&gw.agent), None).await;
        assert_error(&reply, "method_not_allowed", 405);
        assert_eq!(reply.headers["allow"], allow, "{method} {uri}");
        let message = reply.body["error"]["message"].as_str().unwrap();
        assert!(message.contains(method), "{message}");
    }
}

/// A request (method, path, token, body) and the status it is answered with.
type Case<'a> = (&'a str, String, Option<&'a str>, Option<Value>, u16);

/// Every plan-bearing route, answered and refused (seed 004: no cache keeps a preview; PROTOCOL
/// section 1): each answer says `Cache-Control: no-store`.
#[tokio::test]
async fn every_answer_says_no_store_errors_included() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let plan = gw
        .preview(
            "groups.members.remove",
            json!({"group": "grp_support", "filter": {"employment": "contractor"}}),
        )
        .await;
    let id = plan["plan_id"].as_str().unwrap();
    let (agent, approver) = (Some(gw.agent.as_str()), Some(dana.token.as_str()));
    let dry_run = "/v1/capabilities/projects.settings.update/dry_run";
    let invoke = "/v1/capabilities/projects.settings.update/invoke";
    let retention = json!({"params": {"project": "prj_184", "retention_days": 14}});
    let subjects = format!("/v1/plans/{id}/effects/eff_1/subjects");
    let cases: Vec<Case> = vec![
        ("POST", dry_run.into(), agent, Some(retention.clone()), 200),
        (
            "POST",
            dry_run.into(),
            agent,
            Some(json!({"params": {"colour": 1}})),
            200,
        ),
        ("POST", dry_run.into(), None, Some(retention.clone()), 401),
        ("POST", invoke.into(), agent, Some(retention), 428),
        (
            "POST",
            invoke.into(),
            agent,
            Some(json!({"plan_id": "plan_none"})),
            404,
        ),
        (
            "GET",
            "/v1/approvals?status=pending".into(),
            approver,
            None,
            200,
        ),
        ("GET", "/v1/approvals?limit=x".into(), approver, None, 422),
        ("GET", format!("/v1/plans/{id}"), approver, None, 200),
        ("GET", format!("/v1/plans/{id}"), agent, None, 200),
        ("GET", "/v1/plans/plan_none".into(), approver, None, 404),
        ("GET", subjects.clone(), approver, None, 200),
        (
            "GET",
            format!("{subjects}?cursor=nonsense"),
            approver,
            None,
            422,
        ),
        (
            "GET",
            format!("/v1/audit?plan_id={id}"),
            approver,
            None,
            200,
        ),
        (
            "GET",
            "/v1/audit?plan_id=plan_none".into(),
            approver,
            None,
            404,
        ),
        (
            "POST",
            format!("/v1/plans/{id}/decisions"),
            approver,
            Some(json!({})),
            422,
        ),
        (
            "POST",
            "/v1/plans/plan_none/refresh".into(),
            approver,
            None,
            404,
        ),
        (
            "POST",
            format!("/v1/plans/{id}/refresh"),
            approver,
            None,
            200,
        ),
        ("PUT", format!("/v1/plans/{id}"), approver, None, 405),
        ("GET", "/v1/nowhere".into(), approver, None, 404),
    ];
    for (method, path, token, body, status) in cases {
        let reply = gw.call(method, &path, token, body).await;
        assert_eq!(
            reply.status.as_u16(),
            status,
            "{method} {path}: {}",
            reply.body
        );
        assert_eq!(
            reply
                .headers
                .get("cache-control")
                .map(|v| v.to_str().unwrap()),
            Some("no-store"),
            "{method} {path} ({status})"
        );
    }
}

/// Seed 000: a body member outside `params` is named by its own pointer, so an agent that sent
/// `dry: true` beside its params (how an accidental dry-run flag arrives) learns which one.
#[tokio::test]
async fn a_member_outside_params_is_named_by_its_pointer() {
    let gw = Gateway::new().await;
    let uri = "/v1/capabilities/projects.settings.update/dry_run";
    for (body, pointer) in [
        (json!({"params": {}, "dry": true}), "/dry"),
        (
            json!({"params": {}, "expected_revisions": 5}),
            "/expected_revisions",
        ),
        (
            json!({"params": {}, "expected_revisions": {"project:5": 7}}),
            "/expected_revisions/project:5",
        ),
        (
            json!({"params": {}, "idempotency_key": []}),
            "/idempotency_key",
        ),
        (json!({"params": {}, "a/b~": 1}), "/a~1b~0"),
    ] {
        let reply = gw
            .call("POST", uri, Some(&gw.agent), Some(body.clone()))
            .await;
        assert_error(&reply, "validation_error", 422);
        let violation = &reply.body["error"]["details"]["violations"][0];
        assert_eq!(violation["schema_pointer"], pointer, "{body}");
        assert_eq!(violation["details"][0]["schema_pointer"], pointer, "{body}");
    }
}
