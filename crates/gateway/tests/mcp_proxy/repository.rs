//! The git server's writes: previewed through its read-only tools, run once, stale when the
//! repository moved.

use axum::http::StatusCode;
use serde_json::json;

use super::{approve_by, assert_moved, flags, git, Served};
use crate::common::assert_error;

#[tokio::test]
async fn a_git_commit_shows_the_staged_diff_and_commits_exactly_once() {
    let served = Served::git().await;
    let repo = served.root.path();
    std::fs::write(repo.join("a.txt"), "one\ntwo\n").unwrap();
    git(repo, &["add", "a.txt"]);
    let head = git(repo, &["rev-parse", "HEAD"]).trim().to_owned();
    let params = json!({"repo_path": repo, "message": "Add the second line"});

    let plan = served.preview("git_commit", params).await;
    let effect = &plan["effects"][0];
    assert_eq!(effect["changes"][0]["path"], "/staged", "{plan}");
    let diff = effect["changes"][0]["after"].as_str().unwrap();
    assert!(diff.contains("+two") && diff.contains("a/a.txt"), "{diff}");
    let description = effect["description"].as_str().unwrap();
    assert!(
        description.contains("on branch main") && description.contains(&head),
        "{description}"
    );
    let read = plan["read_revisions"].as_array().unwrap();
    let head_read = format!("mcp-git/git:{}#head", repo.display());
    assert!(
        read.iter()
            .any(|r| r["resource"] == head_read.as_str() && r["revision"] == head.as_str()),
        "{plan}"
    );
    // The server calls git_commit neither destructive nor open-world: it waits all the same.
    assert_eq!(plan["would_require_approval"], true);
    assert!(flags(&plan).is_empty(), "{plan}");
    assert_eq!(
        git(repo, &["rev-list", "--count", "HEAD"]).trim(),
        "1",
        "a preview commits nothing"
    );

    let ran = served.approve_and_run(&plan).await;
    assert_eq!(ran.status, StatusCode::OK, "{}", ran.body);
    assert_eq!(git(repo, &["rev-list", "--count", "HEAD"]).trim(), "2");
    assert_eq!(
        git(repo, &["log", "-1", "--format=%s"]).trim(),
        "Add the second line"
    );
    assert_error(
        &served.gw.execute(&plan).await,
        "plan_already_executed",
        409,
    );
    assert_eq!(git(repo, &["rev-list", "--count", "HEAD"]).trim(), "2");
}

#[tokio::test]
async fn a_commit_whose_staged_changes_moved_is_stale_and_an_empty_one_is_blocked() {
    let served = Served::git().await;
    let repo = served.root.path();
    let params = json!({"repo_path": repo, "message": "Nothing"});
    let empty = served.preview("git_commit", params.clone()).await;
    assert_eq!(empty["executable"], false, "{empty}");
    assert_eq!(empty["validation"][0]["code"], "tool_preview_failed");

    std::fs::write(repo.join("a.txt"), "one\ntwo\n").unwrap();
    git(repo, &["add", "a.txt"]);
    let plan = served.preview("git_commit", params).await;
    let approver = served.gw.enroll("Ana").await;
    approve_by(&served.gw, &plan, &[&approver]).await;
    std::fs::write(repo.join("b.txt"), "slipped in\n").unwrap();
    git(repo, &["add", "b.txt"]);
    assert_moved(&served.gw.execute(&plan).await, "#staged");
    assert_eq!(git(repo, &["rev-list", "--count", "HEAD"]).trim(), "1");
}

#[tokio::test]
async fn git_add_shows_what_it_stages_and_stages_exactly_that() {
    let served = Served::git().await;
    let repo = served.root.path();
    std::fs::write(repo.join("a.txt"), "one\ntwo\n").unwrap();
    std::fs::write(repo.join("new.txt"), "fresh\n").unwrap();
    std::fs::write(repo.join("left.txt"), "not named\n").unwrap();
    let plan = served
        .preview(
            "git_add",
            json!({"repo_path": repo, "files": ["a.txt", "new.txt"]}),
        )
        .await;
    let change = &plan["effects"][0]["changes"][0];
    assert_eq!(change["path"], "/unstaged", "{plan}");
    let shown = change["after"].as_str().unwrap();
    assert!(shown.contains("+two"), "{shown}");
    assert!(
        shown.contains("untracked, staged whole (its content is not shown): new.txt"),
        "{shown}"
    );
    assert!(!shown.contains("left.txt"), "{shown}");
    assert_eq!(git(repo, &["diff", "--cached", "--name-only"]), "");

    let ran = served.approve_and_run(&plan).await;
    assert_eq!(ran.status, StatusCode::OK, "{}", ran.body);
    assert_eq!(
        git(repo, &["diff", "--cached", "--name-only"]),
        "a.txt\nnew.txt\n"
    );

    let nothing = served
        .preview("git_add", json!({"repo_path": repo, "files": ["a.txt"]}))
        .await;
    assert_eq!(nothing["executable"], false, "{nothing}");
}

