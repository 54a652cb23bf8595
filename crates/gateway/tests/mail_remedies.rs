//! Remedies for the emails an execution could not send as planned (seed 004: a compensating
//! action, a new decision where the difference matters): an approver's signed statement over a
//! held or failed message, as the plan record shows it, releases it to its recipient's address
//! now, resends it, or cancels it and refunds its charge; nothing is sent twice.

use countersign_engine::mail::{self, Pass};
use countersign_gateway::smtp::Relay;
use countersign_proto::decision::Signer;
use countersign_proto::dsse::Envelope;
use countersign_proto::mail::{HeldMail, MailRemedyStatement, Remedy};
use countersign_proto::statement::Signed as _;
use serde_json::{json, Value};

use crate::common::smtp::{set_email, Sink};
use crate::common::{assert_error, grant, Approver, Gateway, Reply, GRANT};

const FROM: &str = "Countersign <countersign@localhost>";

async fn dispatch(gw: &Gateway, relay: &Relay, hours_on: i64) -> Pass {
    let at = countersign_engine::ids::now() + chrono::Duration::hours(hours_on);
    mail::dispatch(&gw.state.store, gw.state.registry, relay, at)
        .await
        .unwrap()
}

/// The plan record's deliveries, as `approver` reads them.
async fn deliveries(gw: &Gateway, approver: &Approver, plan_id: &str) -> Value {
    let record = gw.record(&approver.token, plan_id).await;
    record.body["execution"]["deliveries"].clone()
}

/// The first message needing a person, as shown, checked against the digest shown beside it.
fn shown(deliveries: &Value) -> HeldMail {
    let item = &deliveries["attention"][0];
    let mail: HeldMail = serde_json::from_value(item.clone()).unwrap();
    assert_eq!(item["digest"], mail.digest().unwrap(), "{item}");
    mail
}

fn signed(gw: &Gateway, approver: &Approver, mail: &HeldMail, remedy: Remedy) -> Envelope {
    let signer = Signer {
        approver_id: &approver.id,
        key_id: &approver.key_id,
        audience: &gw.state.gateway_id,
    };
    let statement = MailRemedyStatement::new(signer, mail, remedy).unwrap();
    statement.sign(&approver.key).unwrap()
}

/// `remedy` for `mail`, signed by `approver` and sent as them.
async fn remedy(gw: &Gateway, approver: &Approver, mail: &HeldMail, remedy: Remedy) -> Reply {
    send(gw, approver, mail, &signed(gw, approver, mail, remedy)).await
}

async fn send(gw: &Gateway, approver: &Approver, mail: &HeldMail, envelope: &Envelope) -> Reply {
    let uri = format!("/v1/plans/{}/mail/{}", mail.plan_id, mail.message_id);
    let body = serde_json::to_value(envelope).unwrap();
    gw.call("POST", &uri, Some(&approver.token), Some(body))
        .await
}

/// An approved grant of admin on prj_184 to usr_92, run: its invitation queued. Its id.
async fn invited(gw: &Gateway) -> String {
    let plan = gw
        .approved(GRANT, grant("prj_184", "usr_92", "admin"))
        .await;
    assert_eq!(gw.execute(&plan).await.status, 200);
    plan["plan_id"].as_str().unwrap().to_owned()
}

async fn spent(gw: &Gateway, agent_id: &str) -> String {
    sqlx::query_scalar("SELECT spent_credits FROM wallets WHERE agent_id = $1")
        .bind(agent_id)
        .fetch_one(gw.state.store.pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn a_message_held_for_a_changed_address_is_released_there_once_by_a_signed_remedy() {
    let sink = Sink::start().await;
    let relay = Relay::new(&sink.url, FROM).unwrap();
    let gw = Gateway::new().await;
    let plan_id = &invited(&gw).await;
    set_email(&gw, "usr_92", "sam@elsewhere.example").await;
    assert_eq!(dispatch(&gw, &relay, 0).await.held, 1);

    let dana = gw.enroll("Dana").await;
    let held = shown(&deliveries(&gw, &dana, plan_id).await);
    assert_eq!(held.state, "held");
    assert_eq!(held.release_to.as_deref(), Some("sam@elsewhere.example"));
    assert_ne!(held.recipient, "sam@elsewhere.example");
    assert_eq!(held.subject, "You were invited to prj_184");
    assert_eq!(held.remedies(), [Remedy::Release, Remedy::Cancel]);

    // Resend does not fit a held message; a statement over another reading of it does not count.
    let wrong = remedy(&gw, &dana, &held, Remedy::Resend).await;
    assert_error(&wrong, "validation_error", 422);
    let mut misread = held.clone();
    misread.release_to = Some("mallory@example.com".to_owned());
    let forged = signed(&gw, &dana, &misread, Remedy::Release);
    assert_error(
        &send(&gw, &dana, &held, &forged).await,
        "digest_mismatch",
        422,
    );
    let eve = gw.enroll("Eve").await;
    let borrowed = send(
        &gw,
        &eve,
        &held,
        &signed(&gw, &dana, &held, Remedy::Release),
    )
    .await;
    assert_error(&borrowed, "bad_signature", 401);
    assert_eq!(
        dispatch(&gw, &relay, 1).await,
        Pass::default(),
        "still held"
    );

    let release = signed(&gw, &dana, &held, Remedy::Release);
    let reply = send(&gw, &dana, &held, &release).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        reply.body,
        json!({"message_id": held.message_id, "remedy": "release", "state": "pending",
               "recipient": "sam@elsewhere.example", "refunded": "0.00"})
    );
    assert_eq!(dispatch(&gw, &relay, 0).await.sent, 1);
    assert_eq!(sink.recipients(), ["sam@elsewhere.example"]);
    // The same statement again, and another pass: nothing more leaves.
    assert_error(
        &send(&gw, &dana, &held, &release).await,
        "digest_mismatch",
        422,
    );
    assert_eq!(dispatch(&gw, &relay, 2).await, Pass::default());
    assert_eq!(sink.messages().len(), 1);

    let after = deliveries(&gw, &dana, plan_id).await;
    assert_eq!(after["counts"], json!({"sent": 1}));
    assert_eq!(after["attention"], json!([]));
    assert_eq!(after["remedies"][0]["remedy"], "release");
    assert_eq!(after["remedies"][0]["approver"], "Dana");
    assert_eq!(after["remedies"][0]["user_id"], "usr_92");
    let kept: String = sqlx::query_scalar("SELECT envelope FROM mail_remedies")
        .fetch_one(gw.state.store.pool())
        .await
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Envelope>(&kept).unwrap(),
        release,
        "the audit keeps the statement as signed"
    );
}

