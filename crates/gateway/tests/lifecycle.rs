//! A plan's life beyond one decision: staleness and refresh, idempotent previews, the audit
//! trail, the event stream, and a million subjects in one effect.

use std::time::Duration;

use crate::common::sse::{beating, Events};
use crate::common::{
    approve_by, assert_error, database, grant, retention, Gateway, GRANT, RETENTION,
};
use axum::http::StatusCode;
use countersign_engine::accounts;
use countersign_engine::store::Dialect;
use countersign_proto::digest::SubjectsHasher;
use serde_json::{json, Value};

#[tokio::test]
async fn a_moved_read_stops_decision_and_execution_and_a_refresh_executes() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let approved = gw
        .approved_by(RETENTION, retention("prj_184", 14), &[&dana])
        .await;
    let waiting = gw.preview(RETENTION, retention("prj_184", 21)).await;

    // Another request changes what both plans read: a role granted on prj_184.
    let grant = gw
        .approved_by(GRANT, grant("prj_184", "usr_92", "viewer"), &[&dana])
        .await;
    let reply = gw.execute(&grant).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);

    let moved = json!([{"resource": "projects/prj_184", "planned": "73", "current": "74"}]);
    let waiting_id = waiting["plan_id"].as_str().unwrap();
    let decision = dana
        .send(&gw, waiting_id, &dana.sign(&dana.statement(&gw, &waiting)))
        .await;
    assert_error(&decision, "plan_stale", 409);
    assert_eq!(decision.body["error"]["details"]["moved"], moved);
    let execution = gw.execute(&approved).await;
    assert_error(&execution, "plan_stale", 409);
    assert_eq!(execution.body["error"]["details"]["moved"], moved);

    let approved_id = approved["plan_id"].as_str().unwrap();
    let refreshed = gw.refresh(&dana.token, approved_id).await;
    assert_eq!(refreshed.status, StatusCode::OK, "{}", refreshed.body);
    assert_eq!(refreshed.body["supersedes"], approved_id);
    assert_eq!(refreshed.body["status"], "pending_approval");
    let fresh = refreshed.body["plan"].clone();
    assert_eq!(
        fresh["read_revisions"],
        json!([{"resource": "projects/prj_184", "revision": "74"}])
    );
    assert_eq!(fresh["request"], approved["request"]);

    let old = gw.record(&dana.token, approved_id).await;
    assert_eq!(old.body["status"], "superseded");
    assert_eq!(old.body["superseded_by"], fresh["plan_id"]);
    let late = dana
        .send(
            &gw,
            approved_id,
            &dana.sign(&dana.statement(&gw, &approved)),
        )
        .await;
    assert_error(&late, "not_eligible", 403);
    let eli = gw.enroll("Eli").await;
    let late = eli
        .send(&gw, approved_id, &eli.sign(&eli.statement(&gw, &approved)))
        .await;
    assert_error(&late, "plan_not_pending", 409);
    let again = gw.refresh(&gw.agent, approved_id).await;
    assert_error(&again, "plan_not_pending", 409);

    approve_by(&gw, &fresh, &[&dana]).await;
    let done = gw.execute(&fresh).await;
    assert_eq!(done.status, StatusCode::OK, "{}", done.body);
}

#[tokio::test]
async fn another_agent_cannot_execute_a_plan_and_nothing_runs() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let plan = gw
        .approved_by(RETENTION, retention("prj_184", 14), &[&dana])
        .await;
    // Same principal, same scopes: only the caller differs.
    let (_, other) = accounts::add_agent(&gw.state.store, "other", Some("usr_lead"))
        .await
        .unwrap();
    let before = gw.snapshot().await;
    for body in [
        json!({"plan_id": plan["plan_id"]}),
        json!({"plan_id": plan["plan_id"], "idempotency_key": "theirs"}),
    ] {
        let reply = gw.invoke_as(&other, RETENTION, body).await;
        assert_error(&reply, "not_found", 404);
    }
    assert_eq!(gw.snapshot().await, before, "nothing ran");
    let record = gw
        .record(&gw.agent, plan["plan_id"].as_str().unwrap())
        .await;
    assert_eq!(record.body["status"], "approved");
    let reply = gw.execute(&plan).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
}

