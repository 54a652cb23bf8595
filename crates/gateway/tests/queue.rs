//! The approval queue as it is kept: conditional polls from the revision alone, pages, the expiry
//! sweep, staleness marked by writes, and writers that never fail under read load.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::{retention, Gateway};
use axum::http::StatusCode;
use countersign_embedded::default_registry;
use countersign_engine::queue::events::EventKind;
use countersign_engine::Limits;
use serde_json::{json, Value};

fn ids(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["plan_id"].as_str().unwrap().to_owned())
        .collect()
}

/// How many reads of `plan` the read index holds.
async fn indexed_reads(gw: &Gateway, plan: &Value) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM plan_reads WHERE plan_id = $1")
        .bind(plan["plan_id"].as_str().unwrap())
        .fetch_one(gw.state.store.pool())
        .await
        .unwrap()
}

fn etag(reply: &crate::common::Reply) -> String {
    reply.headers["etag"].to_str().unwrap().to_owned()
}

async fn poll(gw: &Gateway, token: &str, uri: &str, etag: Option<&str>) -> crate::common::Reply {
    let mut request =
        axum::http::Request::get(uri).header("authorization", format!("Bearer {token}"));
    if let Some(etag) = etag {
        request = request.header("if-none-match", etag);
    }
    gw.send(request.body(axum::body::Body::empty()).unwrap())
        .await
}

const QUEUE: &str = "/v1/approvals?status=pending";

#[tokio::test]
async fn a_conditional_poll_never_reads_a_plan() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let plan = gw.dry_run(retention("prj_184", 14)).await;
    let first = poll(&gw, &dana.token, QUEUE, None).await;
    assert_eq!(first.status, StatusCode::OK);
    assert_eq!(
        etag(&first),
        format!("\"{}\"", first.body["revision"].as_str().unwrap())
    );

    // A plan row the gateway could no longer read back: neither the poll nor the listing touches
    // it, since both are served from the revision and the stored summaries.
    sqlx::query("UPDATE plans SET preview = '{' WHERE id = $1")
        .bind(plan["plan_id"].as_str())
        .execute(gw.state.store.pool())
        .await
        .unwrap();
    let again = poll(&gw, &dana.token, QUEUE, Some(&etag(&first))).await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
    assert_eq!(etag(&again), etag(&first));
    let listed = poll(&gw, &dana.token, QUEUE, None).await;
    assert_eq!(listed.status, StatusCode::OK);
    assert_eq!(listed.body, first.body);

    gw.dry_run(retention("prj_200", 14)).await;
    let changed = poll(&gw, &dana.token, QUEUE, Some(&etag(&first))).await;
    assert_eq!(changed.status, StatusCode::OK);
    assert_ne!(etag(&changed), etag(&first));
    assert_eq!(ids(&changed.body).len(), 2);
}

