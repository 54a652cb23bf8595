//! `GET /v1/stats` and `countersign-gateway stats` after a scripted week: exactly its numbers.

use axum::http::StatusCode;
use countersign_proto::decision::Decision;
use serde_json::Value;

use crate::common::{approve_by, assert_error, on_disk, retention, Gateway, RETENTION};

#[tokio::test]
async fn stats_count_each_decision_its_time_and_the_approvals_faster_than_reading() {
    let database = on_disk(true).await;
    let gw = Gateway::at(&database).await;
    let (dana, lena) = (gw.enroll("Dana").await, gw.enroll("Lena").await);
    let slow = gw.preview(RETENTION, retention("prj_184", 14)).await;
    let ten_minutes_ago = countersign_engine::ids::to_text(
        countersign_engine::ids::now() - chrono::Duration::minutes(10),
    );
    let mut w = gw.state.store.write().await.unwrap();
    sqlx::query("UPDATE plans SET created_at = $1 WHERE id = $2")
        .bind(&ten_minutes_ago)
        .bind(slow["plan_id"].as_str())
        .execute(&mut *w.tx)
        .await
        .unwrap();
    w.commit().await.unwrap();
    approve_by(&gw, &slow, &[&dana]).await;
    let fast = gw.preview(RETENTION, retention("prj_184", 13)).await;
    approve_by(&gw, &fast, &[&dana]).await;
    let no = gw.preview(RETENTION, retention("prj_311", 12)).await;
    let mut rejection = lena.statement(&gw, &no);
    rejection.decision = Decision::Reject;
    rejection.reason = Some("Not this week".into());
    let rejected = lena
        .send(&gw, no["plan_id"].as_str().unwrap(), &lena.sign(&rejection))
        .await;
    assert_eq!(rejected.status, StatusCode::OK, "{}", rejected.body);
    let waited = gw.preview(RETENTION, retention("prj_311", 11)).await;
    gw.expire(waited["plan_id"].as_str().unwrap()).await;
    countersign_engine::queue::sweep(&gw.state.store, gw.state.registry)
        .await
        .unwrap();

    let reply = gw
        .call("GET", "/v1/stats?since=1d", Some(&dana.token), None)
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let stats = reply.body;
    let [capability] = stats["capabilities"].as_array().unwrap().as_slice() else {
        panic!("{stats}")
    };
    assert_eq!(capability["capability_id"], RETENTION);
    for (field, expected) in [
        ("decided", 3),
        ("approved", 2),
        ("rejected", 1),
        ("expired_waiting", 1),
        ("faster_than_reading", 1),
    ] {
        assert_eq!(capability[field], expected, "{field}: {capability}");
    }
    let p90 = capability["p90_seconds"].as_f64().unwrap();
    assert!(
        (600.0..660.0).contains(&p90),
        "the slow plan waited ten minutes: {p90}"
    );
    assert!(capability["median_seconds"].as_f64().unwrap() < 60.0);

    let approver = |name: &str| -> Value {
        stats["approvers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["display_name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name} in {stats}"))
    };
    let (d, l) = (approver("Dana"), approver("Lena"));
    assert_eq!(
        (
            &d["decided"],
            &d["approved"],
            &d["rejected"],
            &d["faster_than_reading"]
        ),
        (&2.into(), &2.into(), &0.into(), &1.into()),
        "{d}"
    );
    assert_eq!(
        (
            &l["decided"],
            &l["approved"],
            &l["rejected"],
            &l["faster_than_reading"]
        ),
        (&1.into(), &0.into(), &1.into(), &0.into()),
        "{l}"
    );
    let today = stats["days"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(today["decided"], 3, "{today}");
    assert_eq!(stats["reading"]["base_seconds"], 5);

    let refused = gw
        .call("GET", "/v1/stats?since=7w", Some(&dana.token), None)
        .await;
    assert_error(&refused, "validation_error", 422);
    let unknown = gw
        .call("GET", "/v1/stats?from=7d", Some(&dana.token), None)
        .await;
    assert_eq!(
        unknown.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        unknown.body
    );
    let agent = gw.call("GET", "/v1/stats", Some(&gw.agent), None).await;
    assert!(agent.status.is_client_error(), "{}", agent.body);

    let output = std::process::Command::new(crate::cli::BIN)
        .args(["stats", "--database", &database, "--since", "1d", "--json"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(printed["capabilities"], stats["capabilities"]);
    assert_eq!(printed["approvers"], stats["approvers"]);
    let table = std::process::Command::new(crate::cli::BIN)
        .args(["stats", "--database", &database, "--since", "1d"])
        .output()
        .unwrap();
    let table = String::from_utf8(table.stdout).unwrap();
    let row = table.lines().find(|l| l.starts_with(RETENTION)).unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[1..3], ["3", "67"], "{table}");
}

#[tokio::test]
async fn the_description_writes_a_window_as_the_gateway_reads_it() {
    let gw = Gateway::new().await;
    let api = gw.call("GET", "/v1/openapi.json", None, None).await.body;
    let since = &api["paths"]["/v1/stats"]["get"]["parameters"][0];
    assert_eq!(since["name"], "since");
    assert_eq!(
        since["schema"]["pattern"],
        countersign_engine::approval::stats::WINDOW_PATTERN
    );
}
