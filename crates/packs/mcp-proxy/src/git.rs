//! The git server's `git_commit` previewed through its own read-only tools: the staged diff it
//! would commit (`git_diff_staged`), on which branch (`git_status`), after which commit
//! (`git_log`). Each is a read revision (`mcp-git/NAME:REPO#staged`, `#branch`, `#head`; the
//! diff by its digest), so a commit whose staged changes, branch or HEAD moved since its
//! preview is stale.

use countersign_proto::digest;
use countersign_proto::plan::{Change, ReadRevision};
use serde_json::{json, Value};

use crate::previewed::{text_param, Previewed};
use crate::upstream::{Unread, Upstream};

/// The kind of resource whose revisions are a repository's state, read through its upstream.
pub const GIT_KIND: &str = "mcp-git";

const STAGED: &str = "git_diff_staged";
const STATUS: &str = "git_status";
const LOG: &str = "git_log";

/// Whether `tool` of `upstream` is the git server's commit: it lists the three read-only tools
/// this module reads with, each taking a `repo_path`.
pub fn previews(upstream: &Upstream, tool: &str) -> bool {
    tool == "git_commit"
        && [STAGED, STATUS, LOG]
            .iter()
            .all(|read| upstream.reads_with(read, &["repo_path"]))
}

/// The parts of a repository a commit depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Staged,
    Branch,
    Head,
}

impl Part {
    const ALL: [Part; 3] = [Part::Staged, Part::Branch, Part::Head];

    fn name(self) -> &'static str {
        match self {
            Part::Staged => "staged",
            Part::Branch => "branch",
            Part::Head => "head",
        }
    }
}

pub fn resource(upstream: &str, repo: &str, part: Part) -> String {
    format!("{GIT_KIND}/{upstream}:{repo}#{}", part.name())
}

/// The repository and part a resource id (after `NAME:`) names.
pub fn parse(id: &str) -> Option<(&str, Part)> {
    let (repo, part) = id.rsplit_once('#')?;
    let part = Part::ALL.into_iter().find(|p| p.name() == part)?;
    Some((repo, part))
}

/// `part` of `repo` as the upstream reads it now, as a revision.
pub async fn revision(upstream: &Upstream, repo: &str, part: Part) -> Result<String, Unread> {
    Ok(match part {
        Part::Staged => digest::sha256(staged(upstream, repo).await?.as_bytes()),
        Part::Branch => branch(upstream, repo).await?,
        Part::Head => head(upstream, repo).await?,
    })
}

async fn staged(upstream: &Upstream, repo: &str) -> Result<String, Unread> {
    let text = upstream.read(STAGED, json!({ "repo_path": repo })).await?;
    Ok(text
        .strip_prefix("Staged changes:\n")
        .unwrap_or(&text)
        .to_owned())
}

/// The branch checked out, or `detached`.
async fn branch(upstream: &Upstream, repo: &str) -> Result<String, Unread> {
    let text = upstream.read(STATUS, json!({ "repo_path": repo })).await?;
    Ok(text
        .lines()
        .find_map(|line| line.strip_prefix("On branch "))
        .unwrap_or("detached")
        .to_owned())
}

/// The commit HEAD names, or `none` in a repository without one.
async fn head(upstream: &Upstream, repo: &str) -> Result<String, Unread> {
    let text = upstream
        .read(LOG, json!({ "repo_path": repo, "max_count": 1 }))
        .await?;
    Ok(text
        .lines()
        .find_map(|line| line.strip_prefix("Commit: "))
        .unwrap_or("none")
        .to_owned())
}

/// The preview of a `git_commit`: the staged diff as the change, the branch and HEAD it lands
/// on in the description, all three as read revisions. Nothing staged is the upstream's refusal
/// in advance: an empty commit is not what anyone approves.
pub async fn commit(upstream: &Upstream, params: &Value) -> Result<Previewed, Unread> {
    let repo = text_param(params, "repo_path")?;
    let diff = staged(upstream, repo).await?;
    if diff.trim().is_empty() {
        return Err(Unread::Refused(format!(
            "nothing is staged in {repo}: the commit would be empty"
        )));
    }
    let (branch, head) = (branch(upstream, repo).await?, head(upstream, repo).await?);
    let name = upstream.name();
    let reads = vec![
        ReadRevision {
            resource: resource(name, repo, Part::Staged),
            revision: digest::sha256(diff.as_bytes()),
        },
        ReadRevision {
            resource: resource(name, repo, Part::Branch),
            revision: branch.clone(),
        },
        ReadRevision {
            resource: resource(name, repo, Part::Head),
            revision: head.clone(),
        },
    ];
    Ok(Previewed {
        resource: format!("{GIT_KIND}/{name}:{repo}"),
        description: format!(
            "Commits the staged changes below to {repo} on branch {branch}, after commit \
             {head}, with the message as signed."
        ),
        change: Change {
            path: "/staged".to_owned(),
            before: Value::Null,
            after: Value::String(diff),
        },
        reads,
    })
}
