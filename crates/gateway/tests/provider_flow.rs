//! Provider capabilities end to end against the local provider server: a preview with a cost
//! range, approval, execution, the envelope, and a wallet charged what the usage says.

use crate::common::{assert_error, Gateway};
use base64::Engine;
use countersign_embedded::default_registry;
use countersign_engine::execution::external::recover_interrupted;
use countersign_engine::execution::wallet;
use countersign_engine::store::Dialect;
use countersign_proto::Credits;
use countersign_providers::local::LocalProviders;
use rust_decimal::Decimal;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

async fn gateway() -> (Gateway, LocalProviders) {
    let local = LocalProviders::start().await.unwrap();
    let mut providers = local.providers();
    providers.poll_every = std::time::Duration::from_millis(20);
    (Gateway::with_providers(providers).await, local)
}

fn amount(v: &Value) -> Decimal {
    v.as_str().unwrap().parse().unwrap()
}

async fn spent(gw: &Gateway, plan: &Value) -> Decimal {
    let mut conn = gw.state.store.pool().acquire().await.unwrap();
    let agent = plan["caller"]["agent_id"].as_str().unwrap();
    wallet::load(&mut conn, agent).await.unwrap().spent.value()
}

async fn status(gw: &Gateway, plan: &Value) -> Value {
    let approver = gw.enroll("Reader").await;
    gw.record(&approver.token, plan["plan_id"].as_str().unwrap())
        .await
        .body
}

fn text_params(max_tokens: u64) -> Value {
    json!({"model": "gpt-4o", "max_tokens": max_tokens, "messages": [
        {"role": "system", "content": "You write release notes."},
        {"role": "user", "content": "Summarize what changed in the approval console this week."}]})
}

#[tokio::test]
async fn a_text_plan_shows_its_range_waits_for_approval_and_charges_the_usage() {
    let (gw, local) = gateway().await;
    let preview = gw.preview("text.generate", text_params(2048)).await;
    let (min, max) = (
        amount(&preview["estimated_cost"]["amount_min"]),
        amount(&preview["estimated_cost"]["amount_max"]),
    );
    assert!(min < max, "{}", preview["estimated_cost"]);
    assert_eq!(
        preview["billing"],
        json!({"preflight": "estimate", "cost_class": "metered"})
    );
    assert_eq!(preview["effects"][0]["kind"], "external_call");
    assert_eq!(preview["effects"][0]["external"], true);
    assert_eq!(local.requests(), 0, "a preview calls no provider");

    let plan = gw.approved("text.generate", text_params(2048)).await;
    assert_eq!(local.requests(), 0, "an approval calls no provider");
    let reply = gw.execute(&plan).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let envelope = &reply.body;
    assert_eq!(envelope["success"], true);
    assert_eq!(envelope["provider"], "openai");
    assert!(envelope["content"]
        .as_str()
        .unwrap()
        .starts_with("Demo answer from gpt-4o"));
    let usage = &envelope["usage"];
    let (input, output) = (
        usage["input_tokens"].as_u64().unwrap(),
        usage["output_tokens"].as_u64().unwrap(),
    );
    assert!(input > 0 && output > 0, "{usage}");
    // gpt-4o: 0.25 credits per 1,000 tokens in, 1.00 per 1,000 out, rounded up to a hundredth.
    let cost =
        (Decimal::from(input) * Decimal::new(25, 2) + Decimal::from(output)) / Decimal::from(1000);
    let charged = amount(&usage["credits"]);
    assert_eq!(
        charged,
        cost.round_dp_with_strategy(
            Credits::DECIMALS,
            rust_decimal::RoundingStrategy::ToPositiveInfinity,
        )
    );
    assert!(min <= charged && charged <= max);
    assert_eq!(envelope["metadata"]["charged"]["amount"], usage["credits"]);
    assert_eq!(envelope["metadata"]["model"], "gpt-4o");
    // The provider's keys the envelope has no field for reach the agent under metadata.
    assert_eq!(
        envelope["metadata"]["provider_fields"]["object"],
        "chat.completion"
    );
    assert_eq!(
        envelope["metadata"]["system_fingerprint"],
        "fp_countersign_demo"
    );
    for modality in ["images", "files", "videos"] {
        assert_eq!(envelope[modality], json!([]), "{modality}");
    }
    assert_eq!(
        spent(&gw, &plan).await,
        charged,
        "the wallet pays the usage, not the maximum"
    );
    assert_eq!(local.requests(), 1);

    let record = status(&gw, &plan).await;
    assert_eq!(record["status"], "executed");
    assert_eq!(&record["execution"]["result"], envelope);
    assert!(record["execution"]
        .get("in_flight")
        .is_none_or(|v| v == false));

    let again = gw.execute(&plan).await;
    assert_error(&again, "plan_already_executed", 409);
    assert_eq!(local.requests(), 1, "a plan calls its provider once");
}

