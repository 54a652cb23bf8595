//! The console's diffs on inputs of the size DESIGN's bars name: a 1 MB text with 1 % of its lines
//! changed (line and word diff), `git diff --no-index --word-diff` on the same two files as the
//! reference, a structural diff of a 10,000-key JSON object, and a pathological text that must end
//! within its deadline. Inputs come from a fixed seed, so every run diffs the same bytes.

use std::hint::black_box;
use std::path::Path;
use std::process::{Command, Stdio};

use countersign_console::review::diff::{json_diff, text_diff};
use criterion::{criterion_group, criterion_main, Criterion, SamplingMode};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Map, Value};

const TEXT_BYTES: usize = 1_000_000;
const CHANGED_LINES_PERCENT: u32 = 1;
const JSON_KEYS: usize = 10_000;
const PATHOLOGICAL_LINES: usize = 30_000;

const WORDS: [&str; 24] = [
    "retention",
    "project",
    "artifact",
    "export",
    "nightly",
    "policy",
    "review",
    "quarterly",
    "legal",
    "hold",
    "storage",
    "quota",
    "member",
    "group",
    "access",
    "entitlement",
    "invoice",
    "credit",
    "budget",
    "agent",
    "approver",
    "plan",
    "digest",
    "subject",
];

fn words(rng: &mut StdRng) -> Vec<&'static str> {
    let count = rng.gen_range(6..14);
    (0..count)
        .map(|_| WORDS[rng.gen_range(0..WORDS.len())])
        .collect()
}

/// About 1 MB of text, and a copy with one word replaced in 1 % of its lines.
fn texts() -> (String, String) {
    let mut rng = StdRng::seed_from_u64(9);
    let (mut before, mut after) = (String::new(), String::new());
    while before.len() < TEXT_BYTES {
        let mut line = words(&mut rng);
        before.push_str(&line.join(" "));
        before.push('\n');
        if rng.gen_ratio(CHANGED_LINES_PERCENT, 100) {
            let at = rng.gen_range(0..line.len());
            line[at] = "CHANGED";
        }
        after.push_str(&line.join(" "));
        after.push('\n');
    }
    (before, after)
}

/// A 10,000-key object, and a copy with 1 % of its values changed, 50 keys gone and 50 new.
fn objects() -> (Value, Value) {
    let mut rng = StdRng::seed_from_u64(10);
    let mut before = Map::new();
    for i in 0..JSON_KEYS {
        before.insert(
            format!("key_{i:05}"),
            Value::from(rng.gen_range(0..1_000_000)),
        );
    }
    let mut after = before.clone();
    for i in 0..JSON_KEYS {
        if rng.gen_ratio(1, 100) {
            after.insert(format!("key_{i:05}"), Value::from("changed"));
        }
    }
    for i in 0..50 {
        after.remove(&format!("key_{:05}", i * 200));
        after.insert(format!("new_{i:02}"), Value::from(i));
    }
    (Value::Object(before), Value::Object(after))
}

/// Every line moved: the worst case for a line diff, which its deadline has to cut short.
fn pathological() -> (String, String) {
    let before = (0..PATHOLOGICAL_LINES)
        .map(|i| format!("line {i}\n"))
        .collect();
    let after = (0..PATHOLOGICAL_LINES)
        .map(|i| format!("line {}\n", i * 7 % 30_011))
        .collect();
    (before, after)
}

fn git_word_diff(dir: &Path) {
    let status = Command::new("git")
        .args([
            "diff",
            "--no-index",
            "--word-diff",
            "--no-color",
            "before.txt",
            "after.txt",
        ])
        .current_dir(dir)
        .stdout(Stdio::null())
        .status()
        .expect("git runs");
    // `--no-index` exits 1 when the files differ, which they do.
    assert_eq!(status.code(), Some(1), "git diff failed");
}

fn diffs(c: &mut Criterion) {
    let mut group = c.benchmark_group("diff");
    let (before, after) = texts();
    group.bench_function("text_1mb", |b| {
        b.iter(|| text_diff(black_box(&before), black_box(&after)))
    });
    let (old, new) = objects();
    group.bench_function("json_10k_keys", |b| {
        b.iter(|| json_diff(black_box(&old), black_box(&new)))
    });

    // Whole processes and deadline-long diffs: few, flat samples.
    group.sample_size(10).sampling_mode(SamplingMode::Flat);
    let dir = tempfile::tempdir().expect("a temp dir");
    std::fs::write(dir.path().join("before.txt"), &before).expect("write");
    std::fs::write(dir.path().join("after.txt"), &after).expect("write");
    group.bench_function("git_word_diff_1mb", |b| {
        b.iter(|| git_word_diff(dir.path()))
    });
    let (before, after) = pathological();
    group.bench_function("pathological", |b| {
        b.iter(|| text_diff(black_box(&before), black_box(&after)))
    });
    group.finish();
}

criterion_group!(console, diffs);
criterion_main!(console);
