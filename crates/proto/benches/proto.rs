//! What every plan and every decision costs in-process: the plan digest of the bulk fixture, the
//! digest of a 100,000-id subject set, Ed25519 signing and verifying of a decision statement
//! (the floor under the decision round trip), and the duplicate-key check every answer the
//! console reads goes through, over a 1,000-plan listing. `make bench` reads the results from
//! criterion.

use std::path::PathBuf;

use chrono::{TimeZone, Utc};
use countersign_proto::decision::{Decision, Statement, STATEMENT_TYPE};
use countersign_proto::digest::{plan_digest, SubjectsHasher};
use countersign_proto::statement::Signed as _;
use criterion::{criterion_group, criterion_main, Criterion};
use ed25519_dalek::SigningKey;
use serde_json::Value;
use std::hint::black_box;

const SUBJECTS: usize = 100_000;

fn bulk_fixture() -> Value {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/plan-bulk.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).expect("plan-bulk.json is JSON")
}

/// Ids as the gateway pages them: ascending, so the streaming hasher applies.
fn subject_ids() -> Vec<String> {
    (1..=SUBJECTS).map(|i| format!("usr_s{i:06}")).collect()
}

fn statement() -> Statement {
    Statement {
        kind: STATEMENT_TYPE.to_owned(),
        plan_id: "plan_bench0001".to_owned(),
        plan_digest: format!("sha256:{}", "ab".repeat(32)),
        decision: Decision::Approve,
        reason: Some("Checked the retained subjects.".to_owned()),
        approver_id: "apr_bench".to_owned(),
        key_id: "key_bench".to_owned(),
        audience: "gw_bench".to_owned(),
        nonce: "0123456789abcdef0123456789abcdef".to_owned(),
        issued_at: Utc.with_ymd_and_hms(2026, 11, 30, 10, 0, 0).unwrap(),
        expires_at: Utc.with_ymd_and_hms(2026, 11, 30, 10, 15, 0).unwrap(),
    }
}

fn digests(c: &mut Criterion) {
    let mut group = c.benchmark_group("digest");
    let plan = bulk_fixture();
    group.bench_function("plan_bulk", |b| {
        b.iter(|| plan_digest(black_box(&plan)).expect("digest"))
    });
    let ids = subject_ids();
    group.bench_function("subjects_100k", |b| {
        b.iter(|| {
            let mut hasher = SubjectsHasher::default();
            for id in black_box(&ids) {
                hasher.push(id);
            }
            hasher.finish()
        })
    });
    group.finish();
}

/// A `GET /v1/approvals` answer of 1,000 summaries shaped as the gateway writes them (about
/// 600 bytes each).
fn listing() -> String {
    let items: Vec<String> = (0..1_000)
        .map(|i| {
            serde_json::json!({
                "plan_id": format!("plan_{i:016x}"),
                "plan_digest": format!("sha256:{}", "ab".repeat(32)),
                "capability_id": "projects.settings.update",
                "title": "Update project settings",
                "caller": {"agent_id": "agt_bench", "on_behalf_of": null},
                "status": "pending_approval",
                "risk_flags": ["irreversible", "bulk"],
                "cost": {"credits": "0.10", "currency": "credits"},
                "effects": {"total": 1, "direct": 1, "derived": 0},
                "validation": {"errors": 0, "warnings": 1},
                "subjects_total": 3,
                "approvals": {"required": 1, "received": 0},
                "created_at": "2026-12-04T02:00:00Z",
                "expires_at": "2026-12-04T02:15:00Z",
                "gist": {"resource": "projects/prj_184", "change": "retention_days 30 → 31"},
            })
            .to_string()
        })
        .collect();
    format!("{{\"items\":[{}],\"revision\":\"1000\"}}", items.join(","))
}

fn strict_json(c: &mut Criterion) {
    let mut group = c.benchmark_group("strict_json");
    let text = listing();
    group.bench_function("listing_1000", |b| {
        b.iter(|| {
            countersign_proto::strict_json::check(black_box(text.as_bytes())).expect("one meaning")
        })
    });
    group.finish();
}

fn signatures(c: &mut Criterion) {
    let mut group = c.benchmark_group("ed25519");
    let key = SigningKey::from_bytes(&[7; 32]);
    let statement = statement();
    group.bench_function("sign_statement", |b| {
        b.iter(|| black_box(&statement).sign(&key).expect("sign"))
    });
    let envelope = statement.sign(&key).expect("sign");
    let public = key.verifying_key();
    group.bench_function("verify_statement", |b| {
        b.iter(|| Statement::open(black_box(&envelope), &public).expect("verify"))
    });
    group.finish();
}

criterion_group!(proto, digests, signatures, strict_json);
criterion_main!(proto);