#[tokio::test]
async fn a_repeated_preview_key_answers_the_first_plan() {
    let gw = Gateway::new().await;
    let uri = format!("/v1/capabilities/{RETENTION}/dry_run");
    let body =
        json!({"params": {"project": "prj_200", "retention_days": 30}, "idempotency_key": "p1"});
    let first = gw
        .call("POST", &uri, Some(&gw.agent), Some(body.clone()))
        .await;
    let second = gw.call("POST", &uri, Some(&gw.agent), Some(body)).await;
    assert_eq!(first.status, StatusCode::OK);
    // The first plan, with its status now added.
    let mut repeated = second.body.clone();
    assert_eq!(repeated["status"], "pending_approval");
    for added in ["status", "stale", "superseded_by"] {
        repeated.as_object_mut().unwrap().remove(added);
    }
    assert_eq!(repeated, first.body);
    let plans: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM plans")
        .fetch_one(gw.state.store.pool())
        .await
        .unwrap();
    assert_eq!(plans, 1);
    let other =
        json!({"params": {"project": "prj_200", "retention_days": 31}, "idempotency_key": "p1"});
    assert_error(
        &gw.call("POST", &uri, Some(&gw.agent), Some(other)).await,
        "idempotency_conflict",
        409,
    );
    let invalid = json!({"params": {"project": 1}, "idempotency_key": "p2"});
    let first = gw
        .call("POST", &uri, Some(&gw.agent), Some(invalid.clone()))
        .await;
    let second = gw.call("POST", &uri, Some(&gw.agent), Some(invalid)).await;
    assert_eq!(first.body["valid"], false);
    assert_eq!(second.body, first.body);
}

#[tokio::test]
async fn a_repeated_preview_key_answers_the_plan_as_it_stands_now() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let uri = format!("/v1/capabilities/{RETENTION}/dry_run");
    let again = |key: &str, days: u32| json!({"params": {"project": "prj_184", "retention_days": days}, "idempotency_key": key});
    let stale = gw
        .call("POST", &uri, Some(&gw.agent), Some(again("stale", 14)))
        .await
        .body;
    let executed = gw
        .call("POST", &uri, Some(&gw.agent), Some(again("run", 21)))
        .await
        .body;
    approve_by(&gw, &executed, &[&dana]).await;
    let reply = gw.execute(&executed).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);

    let now_executed = gw
        .call("POST", &uri, Some(&gw.agent), Some(again("run", 21)))
        .await;
    assert_eq!(now_executed.status, StatusCode::OK);
    assert_eq!(now_executed.body["plan_id"], executed["plan_id"]);
    assert_eq!(now_executed.body["status"], "executed");

    // The execution moved prj_184, which the other plan read.
    let now_stale = gw
        .call("POST", &uri, Some(&gw.agent), Some(again("stale", 14)))
        .await
        .body;
    assert_eq!(now_stale["plan_id"], stale["plan_id"]);
    assert_eq!(now_stale["plan_digest"], stale["plan_digest"]);
    assert_eq!(now_stale["status"], "stale");
    assert_eq!(
        now_stale["stale"]["moved"][0]["resource"],
        "projects/prj_184"
    );

    let expired = gw
        .call("POST", &uri, Some(&gw.agent), Some(again("late", 30)))
        .await
        .body;
    gw.expire(expired["plan_id"].as_str().unwrap()).await;
    let now_expired = gw
        .call("POST", &uri, Some(&gw.agent), Some(again("late", 30)))
        .await
        .body;
    assert_eq!(now_expired["status"], "expired");
}

