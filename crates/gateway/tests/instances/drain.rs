//! SIGTERM to one of two serving processes on one PostgreSQL database, during a storm of
//! decisions: it answers what it took, its event stream says goodbye, it exits 0, and the other
//! instance carries on from where the stream left off, with every decision counted once.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{json, Value};

use super::{first, serve, shared_database, within};
use crate::common::sse::Events;
use crate::common::{retention, JsonReply, RETENTION};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_during_a_storm_of_decisions_loses_none_and_the_other_instance_carries_on() {
    let url = shared_database().await;
    let setup = first(&url).await;
    let dana = setup.enroll("Dana").await;
    let mut plans = Vec::new();
    for days in 1..60 {
        let plan = setup.preview(RETENTION, retention("prj_184", days)).await;
        // Only what waits for a person: a longer retention needs nobody.
        if plan["would_require_approval"] == true {
            plans.push(plan);
        }
    }
    assert!(plans.len() >= 20, "{} plans wait", plans.len());
    // With --demo, A calls a local provider of its own, where a `[[slow]]` prediction never ends.
    let (mut a, a_url) = serve(&url, &["--drain-seconds", "1", "--demo"]);
    let (mut b, b_url) = serve(&url, &[]);
    let mut on_a = Events::open_at(&a_url, &dana.token, None).await;

    let client = reqwest::Client::new();
    let params = json!({"model": "black-forest-labs/flux-schnell", "prompt": "[[slow]] owl"});
    let slow: Value = client
        .post(format!("{a_url}/v1/capabilities/image.generate/dry_run"))
        .bearer_auth(&setup.agent)
        .json(&json!({ "params": params }))
        .json_reply()
        .await;
    let slow_id = slow["plan_id"].as_str().unwrap().to_owned();
    let call = tokio::spawn(
        client
            .post(format!("{a_url}/v1/capabilities/image.generate/invoke"))
            .bearer_auth(&setup.agent)
            .json(&json!({ "plan_id": slow_id }))
            .send(),
    );
    let in_flight = "SELECT COUNT(*) FROM plans WHERE id = $1 AND runner IS NOT NULL";
    within(async {
        while setup.count(in_flight, &slow_id).await == 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;

    let decide = |base: &str, plan: &Value| {
        let envelope = dana.sign(&dana.statement(&setup, plan));
        client
            .post(format!(
                "{base}/v1/plans/{}/decisions",
                plan["plan_id"].as_str().unwrap()
            ))
            .bearer_auth(&dana.token)
            .json(&envelope)
            .send()
    };
    let answered = tokio::sync::Notify::new();
    // Sent one after another, so that the storm runs on across the signal: the first ones A
    // answers, those under way when it stops it finishes, the rest it no longer takes.
    let storm = futures_util::future::join_all(plans.iter().enumerate().map(|(i, plan)| {
        let (decide, answered, b_url, a_url) = (&decide, &answered, &b_url, &a_url);
        async move {
            tokio::time::sleep(Duration::from_millis(25) * i as u32).await;
            let (reply, resent) = match decide(a_url, plan).await {
                Ok(reply) => (reply, false),
                // What A no longer took, Dana's console sends again, and B answers.
                Err(_) => (decide(b_url, plan).await.unwrap(), true),
            };
            answered.notify_one();
            (reply.status(), reply.text().await.unwrap(), resent)
        }
    }));
    let stop = async {
        for _ in 0..10 {
            answered.notified().await;
        }
        let signalled = std::process::Command::new("kill")
            .args(["-TERM", &a.id().to_string()])
            .status()
            .unwrap();
        assert!(signalled.success());
    };
    let (replies, ()) = tokio::join!(storm, stop);
    for (status, body, resent) in &replies {
        // Only a resend may find its decision taken: A decided it as its connection closed.
        let taken = *resent && (body.contains("already decided") || body.contains("is approved"));
        assert!(status.is_success() || taken, "{status}: {body}");
    }
    let resent = replies.iter().filter(|(_, _, resent)| *resent).count();
    assert!(resent < replies.len(), "A answered nothing");
    assert!(
        resent > 0,
        "A took every decision: the storm ended before the signal"
    );
    println!(
        "{resent} of {} decisions were sent again to B",
        replies.len()
    );
    let exit = tokio::task::spawn_blocking(move || a.wait().unwrap())
        .await
        .unwrap();
    assert_eq!(exit.code(), Some(0), "{exit:?}");
    // The call still out at the drain's deadline was answered, and recorded, as of unknown
    // outcome by A itself; it runs no more, on A or B.
    let cut = call
        .await
        .unwrap()
        .expect("A answered the call before it stopped");
    let status = cut.status();
    let cut: Value = cut.json().await.unwrap();
    assert_eq!(status, 502, "{cut}");
    assert_eq!(cut["error"]["details"]["outcome"], "unknown", "{cut}");
    let failed =
        "SELECT COUNT(*) FROM plans WHERE id = $1 AND status = 'failed' AND runner IS NULL";
    assert_eq!(setup.count(failed, &slow_id).await, 1);
    let again = client
        .post(format!("{b_url}/v1/capabilities/image.generate/invoke"))
        .bearer_auth(&setup.agent)
        .json(&json!({ "plan_id": slow_id }))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 409, "never run twice");

    let mut seen = BTreeSet::new();
    let mut last_id = None;
    let goodbye = within(async {
        loop {
            let event = on_a.next(false).await;
            if event.event.as_deref() == Some("shutdown") {
                return event;
            }
            let summary: Value = serde_json::from_str(&event.data).unwrap();
            if summary["status"] == "approved" {
                seen.insert(summary["plan_id"].as_str().unwrap().to_owned());
            }
            last_id = event.id.clone();
        }
    })
    .await;
    assert_eq!(goodbye.retry.as_deref(), Some("1000"));
    let said: Value = serde_json::from_str(&goodbye.data).unwrap();
    if let Some(id) = &last_id {
        assert_eq!(said["revision"], id.as_str());
    }
    let resume = said["revision"].as_str().unwrap().to_owned();
    let mut on_b = Events::open_at(&b_url, &dana.token, Some(&resume)).await;
    let marker = setup.preview(RETENTION, retention("prj_184", 99)).await;
    within(async {
        loop {
            let event = on_b.next(false).await;
            let summary: Value = serde_json::from_str(&event.data).unwrap();
            if summary["plan_id"] == marker["plan_id"] {
                return;
            }
            if summary["status"] == "approved" {
                seen.insert(summary["plan_id"].as_str().unwrap().to_owned());
            }
        }
    })
    .await;
    let every: BTreeSet<String> = plans
        .iter()
        .map(|p| p["plan_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        seen, every,
        "each approval reached the stream, on A or after it on B"
    );
    for plan in &plans {
        let id = plan["plan_id"].as_str().unwrap();
        let decisions = "SELECT COUNT(*) FROM decisions WHERE plan_id = $1";
        assert_eq!(setup.count(decisions, id).await, 1, "{id}");
        let approved = "SELECT COUNT(*) FROM plans WHERE id = $1 AND status = 'approved'";
        assert_eq!(setup.count(approved, id).await, 1, "{id}");
    }
    b.kill().unwrap();
    b.wait().unwrap();
}