#[tokio::test]
async fn pages_walk_the_queue_in_its_order() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    for days in [7, 14, 21, 28, 35] {
        gw.dry_run(json!({"project": "prj_184", "retention_days": days}))
            .await;
    }
    let whole = poll(&gw, &dana.token, QUEUE, None).await;
    assert!(whole.body.get("next_cursor").is_none(), "{}", whole.body);
    let mut paged = Vec::new();
    let mut uri = format!("{QUEUE}&limit=2");
    let mut pages = 0;
    loop {
        let page = poll(&gw, &dana.token, &uri, None).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.body);
        assert_ne!(etag(&page), etag(&whole), "a page has its own tag");
        assert!(ids(&page.body).len() <= 2);
        paged.extend(ids(&page.body));
        pages += 1;
        match page.body["next_cursor"].as_str() {
            Some(cursor) => uri = format!("{QUEUE}&limit=2&cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(paged, ids(&whole.body));

    for bad in [
        "&limit=0",
        "&limit=10001",
        "&cursor=c_eff_1_00",
        "&cursor=q_zz",
    ] {
        let reply = poll(&gw, &dana.token, &format!("{QUEUE}{bad}"), None).await;
        assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
        assert_eq!(reply.body["error"]["code"], "validation_error", "{bad}");
    }
}

#[tokio::test]
async fn expired_plans_leave_the_queue_with_a_new_revision() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let plan = gw.dry_run(retention("prj_184", 14)).await;
    let kept = gw.dry_run(retention("prj_200", 14)).await;
    let plan_id = plan["plan_id"].as_str().unwrap();
    let before = poll(&gw, &dana.token, QUEUE, None).await;
    gw.expire(plan_id).await;
    // The gateway's own sweep moves it out; the poll sees that as a change of the revision.
    let mut after = poll(&gw, &dana.token, QUEUE, Some(&etag(&before))).await;
    for _ in 0..100 {
        if after.status == StatusCode::OK {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        after = poll(&gw, &dana.token, QUEUE, Some(&etag(&before))).await;
    }
    assert_eq!(after.status, StatusCode::OK, "the sweep never ran");
    assert_eq!(ids(&after.body), vec![kept["plan_id"].as_str().unwrap()]);
    assert_eq!(
        gw.record(&dana.token, plan_id).await.body["status"],
        "expired"
    );
    assert_eq!(
        countersign_engine::queue::sweep(&gw.state.store, gw.state.registry)
            .await
            .unwrap(),
        0
    );
}

#[tokio::test]
async fn an_execution_makes_its_readers_stale_and_not_itself() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let run = gw.dry_run(retention("prj_184", 14)).await;
    let reader = gw.dry_run(retention("prj_184", 60)).await;
    let other = gw.dry_run(retention("prj_200", 60)).await;
    crate::common::approve_by(&gw, &run, &[&dana]).await;
    let executed = gw.invoke(json!({"plan_id": run["plan_id"]})).await;
    assert_eq!(executed.status, StatusCode::OK, "{}", executed.body);

    let listed = poll(&gw, &dana.token, QUEUE, None).await;
    let status_of = |id: &Value| {
        listed.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| &s["plan_id"] == id)
            .map(|s| s["status"].clone())
    };
    assert_eq!(status_of(&reader["plan_id"]), Some(json!("stale")));
    assert_eq!(
        status_of(&other["plan_id"]),
        Some(json!("pending_approval"))
    );
    assert_eq!(status_of(&run["plan_id"]), None);
    let record = gw
        .record(&dana.token, run["plan_id"].as_str().unwrap())
        .await;
    assert_eq!(record.body["status"], "executed");
    assert_eq!(
        record.body["stale"],
        Value::Null,
        "its own writes are its result"
    );
}

#[tokio::test]
async fn finished_plans_leave_the_read_index() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let run = gw.dry_run(retention("prj_184", 14)).await;
    let refused = gw.dry_run(retention("prj_200", 21)).await;
    let waiting = gw.dry_run(retention("prj_200", 60)).await;
    crate::common::approve_by(&gw, &run, &[&dana]).await;
    let executed = gw.invoke(json!({"plan_id": run["plan_id"]})).await;
    assert_eq!(executed.status, StatusCode::OK, "{}", executed.body);
    let mut reject = dana.statement(&gw, &refused);
    reject.decision = countersign_proto::decision::Decision::Reject;
    reject.reason = Some("Not now.".to_owned());
    let rejected = dana
        .send(
            &gw,
            refused["plan_id"].as_str().unwrap(),
            &dana.sign(&reject),
        )
        .await;
    assert_eq!(rejected.status, StatusCode::OK, "{}", rejected.body);

    assert_eq!(indexed_reads(&gw, &run).await, 0, "executed");
    assert_eq!(indexed_reads(&gw, &refused).await, 0, "rejected");
    assert!(
        indexed_reads(&gw, &waiting).await > 0,
        "a pending plan still can go stale"
    );
}

#[tokio::test]
async fn read_connections_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("gw.db").display());
    let store = countersign_engine::Store::open(&url).await.unwrap();
    store.gateway_id().await.unwrap();
    let refused = sqlx::query("UPDATE meta SET value = value")
        .execute(store.pool())
        .await;
    assert!(refused.is_err(), "a read connection wrote");
    let mut w = store.write().await.unwrap();
    sqlx::query("UPDATE meta SET value = value")
        .execute(&mut *w.tx)
        .await
        .unwrap();
    w.commit().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_succeed_while_polls_keep_every_reader_busy() {
    // Unlimited: the pollers are here to keep every reader busy, not to be turned away.
    let limits = Limits {
        approver_rate: None,
        ..Limits::default()
    };
    let gw = Arc::new(Gateway::serving_apart(limits, default_registry()).await);
    let dana = gw.enroll("Dana").await;
    for days in 1..=20 {
        gw.dry_run(json!({"project": "prj_184", "retention_days": days}))
            .await;
    }
    let done = Arc::new(AtomicBool::new(false));
    let pollers: Vec<_> = (0..16)
        .map(|_| {
            let (gw, done, token) = (gw.clone(), done.clone(), dana.token.clone());
            tokio::spawn(async move {
                let mut answered = 0u32;
                while !done.load(Ordering::Relaxed) {
                    let reply = poll(&gw, &token, QUEUE, None).await;
                    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
                    answered += 1;
                }
                answered
            })
        })
        .collect();
    let bulk = gw
        .call(
            "POST",
            "/v1/capabilities/groups.members.remove/dry_run",
            Some(&gw.agent),
            Some(
                json!({"params": {"group": "grp_all_staff", "filter": {"employment": "employee"}}}),
            ),
        )
        .await;
    let small = gw.dry_run(retention("prj_200", 3)).await;
    done.store(true, Ordering::Relaxed);
    assert_eq!(bulk.status, StatusCode::OK, "{}", bulk.body);
    assert_eq!(bulk.body["effects"][0]["subjects"]["total"], 100_000);
    assert!(small["plan_id"].is_string());
    for poller in pollers {
        assert!(poller.await.unwrap() > 0);
    }
}