#[tokio::test]
async fn the_audit_keeps_preview_decisions_and_execution_apart() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let plan = gw.preview(RETENTION, retention("prj_311", 30)).await;
    let plan_id = plan["plan_id"].as_str().unwrap();
    let envelope = dana.sign(&dana.statement(&gw, &plan));
    dana.send(&gw, plan_id, &envelope).await;
    gw.invoke_as(&gw.agent, RETENTION, json!({"plan_id": plan_id}))
        .await;

    let audit = gw
        .call(
            "GET",
            &format!("/v1/audit?plan_id={plan_id}"),
            Some(&gw.agent),
            None,
        )
        .await;
    assert_eq!(audit.status, StatusCode::OK, "{}", audit.body);
    assert_eq!(audit.body["previews"][0]["audit_id"], plan["audit_id"]);
    assert_eq!(
        audit.body["previews"][0]["request"]["params"],
        plan["request"]["params"]
    );
    let stored = audit.body["decisions"][0]["envelope"].as_str().unwrap();
    let reopened: countersign_proto::dsse::Envelope = serde_json::from_str(stored).unwrap();
    assert_eq!(reopened, envelope, "the envelope as it was received");
    assert_eq!(
        audit.body["executions"][0]["journal"][0]["effect_id"],
        "eff_1"
    );

    let stranger = gw
        .call(
            "GET",
            "/v1/audit?plan_id=plan_nope",
            Some(&dana.token),
            None,
        )
        .await;
    assert_error(&stranger, "not_found", 404);
    let missing = gw.call("GET", "/v1/audit", Some(&dana.token), None).await;
    assert_error(&missing, "validation_error", 422);
}

#[tokio::test]
async fn the_event_stream_delivers_plans_and_resumes() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let mut stream = Events::open(&gw, &dana.token, None).await;
    let plan = gw.preview(RETENTION, retention("prj_184", 7)).await;
    let created = stream.next(false).await;
    assert_eq!(created.event.as_deref(), Some("plan.created"));
    let summary: Value = serde_json::from_str(&created.data).unwrap();
    assert_eq!(summary["plan_id"], plan["plan_id"]);
    assert_eq!(summary["status"], "pending_approval");
    let created_id = created.id.unwrap();

    approve_by(&gw, &plan, &[&dana]).await;
    let updated = stream.next(false).await;
    assert_eq!(updated.event.as_deref(), Some("plan.updated"));
    let summary: Value = serde_json::from_str(&updated.data).unwrap();
    assert_eq!(summary["status"], "approved");

    // A client that saw only the creation resumes with the approval.
    let mut resumed = Events::open(&gw, &dana.token, Some(&created_id)).await;
    let missed = resumed.next(false).await;
    assert_eq!(missed.id, updated.id);
    assert_eq!(missed.event.as_deref(), Some("plan.updated"));

    // Executing it makes the other plan on the same project stale, and says so.
    let other = gw.preview(RETENTION, retention("prj_184", 60)).await;
    assert_eq!(
        stream.next(false).await.event.as_deref(),
        Some("plan.created")
    );
    gw.execute(&plan).await;
    let mut statuses = vec![];
    for _ in 0..2 {
        let event: Value = serde_json::from_str(&stream.next(false).await.data).unwrap();
        statuses.push((event["plan_id"].clone(), event["status"].clone()));
    }
    assert!(statuses.contains(&(plan["plan_id"].clone(), json!("executed"))));
    assert!(statuses.contains(&(other["plan_id"].clone(), json!("stale"))));

    // The log forgets what it no longer keeps: a client from before that must list again.
    sqlx::query("DELETE FROM plan_events WHERE revision < (SELECT MAX(revision) FROM plan_events)")
        .execute(gw.state.store.pool())
        .await
        .unwrap();
    for too_old in [
        created_id.as_str(),
        "99999",
        "not-a-number",
        "9223372036854775807",
    ] {
        let mut lost = Events::open(&gw, &dana.token, Some(too_old)).await;
        let resync = lost.next(false).await;
        assert_eq!(resync.event.as_deref(), Some("resync"));
    }
    let agent = gw.call("GET", "/v1/events", Some(&gw.agent), None).await;
    assert_error(&agent, "forbidden", 403);
}

