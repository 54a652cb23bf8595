//! The filesystem server's writes: previewed, approved, run once, stale when the path moved.

use axum::http::StatusCode;
use countersign_proto::digest::sha256;
use serde_json::{json, Value};

use super::{approve_by, assert_moved, flags, text, Served};
use crate::common::assert_error;
use crate::round_trips::{fewest, Statements};

#[tokio::test]
async fn a_write_waits_for_a_signed_approval_then_writes_exactly_the_signed_content_once() {
    let served = Served::new().await;
    let file = served.file("notes.txt", Some("before\n"));
    let plan = served
        .preview(
            "write_file",
            json!({"path": file, "content": "after, as signed\n"}),
        )
        .await;
    assert_eq!(plan["would_require_approval"], true);
    // The server says write_file is destructive and not open-world, and the adapter previews it.
    assert_eq!(flags(&plan), ["irreversible"], "{plan}");
    let effect = &plan["effects"][0];
    let resource = format!("mcp-files/files:{}", file.display());
    assert_eq!(effect["resource"], resource.as_str());
    assert_eq!(effect["external"], false);
    assert_eq!(
        effect["changes"],
        json!([{"path": "/content", "before": "before\n", "after": "after, as signed\n"}])
    );
    let read = plan["read_revisions"].as_array().unwrap();
    assert!(read.iter().any(
        |r| r["resource"] == resource.as_str() && r["revision"] == sha256(b"before\n").as_str()
    ));
    assert_eq!(text(&file), "before\n", "a preview writes nothing");

    let early = served.gw.execute(&plan).await;
    assert_error(&early, "approval_required", 409);
    assert_eq!(text(&file), "before\n");

    let ran = served.approve_and_run(&plan).await;
    assert_eq!(ran.status, StatusCode::OK, "{}", ran.body);
    assert_eq!(ran.body["provider"], "files");
    assert_eq!(ran.body["metadata"]["upstream"], "files");
    assert_eq!(ran.body["metadata"]["tool"], "write_file");
    assert_eq!(text(&file), "after, as signed\n");

    std::fs::write(&file, "changed since\n").unwrap();
    let again = served.gw.execute(&plan).await;
    assert_error(&again, "plan_already_executed", 409);
    assert_eq!(text(&file), "changed since\n");
}

#[tokio::test]
async fn a_file_changed_after_its_preview_is_stale_for_the_approver_and_at_execution() {
    let served = Served::new().await;
    let gw = &served.gw;
    let file = served.file("notes.txt", Some("before\n"));
    let params = json!({"path": file, "content": "mine\n"});
    let approver = gw.enroll("Ana").await;

    let approved = served.preview("write_file", params.clone()).await;
    approve_by(gw, &approved, &[&approver]).await;
    std::fs::write(&file, "someone else's\n").unwrap();
    assert_error(&gw.execute(&approved).await, "plan_stale", 409);
    assert_eq!(text(&file), "someone else's\n");

    let pending = served.preview("write_file", params).await;
    std::fs::write(&file, "and again\n").unwrap();
    let statement = approver.sign(&approver.statement(gw, &pending));
    let refused = approver
        .send(gw, pending["plan_id"].as_str().unwrap(), &statement)
        .await;
    assert_error(&refused, "plan_stale", 409);
    assert_eq!(text(&file), "and again\n");
}

#[tokio::test]
async fn a_new_file_is_previewed_as_created_and_a_file_outside_the_servers_reach_is_blocked() {
    let served = Served::new().await;
    let file = served.file("new.txt", None);
    let plan = served
        .preview("write_file", json!({"path": file, "content": "fresh\n"}))
        .await;
    assert_eq!(
        plan["effects"][0]["changes"][0]["before"],
        Value::Null,
        "{plan}"
    );
    assert_eq!(plan["executable"], true);
    let outside = served
        .preview("write_file", json!({"path": "/etc/passwd", "content": "x"}))
        .await;
    assert_eq!(outside["executable"], false, "{outside}");
    assert_eq!(outside["validation"][0]["code"], "tool_preview_failed");
}

