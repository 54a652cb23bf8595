//! Caps hold on every path, and the writer is not held hostage: refresh is held to the caps net of
//! the plan it replaces and frees that plan's subject rows at once; a preview is evaluated off the
//! writer, after a cheap cap check, with a bounded number in flight per agent; enrollment looks
//! its code up before taking the writer; made-up tokens pay their peer's bucket before the store
//! is read, IPv6 peers by their /64; approvers are rate-limited, refreshes included, and hold a
//! bounded number of event streams; MCP waits are bounded per agent.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::sse::Events;
use crate::common::{approve_by, assert_error, retention, Gateway, RETENTION};
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode};
use countersign_engine::{Limits, Registry};
use countersign_pack::{
    build, ApiResult, ApprovalRule, BoxFuture, Definition, EffectProfile, Handle, Kind, Pack,
    Planned,
};
use countersign_proto::describe::{CostClass, Describe, DryRunMode, Preflight};
use countersign_proto::plan::EffectKind;
use countersign_proto::Credits;
use serde_json::{json, Value};
use tokio::sync::Semaphore;

const REMOVE: &str = "groups.members.remove";

/// A capability whose evaluation counts itself and waits until the test lets it go: to see
/// whether a preview was evaluated, and to hold one mid-evaluation.
struct Held {
    evaluations: AtomicUsize,
    release: Semaphore,
}

struct Probe(Arc<Held>);

impl Definition for Probe {
    fn id(&self) -> &'static str {
        "probe.held"
    }
    fn title(&self) -> &'static str {
        "Evaluate slowly"
    }
    fn describe(&self) -> Describe {
        build::describe(
            self.id(),
            self.title(),
            json!({"type": "object", "additionalProperties": false, "properties": {}}),
            DryRunMode::Required,
            (Preflight::Estimate, CostClass::Free),
            1,
        )
    }
    fn approval(&self) -> ApprovalRule {
        ApprovalRule::Always
    }
    fn effects(&self) -> EffectProfile {
        EffectProfile {
            kinds: &[EffectKind::Update],
            irreversible: false,
            external: false,
        }
    }
    fn plan<'a>(
        &'a self,
        _handle: &'a mut Handle<'_>,
        _params: &'a Value,
    ) -> BoxFuture<'a, ApiResult<Planned>> {
        Box::pin(async move {
            self.0.evaluations.fetch_add(1, Ordering::SeqCst);
            let _go = self.0.release.acquire().await.expect("open");
            Ok(build::nothing(Credits::cents(0)))
        })
    }
}

impl countersign_pack::WorldCapability for Probe {
    fn apply<'a>(
        &'a self,
        _handle: &'a mut Handle<'_>,
        _params: &'a Value,
        _planned: &'a Planned,
        _execution: countersign_pack::Execution<'a>,
    ) -> BoxFuture<'a, ApiResult<countersign_pack::Applied>> {
        Box::pin(async move { Ok(Default::default()) })
    }
}

/// The demo gateway with the held probe beside its packs.
async fn with_probe(limits: Limits) -> (Gateway, Arc<Held>) {
    let held = Arc::new(Held {
        evaluations: AtomicUsize::new(0),
        release: Semaphore::new(0),
    });
    let registry = Registry::new(vec![
        countersign_demo_world::pack(),
        countersign_engine::builtin_pack(),
        Pack::new("probe", vec![Kind::World(Box::new(Probe(held.clone())))]),
    ])
    .unwrap()
    .leak();
    (Gateway::serving_apart(limits, registry).await, held)
}

async fn probe(gw: &Gateway) -> crate::common::Reply {
    gw.try_preview("probe.held", json!({})).await
}

/// A probe that should be answered without being evaluated (so without waiting to be let go).
async fn probe_refused(gw: &Gateway) -> crate::common::Reply {
    tokio::time::timeout(Duration::from_secs(10), probe(gw))
        .await
        .expect("answered without waiting for the evaluation")
}

