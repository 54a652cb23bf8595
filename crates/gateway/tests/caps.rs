//! Caps on a hostile agent: live plans and stored subject rows per agent (`quota_exceeded`), the
//! sweep that frees closed plans' subject rows and the rows a preview staged and never stored,
//! and requests per second per token (`rate_limited` with `Retry-After`).

use std::net::SocketAddr;

use crate::common::{approve_by, assert_error, retention, Gateway, RETENTION};
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode};
use countersign_engine::{execution::quotas, Limits};
use serde_json::{json, Value};

const REMOVE: &str = "groups.members.remove";

fn contractors() -> Value {
    json!({"group": "grp_support", "filter": {"employment": "contractor"}})
}

async fn count(gw: &Gateway, sql: &str) -> i64 {
    sqlx::query_scalar(sql)
        .fetch_one(gw.state.store.pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn the_pending_plan_cap_refuses_and_writes_nothing() {
    let gw = Gateway::limited(Limits {
        max_pending_plans: 2,
        ..Limits::default()
    })
    .await;
    for days in [10, 11] {
        gw.preview(
            RETENTION,
            json!({"project": "prj_311", "retention_days": days}),
        )
        .await;
    }
    let plans = count(&gw, "SELECT COUNT(*) FROM plans").await;
    let audits = count(&gw, "SELECT COUNT(*) FROM preview_audit").await;
    let refused = gw.try_preview(RETENTION, retention("prj_311", 12)).await;
    assert_error(&refused, "quota_exceeded", 429);
    let details = &refused.body["error"]["details"];
    assert_eq!(details["quota"], "pending_plans");
    assert_eq!(
        (details["limit"].clone(), details["in_use"].clone()),
        (json!(2), json!(2))
    );
    assert_eq!(count(&gw, "SELECT COUNT(*) FROM plans").await, plans);
    assert_eq!(
        count(&gw, "SELECT COUNT(*) FROM preview_audit").await,
        audits
    );

    // A plan that needs nobody is not a pending plan, and is not capped by it.
    let upload = gw.try_preview(
        "documents.document.upload",
        json!({"project": "prj_421", "filename": "a.md", "mime_type": "text/markdown", "size_bytes": 1}),
    )
    .await;
    assert_eq!(upload.status, StatusCode::OK, "{}", upload.body);
}

#[tokio::test]
async fn a_decided_plan_frees_its_place_under_the_pending_cap() {
    let gw = Gateway::limited(Limits {
        max_pending_plans: 1,
        ..Limits::default()
    })
    .await;
    let dana = gw.enroll("Dana").await;
    let first = gw.preview(RETENTION, retention("prj_311", 10)).await;
    let second = retention("prj_311", 11);
    assert_error(
        &gw.try_preview(RETENTION, second.clone()).await,
        "quota_exceeded",
        429,
    );
    approve_by(&gw, &first, &[&dana]).await;
    let reply = gw.try_preview(RETENTION, second).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
}

#[tokio::test]
async fn the_subject_row_cap_refuses_a_plan_that_would_overflow_it() {
    // grp_support's contractor removal stores 37 + 6 + 4 subject rows (its notification names
    // the 37 it removes, and reads their rows).
    let gw = Gateway::limited(Limits {
        max_subject_rows: 90,
        ..Limits::default()
    })
    .await;
    let first = gw.try_preview(REMOVE, contractors()).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    let held = count(&gw, "SELECT COUNT(*) FROM plan_subjects").await;
    assert!(held > 0 && held <= 100, "{held}");
    let second = gw.try_preview(REMOVE, contractors()).await;
    assert_error(&second, "quota_exceeded", 429);
    assert_eq!(second.body["error"]["details"]["quota"], "subject_rows");
    assert_eq!(second.body["error"]["details"]["in_use"], held);
    assert_eq!(count(&gw, "SELECT COUNT(*) FROM plan_subjects").await, held);
}

fn all_staff_contractors() -> Value {
    json!({"group": "grp_all_staff", "filter": {"employment": "contractor"}})
}

#[tokio::test]
async fn a_large_plans_staged_subject_rows_are_its_own_or_gone() {
    // 16,666 rows (11,111 contractors, whose notices read their rows, and the VPN entitlements
    // of half of them): staged before the plan, in batches. The cap lets the first plan in and
    // refuses the second only once it is evaluated and staged.
    let gw = Gateway::limited(Limits {
        max_subject_rows: 30_000,
        ..Limits::default()
    })
    .await;
    let first = gw.try_preview(REMOVE, all_staff_contractors()).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    let plan_id = first.body["plan_id"].as_str().unwrap();
    let held = count(&gw, "SELECT COUNT(*) FROM plan_subjects").await;
    assert_eq!(held, 16_666);
    assert_eq!(count(&gw, &rows(plan_id)).await, held);
    let recorded = format!("SELECT subject_rows FROM plans WHERE id = '{plan_id}'");
    assert_eq!(count(&gw, &recorded).await, held);
    let staging = "SELECT COUNT(*) FROM subject_staging";
    assert_eq!(
        count(&gw, staging).await,
        0,
        "the stored plan took its rows"
    );

    // The second one is staged too, then refused by the cap: what it staged goes with it.
    let second = gw.try_preview(REMOVE, all_staff_contractors()).await;
    assert_error(&second, "quota_exceeded", 429);
    assert_eq!(count(&gw, "SELECT COUNT(*) FROM plan_subjects").await, held);
    assert_eq!(count(&gw, staging).await, 0);
}

/// A removal's notification names exactly the people it removes: one set, whose rows are stored
/// once (written with the plan, or staged before it) and served as the pages of both effects.
#[tokio::test]
async fn effects_naming_one_set_share_its_rows() {
    let gw = Gateway::new().await;
    for (params, stored) in [
        (contractors(), 37 + 6 + 4),
        (all_staff_contractors(), 16_666),
    ] {
        let plan = gw.preview(REMOVE, params).await;
        let plan_id = plan["plan_id"].as_str().unwrap();
        let effects = plan["effects"].as_array().unwrap();
        let (removal, notice) = (&effects[0], effects.last().unwrap());
        assert_eq!(notice["type"], "notification_queued");
        assert_eq!(notice["subjects"]["digest"], removal["subjects"]["digest"]);
        assert_eq!(count(&gw, &rows(plan_id)).await, stored);
        let recorded = format!("SELECT subject_rows FROM plans WHERE id = '{plan_id}'");
        assert_eq!(count(&gw, &recorded).await, stored);
        let pages = |effect_id| gw.subject_items(&gw.agent, plan_id, effect_id, 5000);
        let removed = pages("eff_1").await;
        assert_eq!(json!(removed.len()), removal["subjects"]["total"]);
        assert_eq!(pages(notice["id"].as_str().unwrap()).await, removed);
    }
}

#[tokio::test]
async fn the_sweep_deletes_rows_staged_for_a_plan_never_stored_and_no_others() {
    let gw = Gateway::new().await;
    let stored = gw.preview(REMOVE, contractors()).await;
    let stored = stored["plan_id"].as_str().unwrap();
    let kept = count(&gw, &rows(stored)).await;
    // A gateway that stopped half-way through a preview: a marker ten minutes old and its rows;
    // and a stale marker naming a stored plan, whose rows are that plan's.
    let mut w = gw.state.store.write().await.unwrap();
    for (plan_id, at) in [
        ("plan_abandoned", "2026-01-01T00:00:00Z"),
        (stored, "2026-01-01T00:00:01Z"),
    ] {
        sqlx::query("INSERT INTO subject_staging (plan_id, started_at) VALUES ($1, $2)")
            .bind(plan_id)
            .bind(at)
            .execute(&mut *w.tx)
            .await
            .unwrap();
    }
    for n in 0..1_200 {
        sqlx::query(
            "INSERT INTO plan_subjects (plan_id, effect_id, subject_id, label)
             VALUES ('plan_abandoned', 'eff_1', $1, 'someone')",
        )
        .bind(format!("usr_x{n}"))
        .execute(&mut *w.tx)
        .await
        .unwrap();
    }
    w.commit().await.unwrap();

    countersign_engine::plan::staging::sweep(&gw.state.store)
        .await
        .unwrap();
    assert_eq!(count(&gw, &rows("plan_abandoned")).await, 0);
    let left = "SELECT COUNT(*) FROM subject_staging";
    assert_eq!(count(&gw, left).await, 1);
    countersign_engine::plan::staging::sweep(&gw.state.store)
        .await
        .unwrap();
    assert_eq!(count(&gw, left).await, 0);
    assert_eq!(count(&gw, &rows(stored)).await, kept);
}

#[tokio::test]
async fn swept_subject_rows_are_gone_while_the_plan_record_remains() {
    let dir = tempfile::tempdir().unwrap();
    let url =
        crate::common::demo_database(&format!("sqlite://{}", dir.path().join("gw.db").display()))
            .await;
    let gw = Gateway::at(&url).await;
    let dana = gw.enroll("Dana").await;
    let plan = gw.preview(REMOVE, contractors()).await;
    let plan_id = plan["plan_id"].as_str().unwrap().to_owned();
    let live = gw.preview(REMOVE, contractors()).await;
    let mut statement = dana.statement(&gw, &plan);
    statement.decision = countersign_proto::decision::Decision::Reject;
    statement.reason = Some("Not these people.".to_owned());
    let rejected = dana.send(&gw, &plan_id, &dana.sign(&statement)).await;
    assert_eq!(rejected.body["status"], "rejected", "{}", rejected.body);
    let total = count(&gw, &rows(&plan_id)).await;
    assert!(total > 10);
    // Within its lifetime a closed plan keeps its subjects for review.
    assert_eq!(
        quotas::sweep_subjects(&gw.state.store, 1000).await.unwrap(),
        0
    );
    let token = dana.token.clone();
    // The gateway's own sweeper goes with its engine; this store sweeps by hand, pass by pass,
    // once the plan's lifetime is over. A sweep the sweeper had begun holds the engine until it
    // ends (under load it ended between the two passes below and took their rows): wait for it.
    let engine = std::sync::Arc::downgrade(&gw.state.engine);
    drop(gw);
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while engine.strong_count() > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the engine is still held 10 s after its gateway was dropped"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let store = countersign_engine::Store::open(&url).await.unwrap();
    let mut w = store.write().await.unwrap();
    sqlx::query("UPDATE plans SET expires_at = '2026-01-01T00:00:00Z' WHERE id = $1")
        .bind(&plan_id)
        .execute(&mut *w.tx)
        .await
        .unwrap();
    w.commit().await.unwrap();
    let held = |id: String| {
        let pool = store.pool().clone();
        async move {
            let n: i64 = sqlx::query_scalar(&rows(&id))
                .fetch_one(&pool)
                .await
                .unwrap();
            n
        }
    };

    // Bounded per pass: ten rows now, the rest on later passes.
    assert_eq!(quotas::sweep_subjects(&store, 10).await.unwrap(), 10);
    assert_eq!(held(plan_id.clone()).await, total - 10);
    let freed = quotas::sweep_subjects(&store, 1000).await.unwrap();
    assert_eq!(freed as i64, total - 10);
    assert_eq!(held(plan_id.clone()).await, 0);
    let live_id = live["plan_id"].as_str().unwrap().to_owned();
    assert_eq!(held(live_id).await, total, "live plans keep theirs");
    drop(store);

    let store = countersign_engine::Store::open(&url).await.unwrap();
    let gw = Gateway::acting_as(crate::common::state(store).await, String::new());
    let record = gw.record(&token, &plan_id).await;
    assert_eq!(record.status, StatusCode::OK, "{}", record.body);
    assert_eq!(record.body["status"], "rejected");
    assert_eq!(record.body["plan"]["effects"][0]["subjects"]["total"], 37);
    let page = gw
        .call(
            "GET",
            &format!("/v1/plans/{plan_id}/effects/eff_1/subjects"),
            Some(&token),
            None,
        )
        .await;
    assert_error(&page, "plan_not_pending", 409);
}

fn rows(plan_id: &str) -> String {
    format!("SELECT COUNT(*) FROM plan_subjects WHERE plan_id = '{plan_id}'")
}

#[tokio::test]
async fn the_sweeper_frees_expired_plans_subject_rows_on_its_own() {
    let gw = Gateway::new().await;
    let plan = gw.preview(REMOVE, contractors()).await;
    let plan_id = plan["plan_id"].as_str().unwrap();
    gw.expire(plan_id).await;
    let rows = format!("SELECT COUNT(*) FROM plan_subjects WHERE plan_id = '{plan_id}'");
    for _ in 0..50 {
        if count(&gw, &rows).await == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(count(&gw, &rows).await, 0);
    assert_eq!(
        count(
            &gw,
            &format!("SELECT COUNT(*) FROM plans WHERE id = '{plan_id}'")
        )
        .await,
        1
    );
}

#[tokio::test]
async fn an_agent_over_its_rate_gets_429_with_retry_after() {
    let gw = Gateway::limited(Limits {
        rate: Some("2/3".parse().unwrap()),
        ..Limits::default()
    })
    .await;
    let dana = gw.enroll("Dana").await;
    for _ in 0..3 {
        let ok = gw
            .call("GET", "/v1/capabilities", Some(&gw.agent), None)
            .await;
        assert_eq!(ok.status, StatusCode::OK, "{}", ok.body);
    }
    let limited = gw
        .call("GET", "/v1/capabilities", Some(&gw.agent), None)
        .await;
    assert_error(&limited, "rate_limited", 429);
    let wait: u64 = limited.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=2).contains(&wait), "{wait}");
    assert_eq!(
        limited.body["error"]["details"]["retry_after_seconds"],
        wait
    );

    // Approvers and other agents have buckets of their own.
    for _ in 0..10 {
        let polled = gw
            .call("GET", "/v1/approvals", Some(&dana.token), None)
            .await;
        assert_eq!(polled.status, StatusCode::OK);
    }
    let (_, other) = countersign_engine::accounts::add_agent(&gw.state.store, "other", None)
        .await
        .unwrap();
    // From a peer of its own: a token the gateway has not seen yet pays its peer's bucket first,
    // and this test's requests, from no peer, have used that one up.
    let mut request = Request::get("/v1/capabilities")
        .header("authorization", format!("Bearer {other}"))
        .body(Body::empty())
        .unwrap();
    let peer: SocketAddr = "192.0.2.9:4000".parse().unwrap();
    request.extensions_mut().insert(ConnectInfo(peer));
    assert_eq!(gw.send(request).await.status, StatusCode::OK);
}

#[tokio::test]
async fn requests_without_a_token_share_a_limited_bucket() {
    let gw = Gateway::limited(Limits {
        rate: Some("1/2".parse().unwrap()),
        ..Limits::default()
    })
    .await;
    for _ in 0..2 {
        let reply = gw.call("GET", "/v1/approvals", None, None).await;
        assert_error(&reply, "unauthenticated", 401);
    }
    let limited = gw.call("GET", "/v1/approvals", None, None).await;
    assert_error(&limited, "rate_limited", 429);
    assert!(limited.headers.contains_key("retry-after"));
}

/// Made-up tokens, approver-looking or fresh on every request, are not callers: they share the
/// bucket of requests without a token, and a real approver the gateway knows keeps being served
/// meanwhile. The approver's own bucket holds two requests: a forged token that drew on it would
/// leave the second poll refused.
#[tokio::test]
async fn invented_tokens_buy_no_fresh_buckets() {
    let gw = Gateway::limited(Limits {
        rate: Some("1/4".parse().unwrap()),
        approver_rate: Some("1/2".parse().unwrap()),
        ..Limits::default()
    })
    .await;
    let dana = gw.enroll("Dana").await;
    let known = gw
        .call("GET", "/v1/approvals", Some(&dana.token), None)
        .await;
    assert_eq!(known.status, StatusCode::OK);
    let mut codes = Vec::new();
    for n in 0..10 {
        let forged = if n % 2 == 0 {
            format!("csp_made_up_{n}")
        } else {
            format!("csa_fresh_{n}")
        };
        let reply = gw.call("GET", "/v1/approvals", Some(&forged), None).await;
        codes.push(reply.body["error"]["code"].as_str().unwrap().to_owned());
        if reply.status == StatusCode::TOO_MANY_REQUESTS {
            assert!(reply.headers.contains_key("retry-after"));
        }
    }
    let served = codes.iter().filter(|c| *c == "unauthenticated").count();
    assert!(
        served <= 5,
        "one bucket of 4 (and a refill at most): {codes:?}"
    );
    assert!(
        codes[served..].iter().all(|c| c == "rate_limited"),
        "{codes:?}"
    );
    let polled = gw
        .call("GET", "/v1/approvals", Some(&dana.token), None)
        .await;
    assert_eq!(polled.status, StatusCode::OK, "{}", polled.body);
}

#[tokio::test]
async fn an_approver_is_held_to_a_configured_rate() {
    let gw = Gateway::limited(Limits {
        approver_rate: Some("1/1".parse().unwrap()),
        ..Limits::default()
    })
    .await;
    let dana = gw.enroll("Dana").await;
    let first = gw
        .call("GET", "/v1/approvals", Some(&dana.token), None)
        .await;
    assert_eq!(first.status, StatusCode::OK);
    let second = gw
        .call("GET", "/v1/approvals", Some(&dana.token), None)
        .await;
    assert_error(&second, "rate_limited", 429);
}
