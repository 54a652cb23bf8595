//! A repository's state as the git server's own read-only tools tell it: what is staged
//! (`git_diff_staged`), what is changed and not staged (`git_diff_unstaged`), what is untracked
//! and which branch is checked out (`git_status`), HEAD (`git_log`), the commit a name resolves
//! to (`git_show`) and the local branches (`git_branch`). Each part is a read revision
//! (`mcp-git/NAME:REPO#PART`; the diffs by their digest), so a git write previewed against one
//! state is stale in another.

use countersign_proto::digest;
use serde_json::json;

use crate::upstream::{Unread, Upstream};

/// The kind of resource whose revisions are a repository's state, read through its upstream.
pub const GIT_KIND: &str = "mcp-git";

const STAGED: &str = "git_diff_staged";
const UNSTAGED: &str = "git_diff_unstaged";
const STATUS: &str = "git_status";
const LOG: &str = "git_log";
const SHOW: &str = "git_show";
const BRANCH: &str = "git_branch";

/// Whether `upstream` lists every read-only tool this module reads with, each taking a
/// `repo_path`.
pub fn readable(upstream: &Upstream) -> bool {
    [STAGED, UNSTAGED, STATUS, LOG, SHOW, BRANCH]
        .iter()
        .all(|read| upstream.reads_with(read, &["repo_path"]))
}

/// A part of a repository a git write depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Staged,
    Unstaged,
    Untracked,
    Branch,
    Head,
    /// The commit a name (a branch, a tag, a commit) resolves to.
    Rev(String),
}

impl Part {
    fn name(&self) -> String {
        match self {
            Part::Staged => "staged".to_owned(),
            Part::Unstaged => "unstaged".to_owned(),
            Part::Untracked => "untracked".to_owned(),
            Part::Branch => "branch".to_owned(),
            Part::Head => "head".to_owned(),
            Part::Rev(name) => format!("rev:{name}"),
        }
    }
}

pub fn resource(upstream: &str, repo: &str, part: &Part) -> String {
    format!("{GIT_KIND}/{upstream}:{repo}#{}", part.name())
}

/// The repository and part a resource id (after `NAME:`) names.
pub fn parse(id: &str) -> Option<(&str, Part)> {
    if let Some((repo, name)) = id.rsplit_once("#rev:") {
        return Some((repo, Part::Rev(name.to_owned())));
    }
    let (repo, part) = id.rsplit_once('#')?;
    let part = [
        Part::Staged,
        Part::Unstaged,
        Part::Untracked,
        Part::Branch,
        Part::Head,
    ]
    .into_iter()
    .find(|p| p.name() == part)?;
    Some((repo, part))
}

/// `part` of `repo` as the upstream reads it now, as a revision; `None`: a name that resolves
/// to nothing.
pub async fn revision(
    upstream: &Upstream,
    repo: &str,
    part: &Part,
) -> Result<Option<String>, Unread> {
    let sha = |text: String| digest::sha256(text.as_bytes());
    Ok(Some(match part {
        Part::Staged => sha(staged(upstream, repo).await?),
        Part::Unstaged => sha(unstaged(upstream, repo).await?),
        Part::Untracked => sha(untracked(upstream, repo).await?.join("\n")),
        Part::Branch => branch(upstream, repo).await?,
        Part::Head => head(upstream, repo).await?,
        Part::Rev(name) => return commit_of(upstream, repo, name).await,
    }))
}

/// The staged diff, as `git_commit` would record it.
pub async fn staged(upstream: &Upstream, repo: &str) -> Result<String, Unread> {
    let text = upstream.read(STAGED, json!({ "repo_path": repo })).await?;
    Ok(text
        .strip_prefix("Staged changes:\n")
        .unwrap_or(&text)
        .to_owned())
}

/// The diff of tracked files against the index.
pub async fn unstaged(upstream: &Upstream, repo: &str) -> Result<String, Unread> {
    let text = upstream
        .read(UNSTAGED, json!({ "repo_path": repo }))
        .await?;
    Ok(text
        .strip_prefix("Unstaged changes:\n")
        .unwrap_or(&text)
        .to_owned())
}

/// The untracked paths `git status` lists, relative to the repository.
pub async fn untracked(upstream: &Upstream, repo: &str) -> Result<Vec<String>, Unread> {
    let text = upstream.read(STATUS, json!({ "repo_path": repo })).await?;
    Ok(text
        .split("Untracked files:\n")
        .nth(1)
        .unwrap_or_default()
        .lines()
        .skip_while(|line| !line.starts_with('\t'))
        .map_while(|line| line.strip_prefix('\t'))
        .map(str::to_owned)
        .collect())
}

/// The branch checked out, or `detached`.
pub async fn branch(upstream: &Upstream, repo: &str) -> Result<String, Unread> {
    let text = upstream.read(STATUS, json!({ "repo_path": repo })).await?;
    Ok(text
        .lines()
        .find_map(|line| line.strip_prefix("On branch "))
        .unwrap_or("detached")
        .to_owned())
}

/// The commit HEAD names, or `none` in a repository without one (where `git_log` fails).
pub async fn head(upstream: &Upstream, repo: &str) -> Result<String, Unread> {
    let text = match upstream
        .read(LOG, json!({ "repo_path": repo, "max_count": 1 }))
        .await
    {
        Ok(text) => text,
        Err(Unread::Refused(_)) if branch_unborn(upstream, repo).await? => return Ok("none".into()),
        Err(unread) => return Err(unread),
    };
    Ok(text
        .lines()
        .find_map(|line| line.strip_prefix("Commit: "))
        .unwrap_or("none")
        .to_owned())
}

/// Whether the branch checked out has no commit yet (`git status` says "No commits yet").
async fn branch_unborn(upstream: &Upstream, repo: &str) -> Result<bool, Unread> {
    let text = upstream.read(STATUS, json!({ "repo_path": repo })).await?;
    Ok(text.lines().any(|line| line == "No commits yet"))
}

/// The commit `name` resolves to, `None` when it resolves to none.
pub async fn commit_of(
    upstream: &Upstream,
    repo: &str,
    name: &str,
) -> Result<Option<String>, Unread> {
    let shown = upstream
        .read(SHOW, json!({ "repo_path": repo, "revision": name }))
        .await;
    match shown {
        Ok(text) => Ok(text
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("commit "))
            .map(str::to_owned)),
        Err(Unread::Refused(_)) => Ok(None),
        Err(unavailable) => Err(unavailable),
    }
}

/// The local branches' names.
pub async fn branches(upstream: &Upstream, repo: &str) -> Result<Vec<String>, Unread> {
    let text = upstream
        .read(BRANCH, json!({ "repo_path": repo, "branch_type": "local" }))
        .await?;
    Ok(text
        .lines()
        .map(|line| line.trim_start_matches(['*', ' ']).to_owned())
        .filter(|name| !name.is_empty())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::{parse, resource, Part};

    #[test]
    fn each_part_parses_back_from_its_resource_even_a_name_with_a_hash() {
        for part in [
            Part::Staged,
            Part::Unstaged,
            Part::Untracked,
            Part::Branch,
            Part::Head,
            Part::Rev("fix#12".to_owned()),
        ] {
            let id = resource("git", "/srv/re#po", &part);
            let id = id.strip_prefix("mcp-git/git:").unwrap();
            assert_eq!(parse(id), Some(("/srv/re#po", part)));
        }
        assert_eq!(parse("/srv/repo#nothing"), None);
    }
}