#[tokio::test]
async fn git_reset_shows_the_staged_diff_it_unstages() {
    let served = Served::git().await;
    let repo = served.root.path();
    std::fs::write(repo.join("a.txt"), "one\ntwo\n").unwrap();
    git(repo, &["add", "a.txt"]);
    let plan = served
        .preview("git_reset", json!({"repo_path": repo}))
        .await;
    let change = &plan["effects"][0]["changes"][0];
    assert_eq!(change["path"], "/staged", "{plan}");
    assert!(change["before"].as_str().unwrap().contains("+two"));
    assert_eq!(change["after"], serde_json::Value::Null);
    let ran = served.approve_and_run(&plan).await;
    assert_eq!(ran.status, StatusCode::OK, "{}", ran.body);
    assert_eq!(git(repo, &["diff", "--cached", "--name-only"]), "");
    assert_eq!(git(repo, &["diff", "--name-only"]), "a.txt\n");
}

#[tokio::test]
async fn a_branch_is_previewed_with_its_commit_created_once_and_checked_out_as_shown() {
    let served = Served::git().await;
    let repo = served.root.path();
    let head = git(repo, &["rev-parse", "HEAD"]).trim().to_owned();
    let create = json!({"repo_path": repo, "branch_name": "feature/x"});
    let plan = served.preview("git_create_branch", create.clone()).await;
    assert_eq!(
        plan["effects"][0]["changes"],
        json!([{"path": "/branches/feature~1x", "before": null, "after": head}]),
        "{plan}"
    );
    let ran = served.approve_and_run(&plan).await;
    assert_eq!(ran.status, StatusCode::OK, "{}", ran.body);
    assert_eq!(git(repo, &["rev-parse", "feature/x"]).trim(), head);
    let exists = served.preview("git_create_branch", create).await;
    assert_eq!(exists["executable"], false, "{exists}");

    let checkout = json!({"repo_path": repo, "branch_name": "feature/x"});
    let plan = served.preview("git_checkout", checkout.clone()).await;
    assert_eq!(
        plan["effects"][0]["changes"][0],
        json!({"path": "/branch", "before": "main", "after": "feature/x"}),
        "{plan}"
    );
    let approver = served.gw.enroll("Ben").await;
    approve_by(&served.gw, &plan, &[&approver]).await;
    // The branch moved on after the preview: the checkout would land elsewhere.
    git(repo, &["branch", "-f", "feature/x", "HEAD"]);
    std::fs::write(repo.join("a.txt"), "one\ntwo\n").unwrap();
    git(repo, &["commit", "-qam", "second"]);
    git(repo, &["branch", "-f", "feature/x", "HEAD"]);
    assert_moved(&served.gw.execute(&plan).await, "#rev:refs/heads/feature/x");
    assert_eq!(git(repo, &["branch", "--show-current"]).trim(), "main");

    let plan = served.preview("git_checkout", checkout).await;
    let ran = served.approve_and_run(&plan).await;
    assert_eq!(ran.status, StatusCode::OK, "{}", ran.body);
    assert_eq!(git(repo, &["branch", "--show-current"]).trim(), "feature/x");
}

#[tokio::test]
async fn a_first_commit_is_previewed_and_a_pathspec_pattern_is_blocked() {
    let served = Served::git().await;
    let repo = served.root.path();
    // The branch back to no commit, its file still staged: the repository's first commit.
    git(repo, &["update-ref", "-d", "HEAD"]);
    let first = served
        .preview("git_commit", json!({"repo_path": repo, "message": "First"}))
        .await;
    assert_eq!(first["executable"], true, "{first}");
    let description = first["effects"][0]["description"].as_str().unwrap();
    assert!(description.contains("after commit none"), "{description}");

    std::fs::write(repo.join("b.txt"), "two\n").unwrap();
    for pattern in ["*.txt", ":/"] {
        let plan = served
            .preview("git_add", json!({"repo_path": repo, "files": [pattern]}))
            .await;
        let refusal = plan["validation"][0]["message"]
            .as_str()
            .unwrap_or_default();
        assert!(
            refusal.contains("a pattern git expands"),
            "{pattern}: {plan}"
        );
    }
}