async fn set_runner(store: &countersign_engine::Store, plan: &Value, runner: &str) {
    let mut w = store.write().await.unwrap();
    sqlx::query("UPDATE plans SET runner = $1 WHERE id = $2")
        .bind(runner)
        .bind(plan["plan_id"].as_str())
        .execute(&mut *w.tx)
        .await
        .unwrap();
    w.commit().await.unwrap();
}

async fn write(gw: &Gateway, sql: &str, bind: &str) {
    let mut w = gw.state.store.write().await.unwrap();
    sqlx::query(sql)
        .bind(bind)
        .execute(&mut *w.tx)
        .await
        .unwrap();
    w.commit().await.unwrap();
}

#[tokio::test]
async fn an_over_budget_call_is_refused_before_it_reaches_the_provider() {
    let (gw, local) = gateway().await;
    // 10 seconds of video may take 300 s of prediction: 60 credits, over the 50-credit wallet.
    let params =
        json!({"model": "minimax/video-01", "prompt": "A lighthouse at dusk", "seconds": 10});
    let plan = gw.preview("video.generate", params).await;
    assert_eq!(plan["estimated_cost"]["amount_max"], "60.00");
    assert_eq!(plan["executable"], false);
    assert_eq!(plan["validation"][0]["code"], "insufficient_budget");

    // Two seconds (12 credits at most) fit when approved; the wallet is spent before the invoke.
    let params =
        json!({"model": "minimax/video-01", "prompt": "A lighthouse at dusk", "seconds": 2});
    let plan = gw.approved("video.generate", params).await;
    let agent = plan["caller"]["agent_id"].as_str().unwrap();
    write(
        &gw,
        "INSERT INTO wallets (agent_id, limit_credits, spent_credits) VALUES ($1, '50.00', '45.00')",
        agent,
    )
    .await;
    let reply = gw.execute(&plan).await;
    assert_error(&reply, "budget_exceeded", 402);
    assert_eq!(local.requests(), 0, "the provider saw no request");
    assert_eq!(spent(&gw, &plan).await, Decimal::new(4500, 2));
    assert_eq!(
        status(&gw, &plan).await["status"],
        "approved",
        "nothing was recorded"
    );
}

#[tokio::test]
async fn a_cheap_call_runs_without_approval_and_speech_arrives_as_a_file() {
    let (gw, local) = gateway().await;
    let text = "Your plan was approved.";
    let params = json!({"model": "tts-1", "input": text, "voice": "nova", "format": "wav"});
    let plan = gw.preview("speech.synthesize", params).await;
    assert_eq!(plan["would_require_approval"], false);
    assert_eq!(
        plan["estimated_cost"]["amount_min"],
        plan["estimated_cost"]["amount_max"]
    );
    let reply = gw.execute(&plan).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let file = &reply.body["files"][0];
    assert_eq!(file["mime_type"], "audio/wav");
    let url = file["url"].as_str().unwrap();
    let audio = base64::engine::general_purpose::STANDARD
        .decode(url.strip_prefix("data:audio/wav;base64,").unwrap())
        .unwrap();
    assert_eq!(&audio[..4], b"RIFF");
    assert_eq!(file["size_bytes"], audio.len());
    assert_eq!(
        file["sha256"],
        format!("sha256:{}", hex::encode(Sha256::digest(&audio)))
    );
    assert_eq!(
        reply.body["usage"]["units"]["characters"],
        text.chars().count()
    );
    assert_eq!(
        spent(&gw, &plan).await,
        amount(&plan["estimated_cost"]["amount_max"])
    );
    assert_eq!(local.requests(), 1);
}

