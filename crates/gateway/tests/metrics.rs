//! `GET /metrics` after a scripted lifecycle: exactly its counts, in an exposition a Prometheus
//! parser reads, with no id, token or name in any label. Each test runs in a process of its own
//! (nextest), so the process's one recorder holds this test's counts alone.

use axum::http::StatusCode;
use countersign_proto::decision::Decision;
use prometheus_parse::{Sample, Scrape, Value as Metric};
use serde_json::json;

use crate::common::{approve_by, retention, Gateway, RETENTION};

async fn scrape(gw: &Gateway) -> Scrape {
    let reply = gw.call("GET", "/metrics", None, None).await;
    assert_eq!(reply.status, StatusCode::OK);
    let text = reply
        .body
        .as_str()
        .expect("the exposition is text")
        .to_owned();
    let lines = text.lines().map(|l| Ok(l.to_owned()));
    Scrape::parse(lines).expect("a Prometheus text exposition")
}

/// The value of the one sample `name` with exactly these labels among its own.
fn value(scrape: &Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    let matching: Vec<&Sample> = scrape
        .samples
        .iter()
        .filter(|s| s.metric == name)
        .filter(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .collect();
    match matching[..] {
        [sample] => match &sample.value {
            Metric::Counter(v) | Metric::Gauge(v) | Metric::Untyped(v) => *v,
            Metric::Histogram(_) | Metric::Summary(_) => panic!("{name} is not a number"),
        },
        [] => 0.0,
        _ => panic!("{} samples of {name} {labels:?}", matching.len()),
    }
}

/// How many observations histogram `name` holds under `labels`.
fn observed(scrape: &Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    value(scrape, &format!("{name}_count"), labels)
}

#[tokio::test]
async fn a_scrape_after_a_lifecycle_counts_exactly_what_happened() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let executed = gw.preview(RETENTION, retention("prj_184", 14)).await;
    let stale = gw.preview(RETENTION, retention("prj_184", 13)).await;
    let rejected = gw.preview(RETENTION, retention("prj_311", 12)).await;
    let expired = gw.preview(RETENTION, retention("prj_311", 11)).await;
    approve_by(&gw, &executed, &[&dana]).await;
    assert_eq!(gw.execute(&executed).await.status, StatusCode::OK);
    let mut no = dana.statement(&gw, &rejected);
    no.decision = Decision::Reject;
    no.reason = Some("Not this week".into());
    let id = rejected["plan_id"].as_str().unwrap();
    let no = dana.send(&gw, id, &dana.sign(&no)).await;
    assert_eq!(no.status, StatusCode::OK, "{}", no.body);
    let id = executed["plan_id"].as_str().unwrap();
    let again = dana
        .send(&gw, id, &dana.sign(&dana.statement(&gw, &executed)))
        .await;
    assert_eq!(again.status, StatusCode::FORBIDDEN, "{}", again.body);
    gw.expire(expired["plan_id"].as_str().unwrap()).await;
    countersign_engine::queue::sweep(&gw.state.store, gw.state.registry)
        .await
        .unwrap();
    let record = gw
        .record(&dana.token, stale["plan_id"].as_str().unwrap())
        .await;
    assert_eq!(
        record.body["status"], "stale",
        "the premise: executing one made the other stale"
    );
    let unknown = gw.tool(&gw.agent, "no_such_tool", json!({})).await;
    assert_eq!(unknown["result"]["isError"], true, "{unknown}");

    let scrape = scrape(&gw).await;
    let capability = [("capability", RETENTION)];
    assert_eq!(
        value(&scrape, "countersign_plans_created_total", &capability),
        4.0
    );
    for (status, times) in [
        ("approved", 1.0),
        ("executed", 1.0),
        ("stale", 1.0),
        ("rejected", 1.0),
        ("expired", 1.0),
        ("pending_approval", 0.0),
    ] {
        let labels = [("capability", RETENTION), ("status", status)];
        let counted = value(&scrape, "countersign_plan_transitions_total", &labels);
        assert_eq!(counted, times, "{status}");
    }
    assert_eq!(
        observed(&scrape, "countersign_plan_decision_seconds", &capability),
        2.0
    );
    assert_eq!(
        observed(&scrape, "countersign_plan_execution_seconds", &capability),
        1.0
    );
    // The stale plan waits still, until it is refreshed or expires.
    assert_eq!(
        value(&scrape, "countersign_plans_pending", &capability),
        1.0
    );
    let refused = [("code", "not_eligible")];
    assert_eq!(
        value(&scrape, "countersign_decisions_refused_total", &refused),
        1.0
    );
    let decisions = |status| {
        let labels = [
            ("route", "/v1/plans/:id/decisions"),
            ("method", "POST"),
            ("status", status),
        ];
        value(&scrape, "countersign_http_requests_total", &labels)
    };
    assert_eq!((decisions("200"), decisions("403")), (2.0, 1.0));
    assert_eq!(
        observed(
            &scrape,
            "countersign_http_request_duration_seconds",
            &[("route", "/v1/plans/:id/decisions"), ("method", "POST")]
        ),
        3.0
    );
    let mcp = [("tool", "unknown"), ("outcome", "not_found")];
    assert_eq!(value(&scrape, "countersign_mcp_calls_total", &mcp), 1.0);
    // Four plans' policies were evaluated, and none failed.
    assert!(observed(&scrape, "countersign_policy_evaluation_seconds", &[]) >= 4.0);
    assert_eq!(value(&scrape, "countersign_policy_errors_total", &[]), 0.0);
    assert!(observed(&scrape, "countersign_store_write_seconds", &[]) > 0.0);
    assert_eq!(
        value(&scrape, "countersign_mail_outbox", &[("state", "held")]),
        0.0
    );

    let labels: Vec<(&str, String)> = scrape
        .samples
        .iter()
        .flat_map(|s| {
            s.labels
                .iter()
                .map(|(k, v)| (&*s.metric, format!("{k}={v}")))
        })
        .collect();
    assert!(labels.len() > 20, "{labels:?}");
    for (metric, label) in &labels {
        for secret in [
            "plan_", "apr_", "agt_", "key_", "csa_", "csk_", "Dana", "trc_",
        ] {
            assert!(
                !label.contains(secret),
                "{metric}'s label {label} carries {secret}"
            );
        }
    }
}

#[tokio::test]
async fn metrics_are_served_without_a_token_beside_the_api() {
    let gw = Gateway::new().await;
    let reply = gw.call("GET", "/metrics", None, None).await;
    assert_eq!(reply.status, StatusCode::OK);
    let content_type = reply.headers["content-type"].to_str().unwrap();
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
}
