//! Every code of PROTOCOL section 1, provoked through the router: each answer carries its status,
//! `error.code`, `provider: "system"` and the trace id in the body and the `X-Trace-Id` header.

use std::collections::BTreeSet;

use crate::common::{approve_by, assert_error, retention, Gateway, Reply, RETENTION};
use axum::body::Body;
use axum::http::Request;
use countersign_engine::store::Dialect;
use countersign_engine::Limits;
use countersign_proto::statement::Signed as _;
use countersign_proto::ErrorCode;
use ed25519_dalek::SigningKey;
use serde_json::json;

struct Seen(BTreeSet<&'static str>);

impl Seen {
    fn check(&mut self, reply: &Reply, code: ErrorCode) {
        assert_error(reply, code.as_str(), code.http_status());
        self.0.insert(code.as_str());
    }
}

#[tokio::test]
async fn every_code_of_the_table_travels_in_the_envelope() {
    use ErrorCode::*;
    let gw = Gateway::new().await;
    let mut seen = Seen(BTreeSet::new());
    let dana = gw.enroll("Dana").await;
    let dry_run = format!("/v1/capabilities/{RETENTION}/dry_run");

    seen.check(
        &gw.call("GET", "/v1/approvals", None, None).await,
        Unauthenticated,
    );
    seen.check(
        &gw.call("GET", "/v1/approvals", Some(&gw.agent), None).await,
        Forbidden,
    );
    seen.check(
        &gw.call("GET", "/v1/capabilities/no.such", Some(&gw.agent), None)
            .await,
        NotFound,
    );
    let bad = json!({"params": {"project": 1}, "extra": true});
    seen.check(
        &gw.call("POST", &dry_run, Some(&gw.agent), Some(bad)).await,
        ValidationError,
    );
    let huge = format!(
        "{{\"params\": {{\"pad\": \"{}\"}}}}",
        "x".repeat(1024 * 1024 + 1)
    );
    let request = Request::post(&dry_run)
        .header("authorization", format!("Bearer {}", gw.agent))
        .header("content-type", "application/json")
        .body(Body::from(huge))
        .unwrap();
    seen.check(&gw.send(request).await, PayloadTooLarge);
    let bulk = json!({"params": {"group": "grp_support", "filter": {"employment": "contractor"}}});
    seen.check(
        &gw.invoke_as(&gw.agent, "groups.members.remove", bulk).await,
        DryRunRequired,
    );
    let guard = json!({"params": {"estimated_cost_credits": 1000}});
    seen.check(
        &gw.invoke_as(&gw.agent, "wallet.agent_budget.guard.check", guard)
            .await,
        BudgetExceeded,
    );

    let plan = gw.preview(RETENTION, retention("prj_184", 14)).await;
    let plan_id = plan["plan_id"].as_str().unwrap();
    let by_id = json!({"plan_id": plan_id});
    seen.check(
        &gw.invoke_as(&gw.agent, RETENTION, by_id.clone()).await,
        ApprovalRequired,
    );

    let stranger = SigningKey::from_bytes(&[9u8; 32]);
    let forged = dana.statement(&gw, &plan).sign(&stranger).unwrap();
    seen.check(&dana.send(&gw, plan_id, &forged).await, BadSignature);
    let mut elsewhere = dana.statement(&gw, &plan);
    elsewhere.audience = "gw_other".into();
    seen.check(
        &dana.send(&gw, plan_id, &dana.sign(&elsewhere)).await,
        AudienceMismatch,
    );
    let mut altered = dana.statement(&gw, &plan);
    altered.plan_digest = format!("sha256:{}", "1".repeat(64));
    seen.check(
        &dana.send(&gw, plan_id, &dana.sign(&altered)).await,
        DigestMismatch,
    );
    let mut old = dana.statement(&gw, &plan);
    old.issued_at -= chrono::Duration::minutes(10);
    old.expires_at = old.issued_at + chrono::Duration::minutes(1);
    seen.check(
        &dana.send(&gw, plan_id, &dana.sign(&old)).await,
        StatementExpired,
    );

    approve_by(&gw, &plan, &[&dana]).await;
    seen.check(
        &dana
            .send(&gw, plan_id, &dana.sign(&dana.statement(&gw, &plan)))
            .await,
        NotEligible,
    );
    let eli = gw.enroll("Eli").await;
    seen.check(
        &eli.send(&gw, plan_id, &eli.sign(&eli.statement(&gw, &plan)))
            .await,
        PlanNotPending,
    );
    let other = gw.preview(RETENTION, retention("prj_200", 14)).await;
    let mut reused = eli.statement(&gw, &other);
    let envelope = eli.sign(&eli.statement(&gw, &other));
    let other_id = other["plan_id"].as_str().unwrap();
    eli.send(&gw, other_id, &envelope).await;
    let third = gw.preview(RETENTION, retention("prj_311", 30)).await;
    reused.plan_id = third["plan_id"].as_str().unwrap().into();
    reused.plan_digest = third["plan_digest"].as_str().unwrap().into();
    reused.nonce = serde_json::from_slice::<serde_json::Value>(&envelope.payload_bytes().unwrap())
        .unwrap()["nonce"]
        .as_str()
        .unwrap()
        .into();
    let third_id = third["plan_id"].as_str().unwrap();
    seen.check(
        &eli.send(&gw, third_id, &eli.sign(&reused)).await,
        NonceReused,
    );

    let with_key = json!({"plan_id": plan_id, "idempotency_key": "k"});
    gw.invoke_as(&gw.agent, RETENTION, with_key).await;
    seen.check(
        &gw.invoke_as(&gw.agent, RETENTION, by_id).await,
        PlanAlreadyExecuted,
    );
    let conflicting = json!({"plan_id": other_id, "idempotency_key": "k"});
    seen.check(
        &gw.invoke_as(&gw.agent, RETENTION, conflicting).await,
        IdempotencyConflict,
    );

    // The executed plan moved prj_184; a plan that read the old revision is stale.
    let stale = gw.preview(RETENTION, retention("prj_184", 60)).await;
    sqlx::query("UPDATE projects SET revision = revision + 1 WHERE id = 'prj_184'")
        .execute(gw.state.store.pool())
        .await
        .unwrap();
    let stale_id = stale["plan_id"].as_str().unwrap();
    seen.check(
        &eli.send(&gw, stale_id, &eli.sign(&eli.statement(&gw, &stale)))
            .await,
        PlanStale,
    );

    let expiring = gw.preview(RETENTION, retention("prj_311", 90)).await;
    let expiring_id = expiring["plan_id"].as_str().unwrap();
    gw.expire(expiring_id).await;
    seen.check(
        &gw.invoke_as(&gw.agent, RETENTION, json!({"plan_id": expiring_id}))
            .await,
        PlanExpired,
    );

    sqlx::query("UPDATE plans SET preview = '{' WHERE id = $1")
        .bind(expiring_id)
        .execute(gw.state.store.pool())
        .await
        .unwrap();
    let broken = gw.record(&dana.token, expiring_id).await;
    seen.check(&broken, Internal);
    assert!(
        !broken.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("EOF"),
        "no internals"
    );

    let tight = Gateway::limited(Limits {
        max_pending_plans: 1,
        rate: Some("2".parse().unwrap()),
        ..Limits::default()
    })
    .await;
    let settings = json!({"params": {"project": "prj_311", "retention_days": 60}});
    let first = tight
        .call("POST", &dry_run, Some(&tight.agent), Some(settings.clone()))
        .await;
    assert_eq!(first.status, 200, "{}", first.body);
    seen.check(
        &tight
            .call("POST", &dry_run, Some(&tight.agent), Some(settings))
            .await,
        QuotaExceeded,
    );
    seen.check(
        &tight
            .call("GET", "/v1/capabilities", Some(&tight.agent), None)
            .await,
        RateLimited,
    );

    seen.check(
        &gw.call("DELETE", "/v1/approvals", Some(&dana.token), None)
            .await,
        MethodNotAllowed,
    );
    // A model provider's failures, each through a plan executed against the local provider.
    let local = countersign_providers::local::LocalProviders::start()
        .await
        .unwrap();
    let mut providers = local.providers();
    providers.poll_every = std::time::Duration::from_millis(20);
    providers.attempts = 1;
    let with = Gateway::with_providers(providers).await;
    let chat = |text: &str| {
        json!({"model": "gpt-4o-mini", "max_tokens": 8,
               "messages": [{"role": "user", "content": text}]})
    };
    for (gateway, capability, params, code) in [
        (
            &with,
            "text.generate",
            chat("[[rate-limit]]"),
            ProviderRateLimited,
        ),
        (
            &with,
            "text.generate",
            chat("[[content-filter]]"),
            ProviderRefused,
        ),
        (
            &with,
            "text.generate",
            chat("[[garbled]]"),
            ProviderBadResponse,
        ),
        (&gw, "text.generate", chat("Hello"), ProviderMisconfigured),
        (
            &with,
            "image.generate",
            json!({"model": "black-forest-labs/flux-schnell", "prompt": "[[slow]]"}),
            ProviderTimeout,
        ),
    ] {
        let plan = gateway.preview(capability, params).await;
        seen.check(&gateway.execute(&plan).await, code);
    }
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let nowhere = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let endpoint =
        countersign_providers::Endpoint::new(&nowhere, countersign_providers::Secret::new("k"));
    let down =
        Gateway::with_providers(countersign_providers::Providers::new(Some(endpoint), None)).await;
    let plan = down.preview("text.generate", chat("Hello")).await;
    seen.check(&down.execute(&plan).await, ProviderUnavailable);

    // The approval policy refuses a plan, or cannot decide it: either way nothing is stored.
    let policy = |body: &str| {
        let text = format!("package countersign.approval\nimport rego.v1\nrules := []\n{body}\n");
        let sources = countersign_policy::Sources {
            modules: vec![("p.rego".to_owned(), text)],
            data: None,
        };
        countersign_policy::Policy::from_sources(sources, "test").unwrap()
    };
    let settings = json!({"params": {"project": "prj_420", "retention_days": 30}});
    let denying = Gateway::with_policy(policy(r#"deny contains "Not today""#)).await;
    seen.check(
        &denying
            .call(
                "POST",
                &dry_run,
                Some(&denying.agent),
                Some(settings.clone()),
            )
            .await,
        PolicyDenied,
    );
    let erring = Gateway::with_policy(policy(r#"deny contains to_number("x") if true"#)).await;
    seen.check(
        &erring
            .call("POST", &dry_run, Some(&erring.agent), Some(settings))
            .await,
        PolicyError,
    );

    // Last: the store stops taking writes (as a full disk or a read-only file would).
    let gw = read_only(gw).await;
    let settings = json!({"params": {"project": "prj_420", "retention_days": 30}});
    seen.check(
        &gw.call("POST", &dry_run, Some(&gw.agent), Some(settings))
            .await,
        StorageUnavailable,
    );
    let all: BTreeSet<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(seen.0, all);
}

/// `gw`'s store, taking no more writes: SQLite's one writer connection set to read only; on
/// PostgreSQL, the database made read-only, which reaches new sessions only, and every session
/// the gateway holds ended, so that its pools open new ones.
async fn read_only(gw: Gateway) -> Gateway {
    let store = &gw.state.store;
    match store.dialect() {
        Dialect::Sqlite => {
            let mut w = store.write().await.unwrap();
            sqlx::query("PRAGMA query_only = 1")
                .execute(&mut *w.tx)
                .await
                .unwrap();
            w.commit().await.unwrap();
        }
        Dialect::Postgres => {
            use sqlx::Connection as _;
            let name: String = sqlx::query_scalar("SELECT current_database()::text")
                .fetch_one(store.pool())
                .await
                .unwrap();
            let server = std::env::var("COUNTERSIGN_TEST_POSTGRES").unwrap();
            let url = countersign_engine::store::database_url(&server, &name).unwrap();
            let mut admin = sqlx::PgConnection::connect(&url).await.unwrap();
            sqlx::query(&format!(
                "ALTER DATABASE \"{name}\" SET default_transaction_read_only = on"
            ))
            .execute(&mut admin)
            .await
            .unwrap();
            sqlx::query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                 WHERE datname = current_database() AND pid <> pg_backend_pid()",
            )
            .execute(&mut admin)
            .await
            .unwrap();
            admin.close().await.unwrap();
            // Connections used within the alive-bypass window are not tested before use; past
            // it, the pool finds the ended ones and opens read-only ones. What is checked next
            // is the read-only store, not a connection killed under a request (tests/instances.rs).
            tokio::time::sleep(countersign_engine::store::PING_AFTER_IDLE * 2).await;
        }
    }
    gw
}