#[tokio::test]
async fn images_and_videos_come_back_as_urls_charged_by_prediction_time() {
    let (gw, _local) = gateway().await;
    let params =
        json!({"model": "black-forest-labs/flux-schnell", "prompt": "Two owls", "count": 2});
    let plan = gw.preview("image.generate", params).await;
    assert_eq!(plan["billing"]["cost_class"], "external_passthrough");
    assert_eq!(
        plan["would_require_approval"], false,
        "0.80 credits at most"
    );
    let reply = gw.execute(&plan).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let images = reply.body["images"].as_array().unwrap();
    assert_eq!(images.len(), 2);
    assert_eq!(images[0]["mime_type"], "image/svg+xml");
    // 2.5 s per image, midway through flux-schnell's 1–4 s, at 0.10 credits per second.
    assert_eq!(reply.body["usage"]["units"]["predict_ms"], 5000);
    assert_eq!(reply.body["usage"]["credits"], "0.50");
    assert_eq!(reply.body["metadata"]["duration_ms"], 5000);

    let video = json!({"model": "minimax/video-01", "prompt": "Waves", "seconds": 1});
    let plan = gw.approved("video.generate", video).await;
    let reply = gw.execute(&plan).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.body["videos"].as_array().unwrap().len(), 1);
    assert_eq!(reply.body["images"], json!([]));
    assert_eq!(reply.body["content"], "Generated 1 video.");
}

#[tokio::test]
async fn a_call_the_provider_certainly_did_not_do_leaves_the_plan_to_run_again() {
    let (gw, local) = gateway().await;
    let params = json!({"model": "gpt-4o-mini", "max_tokens": 64, "messages": [
        {"role": "user", "content": "Please [[rate-limit]] me."}]});
    let plan = gw.preview("text.generate", params).await;
    let reply = gw.execute(&plan).await;
    assert_error(&reply, "provider_rate_limited", 429);
    assert_eq!(reply.body["provider"], "openai");
    assert_eq!(
        reply.body["error"]["retryable"], true,
        "the same invoke may succeed later"
    );
    assert_eq!(reply.body["error"]["details"]["charged"]["amount"], "0.00");
    assert_eq!(
        local.requests(),
        3,
        "a 429 is tried again, a bounded number of times"
    );
    assert_eq!(
        spent(&gw, &plan).await,
        Decimal::ZERO,
        "the reservation went back"
    );
    let record = status(&gw, &plan).await;
    assert_eq!(record["status"], "approved");
    assert_eq!(record["execution"], Value::Null);

    // Without an endpoint the call is refused before anything is reserved or used up.
    let unconfigured = Gateway::new().await;
    let plan = unconfigured
        .approved("text.generate", text_params(2048))
        .await;
    let reply = unconfigured.execute(&plan).await;
    assert_error(&reply, "provider_misconfigured", 502);
    assert_eq!(status(&unconfigured, &plan).await["status"], "approved");
    assert_eq!(spent(&unconfigured, &plan).await, Decimal::ZERO);
}

#[tokio::test]
async fn a_refused_answer_bills_its_tokens_and_uses_the_plan_up() {
    let (gw, _local) = gateway().await;
    let filtered = json!({"model": "gpt-4o-mini", "max_tokens": 64, "messages": [
        {"role": "user", "content": "[[content-filter]]"}]});
    let plan = gw.preview("text.generate", filtered).await;
    let reply = gw.execute(&plan).await;
    assert_error(&reply, "provider_refused", 422);
    assert_eq!(reply.body["error"]["retryable"], false);
    // Its prompt's tokens at 0.015 credits per 1,000, rounded up to a hundredth.
    assert_eq!(reply.body["error"]["details"]["charged"]["amount"], "0.01");
    assert_eq!(spent(&gw, &plan).await, Decimal::new(1, 2));
    let record = status(&gw, &plan).await;
    assert_eq!(record["status"], "failed");
    assert_eq!(
        record["execution"]["result"]["error"]["code"],
        "provider_refused"
    );
    assert_error(&gw.execute(&plan).await, "plan_not_pending", 409);
}

