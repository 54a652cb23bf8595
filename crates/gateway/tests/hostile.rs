//! The hostile request corpus in `tests/hostile/`: each body sent to a dry_run answers within the
//! error contract (never a 500, never a plan from an ambiguous request), and the world is as it was.

use std::path::PathBuf;

use crate::common::Gateway;
use axum::body::Body;
use axum::http::Request;

fn corpus() -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/hostile");
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap())
        })
        .collect();
    files.sort();
    assert!(files.len() >= 15, "the corpus is there");
    files
}

#[tokio::test]
async fn every_hostile_request_is_refused_in_the_contract() {
    let gw = Gateway::new().await;
    let before = gw.snapshot().await;
    for (name, body) in corpus() {
        let reply = gw
            .send(
                Request::post("/v1/capabilities/projects.settings.update/dry_run")
                    .header("authorization", format!("Bearer {}", gw.agent))
                    .header("content-type", "application/json")
                    .body(Body::from(body))
                    .unwrap(),
            )
            .await;
        let message = if reply.status.as_u16() == 200 {
            // Seed 000's answer to params that do not fit the schema: no plan is made.
            assert_eq!(reply.body["valid"], false, "{name}: {}", reply.body);
            assert!(reply.body.get("plan_id").is_none(), "{name}: a plan");
            reply.body["violations"][0]["message"].clone()
        } else {
            assert_eq!(reply.status.as_u16(), 422, "{name}: {}", reply.body);
            assert_eq!(reply.body["success"], false, "{name}");
            assert_eq!(reply.body["error"]["code"], "validation_error", "{name}");
            reply.body["error"]["message"].clone()
        };
        let message = message.as_str().unwrap_or_default();
        assert!(
            !message.is_empty() && message.len() < 2_000,
            "{name}: {message}"
        );
    }
    assert_eq!(gw.snapshot().await, before);
}