/// Waits until the probe has been entered `n` times.
async fn entered(held: &Held, n: usize) {
    tokio::time::timeout(Duration::from_secs(10), async {
        while held.evaluations.load(Ordering::SeqCst) < n {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the evaluation started");
}

#[tokio::test]
async fn a_preview_is_evaluated_off_the_writer_and_a_decision_lands_meanwhile() {
    let (gw, held) = with_probe(Limits::default()).await;
    let gw = Arc::new(gw);
    let dana = gw.enroll("Dana").await;
    let plan = gw.preview(RETENTION, retention("prj_184", 14)).await;
    let previewing = tokio::spawn({
        let gw = gw.clone();
        async move { probe(&gw).await }
    });
    entered(&held, 1).await;
    // The evaluation is held mid-way: a decision, which takes the writer, still lands.
    let decided = tokio::time::timeout(Duration::from_secs(10), approve_by(&gw, &plan, &[&dana]))
        .await
        .expect("the decision did not wait for the evaluation");
    assert_eq!(decided.body["status"], "approved");
    held.release.add_permits(1);
    let previewed = previewing.await.unwrap();
    assert_eq!(previewed.status, StatusCode::OK, "{}", previewed.body);
}

#[tokio::test]
async fn an_agent_has_a_bounded_number_of_previews_in_flight() {
    let (gw, held) = with_probe(Limits {
        max_previews_in_flight: 1,
        ..Limits::default()
    })
    .await;
    let gw = Arc::new(gw);
    let first = tokio::spawn({
        let gw = gw.clone();
        async move { probe(&gw).await }
    });
    entered(&held, 1).await;
    let second = probe_refused(&gw).await;
    assert_error(&second, "rate_limited", 429);
    assert_eq!(held.evaluations.load(Ordering::SeqCst), 1, "not evaluated");
    held.release.add_permits(2);
    assert_eq!(first.await.unwrap().status, StatusCode::OK);
    assert_eq!(
        probe(&gw).await.status,
        StatusCode::OK,
        "a place is free again"
    );
}

#[tokio::test]
async fn an_agent_at_a_cap_is_refused_before_its_request_is_evaluated() {
    let (gw, held) = with_probe(Limits {
        max_pending_plans: 1,
        ..Limits::default()
    })
    .await;
    gw.preview(RETENTION, retention("prj_184", 14)).await;
    let refused = probe_refused(&gw).await;
    assert_error(&refused, "quota_exceeded", 429);
    assert_eq!(held.evaluations.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_refresh_is_held_to_the_caps_net_of_the_plan_it_replaces() {
    let gw = Gateway::limited(Limits {
        max_pending_plans: 1,
        ..Limits::default()
    })
    .await;
    let dana = gw.enroll("Dana").await;
    let first = gw.preview(RETENTION, retention("prj_184", 14)).await;
    let refresh = |id: &Value| format!("/v1/plans/{}/refresh", id.as_str().unwrap());
    // Replacing the one waiting plan takes its place: allowed.
    let second = gw
        .call("POST", &refresh(&first["plan_id"]), Some(&dana.token), None)
        .await;
    assert_eq!(second.status, StatusCode::OK, "{}", second.body);
    // An expired plan holds no place: refreshing it would be a new one past the cap.
    gw.expire(second.body["plan"]["plan_id"].as_str().unwrap())
        .await;
    let third = gw.preview(RETENTION, retention("prj_311", 7)).await;
    assert_eq!(third["would_require_approval"], true);
    let grown = gw
        .call(
            "POST",
            &refresh(&second.body["plan"]["plan_id"]),
            Some(&dana.token),
            None,
        )
        .await;
    assert_error(&grown, "quota_exceeded", 429);
}

#[tokio::test]
async fn a_replaced_plans_subject_rows_are_freed_at_once() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let old = gw
        .preview(
            REMOVE,
            json!({"group": "grp_support", "filter": {"employment": "contractor"}}),
        )
        .await;
    let old_id = old["plan_id"].as_str().unwrap();
    let rows = "SELECT COUNT(*) FROM plan_subjects WHERE plan_id = $1";
    assert!(gw.count(rows, old_id).await > 0);
    let fresh = gw.refresh(&dana.token, old_id).await;
    assert_eq!(fresh.status, StatusCode::OK, "{}", fresh.body);
    assert_eq!(gw.count(rows, old_id).await, 0);
    let held = "SELECT subject_rows FROM plans WHERE id = $1";
    assert_eq!(gw.count(held, old_id).await, 0);
    let page = gw
        .call(
            "GET",
            &format!("/v1/plans/{old_id}/effects/eff_1/subjects"),
            Some(&dana.token),
            None,
        )
        .await;
    assert_error(&page, "plan_not_pending", 409);
}

#[tokio::test]
async fn enrollment_looks_its_code_up_before_taking_the_writer() {
    let gw =
        Gateway::serving_apart(Limits::default(), countersign_embedded::default_registry()).await;
    let writer = gw.state.store.write().await.unwrap();
    let reply = tokio::time::timeout(
        Duration::from_secs(10),
        gw.call(
            "POST",
            "/v1/approvers/enroll",
            None,
            Some(json!({"enrollment_code": "cse_made_up", "public_key":
                "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"})),
        ),
    )
    .await
    .expect("a made-up code is refused while the writer is busy");
    assert_error(&reply, "unauthenticated", 401);
    drop(writer);
}

/// A request to `/v1/approvals` from `peer` with `token`.
async fn from_peer(gw: &Gateway, peer: &str, token: &str) -> crate::common::Reply {
    let mut request = Request::get("/v1/approvals")
        .header("authorization", format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    let addr: SocketAddr = peer.parse().unwrap();
    request.extensions_mut().insert(ConnectInfo(addr));
    gw.send(request).await
}

#[tokio::test]
async fn made_up_tokens_pay_their_peers_bucket_before_the_store_is_read() {
    let gw = Gateway::limited(Limits {
        rate: Some("1/2".parse().unwrap()),
        ..Limits::default()
    })
    .await;
    let peer = "192.0.2.7:4000";
    for n in 0..2 {
        let reply = from_peer(&gw, peer, &format!("csp_made_up_{n}")).await;
        assert_error(&reply, "unauthenticated", 401);
    }
    // With the store gone, a made-up token past its peer's rate is still answered: it never
    // reached the store.
    gw.state.store.close().await;
    let refused = from_peer(&gw, peer, "csp_made_up_3").await;
    assert_error(&refused, "rate_limited", 429);
}

#[tokio::test]
async fn ipv6_peers_share_the_bucket_of_their_64() {
    let gw = Gateway::limited(Limits {
        rate: Some("1/2".parse().unwrap()),
        ..Limits::default()
    })
    .await;
    let addresses = [
        "[2001:db8:5:6::1]:1",
        "[2001:db8:5:6::2]:1",
        "[2001:db8:5:6:ffff::9]:1",
    ];
    let codes: Vec<StatusCode> = futures_util::future::join_all(
        addresses
            .iter()
            .map(|peer| from_peer(&gw, peer, "csp_made_up")),
    )
    .await
    .into_iter()
    .map(|r| r.status)
    .collect();
    assert_eq!(
        codes.last(),
        Some(&StatusCode::TOO_MANY_REQUESTS),
        "{codes:?}"
    );
    let other_net = from_peer(&gw, "[2001:db8:5:7::1]:1", "csp_made_up").await;
    assert_error(&other_net, "unauthenticated", 401);
}

#[tokio::test]
async fn an_approvers_refresh_counts_toward_their_rate() {
    let gw = Gateway::limited(Limits {
        approver_rate: Some("1/3".parse().unwrap()),
        ..Limits::default()
    })
    .await;
    let dana = gw.enroll("Dana").await;
    let plan = gw.preview(RETENTION, retention("prj_184", 14)).await;
    let uri = format!("/v1/plans/{}", plan["plan_id"].as_str().unwrap());
    for _ in 0..2 {
        let read = gw.call("GET", &uri, Some(&dana.token), None).await;
        assert_eq!(read.status, StatusCode::OK);
    }
    let refresh = gw
        .call("POST", &format!("{uri}/refresh"), Some(&dana.token), None)
        .await;
    assert_eq!(refresh.status, StatusCode::OK, "{}", refresh.body);
    let over = gw
        .call("POST", &format!("{uri}/refresh"), Some(&dana.token), None)
        .await;
    assert_error(&over, "rate_limited", 429);
}

#[tokio::test]
async fn an_approver_holds_a_bounded_number_of_event_streams() {
    let gw = Gateway::limited(Limits {
        max_streams: 2,
        ..Limits::default()
    })
    .await;
    let dana = gw.enroll("Dana").await;
    let first = Events::open(&gw, &dana.token, None).await;
    let _second = Events::open(&gw, &dana.token, None).await;
    let third = tokio::time::timeout(
        Duration::from_secs(10),
        gw.call("GET", "/v1/events", Some(&dana.token), None),
    )
    .await
    .expect("refused, not opened");
    assert_error(&third, "rate_limited", 429);
    drop(first);
    let again = Events::open(&gw, &dana.token, None).await;
    drop(again);
}

#[tokio::test]
async fn an_agent_holds_a_bounded_number_of_mcp_waits() {
    let gw = Arc::new(
        Gateway::limited(Limits {
            max_waits: 2,
            ..Limits::default()
        })
        .await,
    );
    let plan = gw.preview(RETENTION, retention("prj_184", 14)).await;
    let wait = json!({"plan_id": plan["plan_id"], "timeout_seconds": 3});
    let mut open = Vec::new();
    for _ in 0..2 {
        let (gw, wait) = (gw.clone(), wait.clone());
        open.push(tokio::spawn(async move {
            gw.tool(&gw.agent, "countersign_wait", wait).await
        }));
    }
    // Both waits are held before the third is asked for, whatever the scheduler does.
    let agent = plan["caller"]["agent_id"].as_str().unwrap();
    while gw.state.waits.open(agent) < 2 {
        tokio::task::yield_now().await;
    }
    let third = gw.tool(&gw.agent, "countersign_wait", wait.clone()).await;
    assert_eq!(third["result"]["isError"], true, "{third}");
    assert_eq!(
        third["result"]["structuredContent"]["error"]["code"],
        "rate_limited"
    );
    for waiting in open {
        let answer = waiting.await.unwrap();
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }
}

#[tokio::test]
async fn mcp_refuses_a_body_that_names_a_key_twice() {
    let gw = Gateway::new().await;
    let body = r#"{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params":
        {"name": "countersign_wait", "name": "projects.settings.update", "arguments": {}}}"#;
    let request = Request::post("/mcp")
        .header("host", "gateway.example")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {}", gw.agent))
        .body(Body::from(body))
        .unwrap();
    assert_error(&gw.send(request).await, "validation_error", 422);
}