#[tokio::test]
async fn a_prediction_that_outruns_its_budget_is_canceled_and_charged_the_maximum() {
    let (gw, _local) = gateway().await;
    let params = json!({"model": "black-forest-labs/flux-schnell", "prompt": "[[slow]] owl"});
    let plan = gw.preview("image.generate", params).await;
    let reply = gw.execute(&plan).await;
    assert_error(&reply, "provider_timeout", 504);
    assert_eq!(reply.body["error"]["details"]["cut_off"], true);
    let max = amount(&plan["estimated_cost"]["amount_max"]);
    assert_eq!(
        spent(&gw, &plan).await,
        max,
        "billed up to the cut-off, never more"
    );
}

#[tokio::test]
async fn a_call_in_flight_when_the_gateway_stopped_is_recorded_as_failed() {
    let dir = tempfile::tempdir().unwrap();
    let url = crate::common::demo_database(&format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("gw.db").display()
    ))
    .await;
    let gw = Gateway::at(&url).await;
    let params = json!({"model": "tts-1", "input": "Hello", "voice": "alloy"});
    let plan = gw.preview("speech.synthesize", params).await;
    // No runner yet: the sweeps of this gateway, still running, must not take it before the
    // test names one.
    write(
        &gw,
        "UPDATE plans SET status = 'executed',
         execution = '{\"in_flight\": true, \"audit_id\": \"aud_x\"}' WHERE id = $1",
        plan["plan_id"].as_str().unwrap(),
    )
    .await;
    drop(gw);
    let mut store = countersign_engine::Store::open(&url).await.unwrap();
    match store.dialect() {
        Dialect::Sqlite => {
            // Another process on the database (`mcp` over stdio) leaves a call in flight alone:
            // only the serving process recovers, at its start.
            let other = crate::common::state(store).await;
            let still: String = sqlx::query_scalar("SELECT status FROM plans WHERE id = $1")
                .bind(plan["plan_id"].as_str())
                .fetch_one(other.store.pool())
                .await
                .unwrap();
            assert_eq!(still, "executed");
            drop(other);
            store = countersign_engine::Store::open(&url).await.unwrap();
        }
        Dialect::Postgres => {
            // Every instance sweeps, and leaves alone a call whose runner is alive.
            let runner = store.instance().to_owned();
            set_runner(&store, &plan, &runner).await;
            let recovered = recover_interrupted(&store, default_registry()).await;
            assert_eq!(recovered.unwrap(), 0);
            // An instance no connection names any more.
            set_runner(&store, &plan, "inst_gone").await;
        }
    }
    assert_eq!(
        recover_interrupted(&store, default_registry())
            .await
            .unwrap(),
        1
    );
    let restarted = crate::common::state(store).await;
    let (state, execution): (String, String) =
        sqlx::query_as("SELECT status, execution FROM plans WHERE id = $1")
            .bind(plan["plan_id"].as_str())
            .fetch_one(restarted.store.pool())
            .await
            .unwrap();
    let execution: Value = serde_json::from_str(&execution).unwrap();
    assert_eq!(state, "failed");
    assert_eq!(execution["in_flight"], false);
    assert_eq!(execution["result"]["error"]["code"], "provider_unavailable");
}

