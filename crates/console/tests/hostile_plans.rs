//! Hostile plans through the console core's real path: bytes served by a loopback "gateway",
//! fetched by `GatewayClient::plan`, reviewed by `plan_view`. Each case (the corpus below) ends in
//! a clear error code or a view that shows the hostile text as data and approves nothing it should
//! not, and every case ends: a hang fails the test at the generous bound of `ENDS_WITHIN`.
//! Subject lists that contradict their digest are checked by `SubjectCheck`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::routing::get;
use axum::Router;
use chrono::{TimeZone, Utc};
use countersign_console::client::GatewayClient;
use countersign_console::console::SubjectCheck;
use countersign_console::review::{plan_view, PlanView};
use countersign_proto::digest::{plan_digest, subjects_digest};
use serde_json::{json, Value};

/// Not a speed target: long enough for a loaded machine, short of a hang.
const ENDS_WITHIN: Duration = Duration::from_secs(120);

const MARKUP: &str = "<img src=x onerror=alert(1)><script>alert(2)</script>";

fn fixture() -> Value {
    let path = format!(
        "{}/../../../shared/fixtures/plan-bulk.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A plan record around `plan`, with the plan's digest made right again: the console's other
/// checks, not the digest, must catch what is wrong with it.
fn record(mut plan: Value) -> Value {
    if let Ok(digest) = plan_digest(&plan) {
        plan["plan_digest"] = json!(digest);
    }
    json!({"plan": plan, "status": "pending_approval",
           "approvals": {"required": 1, "received": []},
           "supersedes": null, "superseded_by": null, "stale": null, "execution": null})
}

fn bytes(value: Value) -> Vec<u8> {
    serde_json::to_vec(&value).unwrap()
}

/// Sets every string member named `field`, at any depth, to `value`.
fn set_all(value: &mut Value, field: &str, to: &Value) {
    match value {
        Value::Object(map) => {
            for (key, member) in map.iter_mut() {
                if key == field && member.is_string() {
                    *member = to.clone();
                } else {
                    set_all(member, field, to);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| set_all(v, field, to)),
        _ => {}
    }
}

fn with(f: impl FnOnce(&mut Value)) -> Value {
    let mut plan = fixture();
    f(&mut plan);
    plan
}

/// How a case must end.
enum Expect {
    /// A clear error with this code.
    Error(&'static str),
    /// A view that may not be approved.
    Refused,
    /// A view that may be approved, with this check on it: odd text is shown as text, and the
    /// plan is still the one signed.
    View(fn(&PlanView)),
}

fn corpus() -> Vec<(&'static str, Vec<u8>, Expect)> {
    let deep = (0..1000).fold(json!("bottom"), |inner, _| json!([inner]));
    let huge = "x".repeat(10 * 1024 * 1024);
    vec![
        (
            "markup in every human string",
            bytes(record(with(|p| {
                for field in ["description", "message", "repair", "title"] {
                    set_all(p, field, &json!(MARKUP));
                }
            }))),
            Expect::View(|view| {
                assert!(view.effects.iter().all(|e| e.description == MARKUP));
                assert!(view.validation.iter().all(|v| v.message == MARKUP));
                assert!(view.digest_matches);
            }),
        ),
        (
            "markup in ids and resources",
            bytes(record(with(|p| {
                p["effects"][0]["resource"] = json!(MARKUP);
                p["caller"]["agent_id"] = json!(MARKUP);
            }))),
            Expect::View(|view| {
                assert_eq!(view.agent_id, MARKUP);
                assert!(view.effects.iter().any(|e| e.resource == MARKUP));
            }),
        ),
        (
            "a 10 MB description",
            bytes(record(with(|p| {
                p["effects"][0]["description"] = json!(huge)
            }))),
            Expect::View(|view| assert_eq!(view.effects[0].description.len(), 10 * 1024 * 1024)),
        ),
        (
            "1,000-deep nesting in a change",
            bytes(record(with(|p| {
                p["effects"][0]["changes"] = json!([{"path": "/x", "before": null, "after": deep}])
            }))),
            Expect::Error("protocol_error"),
        ),
        (
            "invalid UTF-8 in a string",
            {
                let mut raw = bytes(record(fixture()));
                let at = raw.windows(5).position(|w| w == b"Email").unwrap();
                raw[at] = 0xff;
                raw
            },
            Expect::Error("protocol_error"),
        ),
        (
            "a key twice",
            {
                let text = String::from_utf8(bytes(record(fixture()))).unwrap();
                text.replacen("\"plan_id\":", "\"plan_id\":\"plan_other\",\"plan_id\":", 1)
                    .into_bytes()
            },
            Expect::Error("protocol_error"),
        ),
        (
            "a number beyond f64",
            {
                let text = String::from_utf8(bytes(record(fixture()))).unwrap();
                text.replacen("\"total\":37", "\"total\":1e400", 1)
                    .into_bytes()
            },
            Expect::Error("protocol_error"),
        ),
        (
            "a subject total beyond u64",
            {
                let text = String::from_utf8(bytes(record(fixture()))).unwrap();
                text.replacen("\"total\":37", "\"total\":18446744073709551616", 1)
                    .into_bytes()
            },
            Expect::Error("protocol_error"),
        ),
        (
            "a negative cost",
            bytes(record(with(|p| {
                p["estimated_cost"]["amount_max"] = json!("-5.00")
            }))),
            Expect::Refused,
        ),
        (
            "credits with 30 decimals",
            bytes(record(with(|p| {
                p["estimated_cost"]["amount_max"] = json!("0.000000000000000000000000000001")
            }))),
            Expect::Error("protocol_error"),
        ),
        (
            "credits finer than hundredths",
            bytes(record(with(|p| {
                p["estimated_cost"]["amount_max"] = json!("0.375")
            }))),
            Expect::Refused,
        ),
        (
            "a minimum above the maximum",
            bytes(record(with(|p| {
                p["estimated_cost"]["amount_min"] = json!("9.00");
                p["estimated_cost"]["amount_max"] = json!("0.37");
            }))),
            Expect::Refused,
        ),
        (
            "an unknown currency",
            bytes(record(with(|p| {
                p["estimated_cost"]["currency"] = json!("EUR")
            }))),
            Expect::Refused,
        ),
        (
            "unknown fields everywhere",
            bytes(record(with(|p| {
                p["x_unknown"] = json!({"nested": [1, 2]});
                p["effects"][0]["x_unknown"] = json!(true);
                p["estimated_cost"]["x_unknown"] = json!("?");
            }))),
            Expect::View(|view| assert_eq!(view.effects.len(), 4)),
        ),
        (
            "an effect whose cause is missing",
            bytes(record(with(|p| {
                p["effects"][1]["cause"] = json!("eff_404")
            }))),
            Expect::Refused,
        ),
        (
            "effects whose causes form a cycle",
            bytes(record(with(|p| {
                p["effects"][0]["cause"] = json!("eff_2");
                p["effects"][0]["derived"] = json!(true);
                p["effects"][1]["cause"] = json!("eff_1");
            }))),
            Expect::Refused,
        ),
        (
            "a plan that is not an object",
            bytes(json!({"plan": [1, 2, 3], "status": "pending_approval"})),
            Expect::Error("protocol_error"),
        ),
    ]
}

async fn serve(body: Arc<Mutex<Vec<u8>>>) -> String {
    let router = Router::new().route(
        "/v1/plans/{id}",
        get(move || {
            let body = body.clone();
            async move {
                let bytes = body.lock().unwrap().clone();
                ([("content-type", "application/json")], bytes)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    url
}

#[tokio::test]
async fn every_hostile_plan_ends_in_a_clear_error_or_a_safe_view() {
    let body = Arc::new(Mutex::new(Vec::new()));
    let client = GatewayClient::new(&serve(body.clone()).await, Some("tok".into())).unwrap();
    let now = Utc.with_ymd_and_hms(2026, 11, 30, 10, 5, 0).unwrap();
    for (name, bytes, expect) in corpus() {
        *body.lock().unwrap() = bytes;
        let outcome = tokio::time::timeout(ENDS_WITHIN, async {
            client
                .plan("plan_7f4c2a9e1d3b5a60")
                .await
                .map(|fetched| plan_view(&fetched, None, Some("apr_reviewer"), now))
        })
        .await
        .unwrap_or_else(|_| panic!("{name}: no answer within {ENDS_WITHIN:?}"));
        match (expect, outcome) {
            (Expect::Error(code), Err(e)) => assert_eq!(e.view().code, code, "{name}: {e}"),
            (Expect::Refused, Ok(view)) => {
                assert!(!view.approvable, "{name}: approvable");
                assert!(view.not_approvable_reason.is_some(), "{name}");
            }
            (Expect::View(check), Ok(view)) => {
                assert!(view.approvable, "{name}: {:?}", view.not_approvable_reason);
                check(&view)
            }
            (_, Err(e)) => panic!("{name}: refused with {e}"),
            (_, Ok(view)) => panic!("{name}: reviewed as {:?}", view.not_approvable_reason),
        }
    }
}

#[test]
fn subject_lists_that_contradict_their_digest_fail_the_check() {
    let ids: Vec<String> = (1..=37).map(|n| format!("usr_{n:02}")).collect();
    let digest = subjects_digest(&ids);
    let check = |list: &[String], total: u64| {
        SubjectCheck::of(
            "plan_x",
            "eff_1",
            total,
            &digest,
            list.iter().map(String::as_str),
        )
    };
    assert!(check(&ids, 37).matches);
    let mut reordered = ids.clone();
    reordered.swap(0, 1);
    let mut doubled = ids.clone();
    doubled[36] = doubled[35].clone();
    let mut swapped = ids.clone();
    swapped[5] = "usr_99".to_owned();
    for (what, list, total) in [
        ("out of order", reordered, 37),
        ("one twice", doubled, 37),
        ("one swapped", swapped, 37),
        ("one missing", ids[..36].to_vec(), 37),
        ("a total that lies", ids.clone(), 38),
    ] {
        assert!(!check(&list, total).matches, "{what}");
    }
}