#[tokio::test]
async fn an_idle_stream_sends_heartbeats() {
    let database = database("sqlite::memory:").await;
    let store = countersign_engine::Store::open(&database).await.unwrap();
    let state = beating(store, Duration::from_millis(50)).await;
    let gw = Gateway::from_state(state).await;
    let dana = gw.enroll("Dana").await;
    let mut stream = Events::open(&gw, &dana.token, None).await;
    let beat = stream.next(true).await;
    assert!(beat.event.is_none());
}

#[tokio::test]
async fn a_million_subjects_page_out_in_order_and_match_their_digest() {
    let gw = Gateway::bare().await;
    let pool = gw.state.store.pool();
    sqlx::query("INSERT INTO groups (id, name, revision) VALUES ('grp_huge', 'Huge', 1)")
        .execute(pool)
        .await
        .unwrap();
    sqlx::query(match gw.state.store.dialect() {
        Dialect::Sqlite => {
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000000)
             INSERT INTO users (id, name, email, employment)
             SELECT printf('usr_m%07d', i), 'Member ' || i, i || '@x', 'contractor' FROM n"
        }
        Dialect::Postgres => {
            "INSERT INTO users (id, name, email, employment)
             SELECT 'usr_m' || lpad(i::text, 7, '0'), 'Member ' || i, i || '@x', 'contractor'
             FROM generate_series(1, 1000000) AS i"
        }
    })
    .execute(pool)
    .await
    .unwrap();
    sqlx::query("INSERT INTO group_members SELECT 'grp_huge', id FROM users")
        .execute(pool)
        .await
        .unwrap();

    let plan = gw
        .preview(
            "groups.members.remove",
            json!({"group": "grp_huge", "filter": {"employment": "contractor"}}),
        )
        .await;
    let subjects = &plan["effects"][0]["subjects"];
    assert_eq!(subjects["total"], 1_000_000);
    assert_eq!(subjects["sample"].as_array().unwrap().len(), 20);
    assert!(
        serde_json::to_vec(&plan).unwrap().len() < 64 * 1024,
        "the plan itself stays small"
    );

    let dana = gw.enroll("Dana").await;
    let plan_id = plan["plan_id"].as_str().unwrap();
    let mut hasher = SubjectsHasher::default();
    let mut cursor = subjects["cursor"].as_str().map(str::to_owned);
    let mut count = 20u64;
    let mut previous = subjects["sample"][19].as_str().unwrap().to_owned();
    for sampled in subjects["sample"].as_array().unwrap() {
        hasher.push(sampled.as_str().unwrap());
    }
    while let Some(c) = cursor {
        let reply = gw
            .call(
                "GET",
                &format!("/v1/plans/{plan_id}/effects/eff_1/subjects?limit=5000&cursor={c}"),
                Some(&dana.token),
                None,
            )
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        for item in reply.body["items"].as_array().unwrap() {
            let id = item["id"].as_str().unwrap();
            assert!(id > previous.as_str(), "ascending");
            hasher.push(id);
            previous = id.to_owned();
            count += 1;
        }
        cursor = reply.body["next_cursor"].as_str().map(str::to_owned);
    }
    assert_eq!(count, 1_000_000);
    assert_eq!(json!(hasher.finish()), subjects["digest"]);

    let too_big = gw
        .call(
            "GET",
            &format!("/v1/plans/{plan_id}/effects/eff_1/subjects?limit=5001"),
            Some(&dana.token),
            None,
        )
        .await;
    assert_error(&too_big, "validation_error", 422);
    let forged = gw
        .call(
            "GET",
            &format!("/v1/plans/{plan_id}/effects/eff_1/subjects?cursor=c_eff_9_00"),
            Some(&dana.token),
            None,
        )
        .await;
    assert_error(&forged, "validation_error", 422);
    let missing = gw
        .call(
            "GET",
            &format!("/v1/plans/{plan_id}/effects/eff_9/subjects"),
            Some(&dana.token),
            None,
        )
        .await;
    assert_error(&missing, "not_found", 404);
}