#[tokio::test]
async fn a_message_the_relay_gave_up_on_is_resent_by_a_signed_remedy() {
    // A port nobody listens on: every attempt fails until the message is given up.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let down = Relay::new(&format!("smtp://127.0.0.1:{port}"), FROM).unwrap();
    let gw = Gateway::new().await;
    let plan_id = &invited(&gw).await;
    for attempt in 1..=mail::MAX_ATTEMPTS {
        dispatch(&gw, &down, 2 * attempt).await;
    }
    let dana = gw.enroll("Dana").await;
    let failed = shown(&deliveries(&gw, &dana, plan_id).await);
    assert_eq!(
        (failed.state.as_str(), failed.attempts),
        ("failed", mail::MAX_ATTEMPTS)
    );
    assert_eq!(failed.remedies(), [Remedy::Resend, Remedy::Cancel]);
    let release = remedy(&gw, &dana, &failed, Remedy::Release).await;
    assert_error(&release, "validation_error", 422);

    let reply = remedy(&gw, &dana, &failed, Remedy::Resend).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.body["recipient"], failed.recipient.as_str());
    let sink = Sink::start().await;
    let up = Relay::new(&sink.url, FROM).unwrap();
    assert_eq!(dispatch(&gw, &up, 0).await.sent, 1);
    assert_eq!(dispatch(&gw, &up, 5).await, Pass::default());
    assert_eq!(sink.recipients(), [failed.recipient.as_str()]);
    let after = deliveries(&gw, &dana, plan_id).await;
    assert_eq!(after["counts"], json!({"sent": 1}));
    assert_eq!(after["remedies"][0]["remedy"], "resend");
}

#[tokio::test]
async fn a_cancelled_message_is_never_sent_and_its_charge_goes_back_to_the_agent() {
    let sink = Sink::start().await;
    let relay = Relay::new(&sink.url, FROM).unwrap();
    let gw = Gateway::new().await;
    let removal = json!({"group": "grp_support", "filter": {"employment": "contractor"}});
    let plan = gw.approved("groups.members.remove", removal).await;
    let plan_id = plan["plan_id"].as_str().unwrap();
    let agent = plan["caller"]["agent_id"].as_str().unwrap();
    assert_eq!(gw.execute(&plan).await.status, 200);
    let charged = spent(&gw, agent).await;
    let first: String =
        sqlx::query_scalar("SELECT user_id FROM email_outbox WHERE plan_id = $1 ORDER BY id")
            .bind(plan_id)
            .fetch_one(gw.state.store.pool())
            .await
            .unwrap();
    set_email(&gw, &first, "moved@elsewhere.example").await;
    let pass = dispatch(&gw, &relay, 0).await;
    assert_eq!((pass.sent, pass.held), (36, 1));

    let dana = gw.enroll("Dana").await;
    let held = shown(&deliveries(&gw, &dana, plan_id).await);
    assert_eq!(held.user_id, first);
    assert_eq!(held.charge.to_string(), "0.01");
    let reply = remedy(&gw, &dana, &held, Remedy::Cancel).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.body["state"], "cancelled");
    assert_eq!(reply.body["refunded"], "0.01");
    let refunded = spent(&gw, agent).await;
    let before: rust_decimal::Decimal = charged.parse().unwrap();
    let after: rust_decimal::Decimal = refunded.parse().unwrap();
    assert_eq!(
        before - after,
        rust_decimal::Decimal::new(1, 2),
        "{charged} → {refunded}"
    );

    assert_eq!(dispatch(&gw, &relay, 3).await, Pass::default());
    assert_eq!(sink.messages().len(), 36);
    assert!(!sink
        .recipients()
        .contains(&"moved@elsewhere.example".to_owned()));
    let after = deliveries(&gw, &dana, plan_id).await;
    assert_eq!(after["counts"], json!({"cancelled": 1, "sent": 36}));
    assert_eq!(after["remedies"][0]["refunded"], "0.01");
    // Cancelled is final: no remedy reaches it again.
    let again = remedy(&gw, &dana, &held, Remedy::Release).await;
    assert_error(&again, "digest_mismatch", 422);
}

#[tokio::test]
async fn a_message_id_that_is_not_a_number_names_no_message() {
    let gw = Gateway::new().await;
    let dana = gw.enroll("Dana").await;
    for id in ["9223372036854775808", "abc", "-"] {
        let uri = format!("/v1/plans/plan_0123456789abcdef/mail/{id}");
        let reply = gw
            .call("POST", &uri, Some(&dana.token), Some(json!({})))
            .await;
        assert_error(&reply, "not_found", 404);
    }
}
