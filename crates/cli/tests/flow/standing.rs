//! `standing create|list|revoke`, `history --format in-toto`, `keys` and `verify` against a real
//! gateway: a standing approval made from a plan approves the next plan like it, which takes a use
//! only when it runs; the export of what this approver signed, each line with the gateway's
//! receipt, verifies offline, and a single flipped byte does not.

use serde_json::json;

use super::World;

#[test]
fn a_standing_approval_from_a_plan_covers_the_next_and_the_audit_export_verifies() {
    let (world, code) = World::invited("Dana");
    world.json(&[
        "--url", &world.url, "enroll", "--code", &code, "--name", "Dana",
    ]);
    let first = world.dry_run(
        "projects.settings.update",
        json!({"project": "prj_184", "retention_days": 14}),
    );
    world.json(&["approve", &first, "--reason", "Two weeks."]);

    let created = world.json(&[
        "standing",
        "create",
        "--from-plan",
        &first,
        "--reason",
        "Retention tuning this week",
        "--when",
        "project=prj_184",
        "--when",
        "retention_days>=7",
        "--max-plans",
        "3",
        "--yes",
    ]);
    assert_eq!(created["state"], "active");
    assert_eq!(created["max_plans"], 3);
    let allows = created["allows"].as_str().unwrap();
    assert!(
        allows.contains("project is prj_184; retention_days ≥ 7"),
        "{allows}"
    );
    let id = created["id"].as_str().unwrap().to_owned();

    let next = world.dry_run(
        "projects.settings.update",
        json!({"project": "prj_184", "retention_days": 21}),
    );
    assert_eq!(world.status(&next), "approved");
    let outside = world.dry_run(
        "projects.settings.update",
        json!({"project": "prj_184", "retention_days": 3}),
    );
    assert_eq!(world.status(&outside), "pending_approval");
    // Approved, not yet run: covered, and nothing used.
    let listed = world.json(&["standing", "list"]);
    assert_eq!(listed[0]["plans_used"], 0);
    assert_eq!(listed[0]["covered"], json!([next]));
    world.invoke("projects.settings.update", &next);
    let listed = world.json(&["standing", "list"]);
    assert_eq!(listed[0]["plans_used"], 1);
    assert_eq!(listed[0]["covered"], json!([]));
    assert_eq!(listed[0]["uses"][0]["plan_id"], next.as_str());

    // The export: the approval of the first plan, the standing approval, the plan that ran.
    let export = world.data.path().join("audit.intoto.jsonl");
    let keys = world.data.path().join("keys.json");
    let path = export.to_str().unwrap();
    let written = world.json(&["history", "--format", "in-toto", "--export", path]);
    assert_eq!(written["exported"], 3);
    world.json(&["keys", "--out", keys.to_str().unwrap()]);
    let checked = world.json(&["verify", path, "--keys", keys.to_str().unwrap()]);
    let what: Vec<&str> = checked
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            assert_eq!(c["verified"], true, "{c}");
            c["what"].as_str().unwrap()
        })
        .collect();
    assert!(
        what[0].starts_with(&format!("approval of {first}")),
        "{what:?}"
    );
    assert!(
        what[1].starts_with(&format!("standing approval {id} by Dana")),
        "{what:?}"
    );
    assert!(
        what[2].starts_with(&format!("plan {next} ran under standing approval {id}")),
        "{what:?}"
    );

    // One byte of the standing approval's reason, changed in the file: that entry fails.
    let text = std::fs::read_to_string(&export).unwrap();
    let at = text.find("Retention tuning").unwrap();
    let mut bytes = text.into_bytes();
    bytes[at] ^= 1;
    std::fs::write(&export, bytes).unwrap();
    let failed = world
        .cli()
        .args(["verify", path, "--keys", keys.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(failed.status.code(), Some(1));
    let out = String::from_utf8(failed.stdout).unwrap();
    assert!(
        out.contains("ok   line 1:") && out.contains("FAIL line 2:"),
        "{out}"
    );
    assert!(out.contains("2 of 3 entries verify"), "{out}");

    let revoked = world.json(&["standing", "revoke", &id]);
    assert_eq!(revoked["state"], "revoked");
    let after = world.dry_run(
        "projects.settings.update",
        json!({"project": "prj_184", "retention_days": 22}),
    );
    assert_eq!(world.status(&after), "pending_approval");
}