/// The read index holds the plans a write must mark stale: those listed for people and not
/// stale yet. A plan no person waits on is judged at its execution (its reads are read again
/// there), so it stays out, and a write never reads it back: thousands of uploads an agent
/// previewed kept every later upload reading each of them (issue 49, 17 invokes/s on SQLite).
#[tokio::test]
async fn the_read_index_holds_only_plans_people_wait_on_until_they_go_stale() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let upload = |name: &str| {
        json!({"project": "prj_421", "filename": name, "mime_type": "text/plain",
               "size_bytes": 1})
    };
    let unattended = gw
        .preview("documents.document.upload", upload("a.txt"))
        .await;
    assert_eq!(unattended["would_require_approval"], false);
    assert_eq!(
        indexed_reads(&gw, &unattended).await,
        0,
        "no person waits on it"
    );
    let run = gw.dry_run(retention("prj_200", 14)).await;
    let waiting = gw.dry_run(retention("prj_200", 60)).await;
    assert!(
        indexed_reads(&gw, &waiting).await > 0,
        "listed, it can go stale"
    );

    crate::common::approve_by(&gw, &run, &[&dana]).await;
    let executed = gw.invoke(json!({"plan_id": run["plan_id"]})).await;
    assert_eq!(executed.status, StatusCode::OK, "{}", executed.body);
    let listed = poll(&gw, &dana.token, QUEUE, None).await;
    let status = listed.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["plan_id"] == waiting["plan_id"])
        .map(|s| s["status"].clone());
    assert_eq!(status, Some(json!("stale")), "{}", listed.body);
    assert_eq!(indexed_reads(&gw, &waiting).await, 0, "stale, it leaves");

    // Out of the index, the unattended plan is still judged at its execution.
    let moved = gw
        .invoke_as(
            &gw.agent,
            "documents.document.upload",
            json!({"params": upload("b.txt")}),
        )
        .await;
    assert_eq!(moved.status, StatusCode::OK, "{}", moved.body);
    let stale = gw
        .invoke_as(
            &gw.agent,
            "documents.document.upload",
            json!({"plan_id": unattended["plan_id"]}),
        )
        .await;
    assert_eq!(stale.status, StatusCode::CONFLICT, "{}", stale.body);
    assert_eq!(stale.body["error"]["code"], "plan_stale", "{}", stale.body);
}

/// A plan that closed and then opened again (an execution recorded, then settled as never done)
/// is back in the read index: a write must still find it to mark it stale.
#[tokio::test]
async fn a_plan_open_again_after_it_closed_is_back_in_the_read_index() {
    let gw = Gateway::new().await;
    let plan = gw.dry_run(retention("prj_200", 60)).await;
    let id = plan["plan_id"].as_str().unwrap();
    let store = &gw.state.store;
    for (status, indexed) in [("executed", false), ("approved", true)] {
        let mut w = store.write().await.unwrap();
        sqlx::query("UPDATE plans SET status = $1 WHERE id = $2")
            .bind(status)
            .bind(id)
            .execute(&mut *w.tx)
            .await
            .unwrap();
        countersign_engine::queue::publish(&mut w.tx, gw.state.registry, id, EventKind::Updated)
            .await
            .unwrap();
        w.commit().await.unwrap();
        assert_eq!(indexed_reads(&gw, &plan).await > 0, indexed, "{status}");
    }
}