#[tokio::test]
async fn a_read_only_tool_runs_at_once_and_leaves_no_plan() {
    let served = Served::new().await;
    let gw = &served.gw;
    let file = served.file("readme.txt", Some("hello from the upstream\n"));
    let invoke = |tool: &'static str, params: Value| {
        gw.invoke_as(&gw.agent, tool, json!({ "params": params }))
    };
    let read = invoke("files.read_text_file", json!({"path": file})).await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.body);
    assert_eq!(read.body["content"], "hello from the upstream\n");
    assert_eq!(
        gw.count("SELECT COUNT(*) FROM plans WHERE $1 = $1", "")
            .await,
        0
    );
    // A write cannot take the same road.
    let write = invoke("files.write_file", json!({"path": file, "content": "x"})).await;
    assert_error(&write, "dry_run_required", 428);
    assert_eq!(text(&file), "hello from the upstream\n");
}

#[tokio::test]
async fn a_read_only_call_writes_only_its_audit() {
    let log = Statements::installed();
    let served = Served::new().await;
    let gw = &served.gw;
    let file = served.file("readme.txt", Some("hello\n"));
    let ran = fewest(&log, &gw.state.store, 3, |_| async {
        let read = gw
            .invoke_as(
                &gw.agent,
                "files.read_text_file",
                json!({ "params": { "path": file } }),
            )
            .await;
        assert_eq!(read.status, StatusCode::OK, "{}", read.body);
    })
    .await;
    // The agent's token and scopes and what the policy reads of its person, then the audit
    // after the call. It costs nothing and takes no key: nothing is written before the call, so
    // the writer is not waited for, and the wallet is not read under it.
    // (PostgreSQL's log holds the COMMIT of each transaction, the snapshot's too; a connection
    // the pool opens meanwhile, as it may on a loaded machine, sets its PRAGMAs, no row.)
    let writes: Vec<&String> = ran
        .iter()
        .filter(|s| !s.starts_with("SELECT") && !s.starts_with("PRAGMA") && *s != "COMMIT")
        .collect();
    assert_eq!(writes.len(), 1, "{ran:#?}");
    assert!(
        writes[0].starts_with("INSERT INTO execution_audit"),
        "{ran:#?}"
    );
    assert!(!ran.iter().any(|s| s.contains("FROM wallets")), "{ran:#?}");
}

#[tokio::test]
async fn edit_file_is_previewed_by_the_servers_own_dry_run_and_runs_as_signed() {
    let served = Served::new().await;
    let (file, plan) = edit(&served, CONFIG, "mode = slow", "mode = fast").await;
    let preview = &plan["effects"][0]["changes"][0];
    assert_eq!(preview["path"], "/tool_preview", "{plan}");
    let diff = preview["after"].as_str().unwrap();
    assert!(
        diff.contains("-mode = slow") && diff.contains("+mode = fast"),
        "{diff}"
    );
    // The tool's own preview stands for it: the plan is not flagged for want of one.
    assert_eq!(flags(&plan), ["irreversible"], "{plan}");
    assert_eq!(text(&file), "mode = slow\nlevel = 1\n");

    let ran = served.approve_and_run(&plan).await;
    assert_eq!(ran.status, StatusCode::OK, "{}", ran.body);
    assert_eq!(text(&file), "mode = fast\nlevel = 1\n");
}

#[tokio::test]
async fn an_edit_the_tool_says_it_cannot_make_is_a_blocked_plan() {
    let served = Served::new().await;
    let (_, plan) = edit(&served, "mode = slow\n", "no such line", "x").await;
    assert_eq!(plan["executable"], false, "{plan}");
    assert_eq!(plan["validation"][0]["code"], "tool_preview_failed");
    assert!(flags(&plan).contains(&"blocked".to_owned()));
}

#[tokio::test]
async fn an_edit_previewed_against_one_text_is_stale_against_another() {
    let served = Served::new().await;
    let (file, plan) = edit(&served, CONFIG, "mode = slow", "mode = fast").await;
    let resource = format!("mcp-files/files:{}", file.display());
    assert_eq!(plan["effects"][0]["resource"], resource.as_str(), "{plan}");
    let approver = served.gw.enroll("Ana").await;
    approve_by(&served.gw, &plan, &[&approver]).await;
    // The edit would still apply; it would land on a text nobody previewed.
    std::fs::write(&file, "mode = slow\nlevel = 9\n").unwrap();
    assert_moved(
        &served.gw.execute(&plan).await,
        &format!(":{}", file.display()),
    );
    assert_eq!(text(&file), "mode = slow\nlevel = 9\n");
}