#[tokio::test]
async fn an_idempotency_key_is_held_while_the_call_is_in_flight() {
    let (gw, _local) = gateway().await;
    let gw = std::sync::Arc::new(gw);
    let params = json!({"model": "black-forest-labs/flux-schnell", "prompt": "[[slow]] owl"});
    let plan = gw.preview("image.generate", params).await;
    let body = json!({"plan_id": plan["plan_id"], "idempotency_key": "owl-1"});
    let first = {
        let (gw, body) = (gw.clone(), body.clone());
        tokio::spawn(async move { gw.invoke_as(&gw.agent, "image.generate", body).await })
    };
    // The first call holds its key (an empty response) before the second is sent.
    loop {
        let held: Option<String> =
            sqlx::query_scalar("SELECT response FROM invocations WHERE idempotency_key = 'owl-1'")
                .fetch_optional(gw.state.store.pool())
                .await
                .unwrap();
        if held.as_deref() == Some("") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let meanwhile = gw
        .invoke_as(&gw.agent, "image.generate", body.clone())
        .await;
    assert_error(&meanwhile, "plan_already_executed", 409);
    assert!(meanwhile.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("in flight"));
    let first = first.await.unwrap();
    assert_error(&first, "provider_timeout", 504);
    // The failed call freed its key; its plan is used up.
    let after = gw.invoke_as(&gw.agent, "image.generate", body).await;
    assert_error(&after, "plan_not_pending", 409);

    let speech = json!({"model": "tts-1", "input": "Once.", "voice": "alloy"});
    let plan = gw.preview("speech.synthesize", speech).await;
    let body = json!({"plan_id": plan["plan_id"], "idempotency_key": "once"});
    let answered = gw
        .invoke_as(&gw.agent, "speech.synthesize", body.clone())
        .await;
    let again = gw.invoke_as(&gw.agent, "speech.synthesize", body).await;
    assert_eq!(answered.status, 200);
    assert_eq!(
        again.body, answered.body,
        "the stored answer, not a second call"
    );
}

/// Seed 004's paired test for the provider capabilities: what the provider received is the
/// request the plan signed, field for field and nothing else, sent once; and the wallet paid what
/// the envelope says was charged, within the range the preview gave.
#[tokio::test]
async fn what_the_provider_received_is_what_the_plan_signed_and_the_wallet_paid_the_charge() {
    let (gw, local) = gateway().await;
    let dana = gw.enroll("Dana").await;
    let cases = [
        ("text.generate", text_params(64)),
        (
            "speech.synthesize",
            json!({"model": "tts-1", "input": "Hello there", "voice": "nova"}),
        ),
        (
            "image.generate",
            json!({"model": "black-forest-labs/flux-schnell", "prompt": "Two owls", "count": 2}),
        ),
        (
            "video.generate",
            json!({"model": "minimax/video-01", "prompt": "Waves", "seconds": 1}),
        ),
    ];
    for (capability, params) in cases {
        let plan = gw.preview(capability, params).await;
        if plan["would_require_approval"] == true {
            crate::common::approve_by(&gw, &plan, &[&dana]).await;
        }
        let signed = &plan["request"]["params"];
        let (path, body) = match capability {
            "text.generate" => (
                "/v1/chat/completions".to_owned(),
                json!({"model": signed["model"], "messages": signed["messages"],
                       "max_tokens": signed["max_tokens"]}),
            ),
            "speech.synthesize" => (
                "/v1/audio/speech".to_owned(),
                json!({"model": signed["model"], "input": signed["input"],
                       "voice": signed["voice"], "response_format": "wav"}),
            ),
            "image.generate" => (
                format!(
                    "/v1/models/{}/predictions",
                    signed["model"].as_str().unwrap()
                ),
                json!({"input": {"prompt": signed["prompt"], "num_outputs": signed["count"],
                                 "width": 1024, "height": 1024}}),
            ),
            _ => (
                format!(
                    "/v1/models/{}/predictions",
                    signed["model"].as_str().unwrap()
                ),
                json!({"input": {"prompt": signed["prompt"], "duration": signed["seconds"]}}),
            ),
        };
        let (already, before) = (local.sent().len(), spent(&gw, &plan).await);
        let reply = gw.execute(&plan).await;
        assert_eq!(reply.status, 200, "{capability}: {}", reply.body);
        let sent = local.sent();
        let work: Vec<_> = sent[already..]
            .iter()
            .filter(|s| s.method == "POST")
            .collect();
        assert_eq!(
            work.len(),
            1,
            "{capability}: one call of paid work: {work:?}"
        );
        assert_eq!(work[0].path, path, "{capability}");
        assert_eq!(
            work[0].body, body,
            "{capability}: sent as signed, nothing else"
        );

        let charged = amount(&reply.body["metadata"]["charged"]["amount"]);
        assert_eq!(spent(&gw, &plan).await - before, charged, "{capability}");
        let range = &plan["estimated_cost"];
        assert!(
            amount(&range["amount_min"]) <= charged && charged <= amount(&range["amount_max"]),
            "{capability}: {charged} outside {range}"
        );
    }
}