#[tokio::test]
async fn move_file_shows_the_path_before_and_after_and_moves_once() {
    let served = Served::new().await;
    let source = served.file("draft.txt", Some("the text\n"));
    let destination = served.file("final.txt", None);
    let params = json!({"source": source, "destination": destination});
    let plan = served.preview("move_file", params.clone()).await;
    assert_eq!(plan["executable"], true, "{plan}");
    assert_eq!(
        plan["effects"][0]["changes"],
        json!([{"path": "/path", "before": source, "after": destination}])
    );
    let reads = plan["read_revisions"].to_string();
    let revision = |path: &std::path::Path, revision: &str| {
        json!({"resource": format!("mcp-files/files:{}", path.display()), "revision": revision})
            .to_string()
    };
    assert!(
        reads.contains(&revision(&source, &sha256(b"the text\n"))),
        "{reads}"
    );
    assert!(
        reads.contains(&revision(&destination, "deleted")),
        "{reads}"
    );
    assert!(
        source.exists() && !destination.exists(),
        "a preview moves nothing"
    );

    let ran = served.approve_and_run(&plan).await;
    assert_eq!(ran.status, StatusCode::OK, "{}", ran.body);
    assert!(!source.exists());
    assert_eq!(text(&destination), "the text\n");

    // Back where it was: a move onto a path that exists is blocked, as the server refuses it.
    std::fs::write(&source, "another\n").unwrap();
    let onto = served.preview("move_file", params).await;
    assert_eq!(onto["executable"], false, "{onto}");
    assert_eq!(onto["validation"][0]["code"], "tool_preview_failed");
}

#[tokio::test]
async fn a_move_whose_destination_appeared_since_its_preview_is_stale() {
    let served = Served::new().await;
    let source = served.file("draft.txt", Some("the text\n"));
    let destination = served.file("final.txt", None);
    let plan = served
        .preview(
            "move_file",
            json!({"source": source, "destination": destination}),
        )
        .await;
    let approver = served.gw.enroll("Ana").await;
    approve_by(&served.gw, &plan, &[&approver]).await;
    std::fs::write(&destination, "someone else's\n").unwrap();
    assert_moved(
        &served.gw.execute(&plan).await,
        &format!(":{}", destination.display()),
    );
    assert_eq!(text(&source), "the text\n");
    assert_eq!(text(&destination), "someone else's\n");
}

#[tokio::test]
async fn create_directory_shows_a_new_directory_and_one_that_exists_changes_nothing() {
    let served = Served::new().await;
    let nested = served.root.path().join("a/b");
    let plan = served
        .preview("create_directory", json!({"path": nested}))
        .await;
    assert_eq!(
        plan["effects"][0]["changes"],
        json!([{"path": "/directory", "before": null, "after": nested}]),
        "{plan}"
    );
    assert!(!nested.exists(), "a preview creates nothing");
    let ran = served.approve_and_run(&plan).await;
    assert_eq!(ran.status, StatusCode::OK, "{}", ran.body);
    assert!(nested.is_dir());

    let again = served
        .preview("create_directory", json!({"path": nested}))
        .await;
    assert_eq!(again["effects"][0].get("changes"), None, "{again}");
    let description = again["effects"][0]["description"].as_str().unwrap();
    assert!(description.contains("changes nothing"), "{description}");

    let file = served.file("taken", Some("a file\n"));
    let blocked = served
        .preview("create_directory", json!({"path": file}))
        .await;
    assert_eq!(blocked["executable"], false, "{blocked}");
}

const CONFIG: &str = "mode = slow\nlevel = 1\n";

/// A file `config.ini` holding `text`, and the plan of an `edit_file` replacing `old` by `new`.
async fn edit(served: &Served, text: &str, old: &str, new: &str) -> (std::path::PathBuf, Value) {
    let file = served.file("config.ini", Some(text));
    let edits = json!([{"oldText": old, "newText": new}]);
    let plan = served
        .preview("edit_file", json!({"path": file, "edits": edits}))
        .await;
    (file, plan)
}

#[tokio::test]
async fn a_whole_file_longer_than_a_native_field_is_previewed_and_written() {
    let served = Served::new().await;
    let file = served.file("long.md", Some("short\n"));
    let long = "a line of a long document\n".repeat(10_000);
    let plan = served
        .preview("write_file", json!({"path": file, "content": long}))
        .await;
    assert_eq!(plan["executable"], true, "{}", plan["validation"]);
    let ran = served.approve_and_run(&plan).await;
    assert_eq!(ran.status, StatusCode::OK, "{}", ran.body);
    assert_eq!(text(&file), long);
}
