//! The git server's writes previewed through its own read-only tools ([`super::repo`]):
//! `git_commit` and `git_reset` (the staged diff), `git_add` (the diffs and untracked files it
//! stages), `git_checkout` and `git_create_branch` (the branch and commit before and after).
//! Each records the parts of the repository it depends on as read revisions.

use countersign_proto::digest;
use countersign_proto::plan::{pointer_token, Change, ReadRevision};
use serde_json::Value;

use super::kind::Adapter;
use super::previewed::{read, text_param, Previewed};
use super::repo::{self, Part, GIT_KIND};
use crate::upstream::{Unread, Upstream};

/// The adapter for `tool` of `upstream`, when the server lists the read-only tools of
/// [`repo`] and the tool is one of its writes.
pub fn adapter(upstream: &Upstream, tool: &str) -> Option<Adapter> {
    if !repo::readable(upstream) {
        return None;
    }
    Some(match tool {
        "git_commit" => Adapter::GitCommit,
        "git_add" => Adapter::GitAdd,
        "git_reset" => Adapter::GitReset,
        "git_checkout" => Adapter::GitCheckout,
        "git_create_branch" => Adapter::GitCreateBranch,
        _ => return None,
    })
}

pub async fn preview(
    adapter: Adapter,
    upstream: &Upstream,
    params: &Value,
) -> Result<Previewed, Unread> {
    let repo = text_param(params, "repo_path")?;
    let at = At { upstream, repo };
    match adapter {
        Adapter::GitCommit => commit(&at).await,
        Adapter::GitAdd => add(&at, params).await,
        Adapter::GitReset => reset(&at).await,
        Adapter::GitCheckout => checkout(&at, text_param(params, "branch_name")?).await,
        _ => create_branch(&at, params).await,
    }
}

/// A repository at its upstream.
struct At<'a> {
    upstream: &'a Upstream,
    repo: &'a str,
}

impl At<'_> {
    fn resource(&self) -> String {
        format!("{GIT_KIND}/{}:{}", self.upstream.name(), self.repo)
    }

    fn read(&self, part: Part, revision: Option<String>) -> ReadRevision {
        read(
            repo::resource(self.upstream.name(), self.repo, &part),
            revision,
        )
    }

    /// The read of `part` as it is now.
    async fn now(&self, part: Part) -> Result<ReadRevision, Unread> {
        let revision = repo::revision(self.upstream, self.repo, &part).await?;
        Ok(self.read(part, revision))
    }

    fn previewed(
        &self,
        description: String,
        changes: Vec<Change>,
        reads: Vec<ReadRevision>,
    ) -> Previewed {
        Previewed {
            resource: self.resource(),
            description,
            changes,
            reads,
        }
    }
}

fn change(path: &str, before: Option<String>, after: Option<String>) -> Change {
    Change {
        path: path.to_owned(),
        before: before.map_or(Value::Null, Value::String),
        after: after.map_or(Value::Null, Value::String),
    }
}

/// `git_commit`: the staged diff as the change, the branch and HEAD it lands on in the
/// description. Nothing staged is the upstream's refusal in advance: an empty commit is not
/// what anyone approves.
async fn commit(at: &At<'_>) -> Result<Previewed, Unread> {
    let (upstream, repo) = (at.upstream, at.repo);
    let diff = repo::staged(upstream, repo).await?;
    if diff.trim().is_empty() {
        return Err(Unread::Refused(format!(
            "nothing is staged in {repo}: the commit would be empty"
        )));
    }
    let branch = repo::branch(upstream, repo).await?;
    let head = repo::head(upstream, repo).await?;
    let reads = vec![
        at.read(Part::Staged, Some(digest::sha256(diff.as_bytes()))),
        at.read(Part::Branch, Some(branch.clone())),
        at.read(Part::Head, Some(head.clone())),
    ];
    Ok(at.previewed(
        format!(
            "Commits the staged changes below to {repo} on branch {branch}, after commit \
             {head}, with the message as signed."
        ),
        vec![change("/staged", None, Some(diff))],
        reads,
    ))
}

/// `git_add`: the unstaged diff of each named path and the untracked paths among them (by name:
/// the git server reads no working-tree file, so their content is not shown, and the plan says
/// so). The server reads `.` as everything; a path names itself and what is under it.
async fn add(at: &At<'_>, params: &Value) -> Result<Previewed, Unread> {
    let (upstream, repo) = (at.upstream, at.repo);
    let named: Vec<String> = params["files"]
        .as_array()
        .map(|files| {
            files
                .iter()
                .filter_map(Value::as_str)
                .map(|f| relative(repo, f))
                .collect()
        })
        .unwrap_or_default();
    // The server hands the names to `git add --` as pathspecs: a glob or a magic signature
    // would stage more than a preview of the names shows.
    if let Some(pattern) = named
        .iter()
        .find(|n| n.starts_with(':') || n.contains(['*', '?', '[']))
    {
        return Err(Unread::Refused(format!(
            "{pattern} is a pattern git expands: name the paths themselves"
        )));
    }
    let covers = |path: &str| {
        named
            .iter()
            .any(|n| n.is_empty() || path == n || path.starts_with(&format!("{n}/")))
    };
    let diff = repo::unstaged(upstream, repo).await?;
    // A path git quotes in a header (`diff --git "a/…"`) is not one a name can be matched to.
    if diff.contains("diff --git \"") {
        return Err(Unread::Refused(
            "a changed path holds characters git quotes: it cannot be previewed by name".into(),
        ));
    }
    let mut staged: String = sections(&diff)
        .into_iter()
        .filter(|(path, _)| covers(path))
        .map(|(_, section)| section)
        .collect();
    let untracked: Vec<String> = repo::untracked(upstream, repo)
        .await?
        .into_iter()
        .filter(|path| {
            // An untracked directory is listed as `dir/`: a name inside it stages part of it.
            let path = path.trim_end_matches('/');
            covers(path) || named.iter().any(|n| n.starts_with(&format!("{path}/")))
        })
        .collect();
    for path in &untracked {
        staged.push_str(&format!(
            "untracked, staged whole (its content is not shown): {path}\n"
        ));
    }
    if staged.is_empty() {
        return Err(Unread::Refused(format!(
            "{} have nothing to stage in {repo}",
            named.join(", ")
        )));
    }
    let reads = vec![
        at.read(Part::Unstaged, Some(digest::sha256(diff.as_bytes()))),
        at.now(Part::Untracked).await?,
        at.now(Part::Staged).await?,
    ];
    Ok(at.previewed(
        format!("Stages the changes below in {repo}; nothing is committed."),
        vec![change("/unstaged", None, Some(staged))],
        reads,
    ))
}

/// `path` as the repository names it: relative to its root, `""` for all of it.
fn relative(repo: &str, path: &str) -> String {
    let path = match path.strip_prefix(repo.trim_end_matches('/')) {
        Some(inside) if inside.is_empty() || inside.starts_with('/') => inside,
        _ => path,
    };
    let path = path.trim_start_matches('/').trim_start_matches("./");
    if path == "." {
        String::new()
    } else {
        path.trim_end_matches('/').to_owned()
    }
}

/// Each file's section of a diff, with the path it changes.
fn sections(diff: &str) -> Vec<(&str, &str)> {
    let mut starts: Vec<usize> = diff
        .match_indices("diff --git a/")
        .map(|(i, _)| i)
        .filter(|&i| i == 0 || diff.as_bytes()[i - 1] == b'\n')
        .collect();
    starts.push(diff.len());
    starts
        .windows(2)
        .map(|pair| {
            let section = &diff[pair[0]..pair[1]];
            let path = section["diff --git a/".len()..]
                .split_once(" b/")
                .map_or("", |(path, _)| path);
            (path, section)
        })
        .collect()
}

/// `git_reset`: everything staged goes back to unstaged; nothing staged changes nothing.
async fn reset(at: &At<'_>) -> Result<Previewed, Unread> {
    let repo = at.repo;
    let diff = repo::staged(at.upstream, repo).await?;
    let read = at.read(Part::Staged, Some(digest::sha256(diff.as_bytes())));
    if diff.trim().is_empty() {
        return Ok(at.previewed(
            format!("Nothing is staged in {repo}: git_reset changes nothing."),
            Vec::new(),
            vec![read],
        ));
    }
    Ok(at.previewed(
        format!("Unstages everything staged in {repo}; the changes stay in the working tree."),
        vec![change("/staged", Some(diff), None)],
        vec![read],
    ))
}

/// `git_checkout`: the branch and commit before and after. A name that is no local branch
/// leaves HEAD detached, and the description says so.
async fn checkout(at: &At<'_>, name: &str) -> Result<Previewed, Unread> {
    let (upstream, repo) = (at.upstream, at.repo);
    let local = repo::branches(upstream, repo)
        .await?
        .iter()
        .any(|b| b == name);
    // git checks a local branch out before a tag of the same name; git_show would take the tag.
    let rev = if local {
        format!("refs/heads/{name}")
    } else {
        name.to_owned()
    };
    let Some(target) = repo::commit_of(upstream, repo, &rev).await? else {
        return Err(Unread::Refused(format!("{name} names no commit in {repo}")));
    };
    let branch = repo::branch(upstream, repo).await?;
    let head = repo::head(upstream, repo).await?;
    let after = if local {
        name.to_owned()
    } else {
        format!("detached at {target}")
    };
    let reads = vec![
        at.read(Part::Rev(rev), Some(target.clone())),
        at.read(Part::Branch, Some(branch.clone())),
        at.read(Part::Head, Some(head.clone())),
        at.now(Part::Staged).await?,
        at.now(Part::Unstaged).await?,
    ];
    Ok(at.previewed(
        format!(
            "Checks out {name} (commit {target}) in {repo}, leaving {branch} at {head}; \
             changes not committed are carried over where git can, or the checkout fails."
        ),
        vec![
            change("/branch", Some(branch), Some(after)),
            change("/head", Some(head), Some(target)),
        ],
        reads,
    ))
}

/// `git_create_branch`: a new branch at the commit its base (or the branch checked out) names;
/// the branch checked out stays. A name that exists blocks the plan, as the server refuses it.
async fn create_branch(at: &At<'_>, params: &Value) -> Result<Previewed, Unread> {
    let (upstream, repo) = (at.upstream, at.repo);
    let name = text_param(params, "branch_name")?;
    let branches = repo::branches(upstream, repo).await?;
    if branches.iter().any(|b| b == name) {
        return Err(Unread::Refused(format!(
            "the branch {name} exists in {repo}"
        )));
    }
    let base = match params["base_branch"].as_str() {
        Some(base) => base.to_owned(),
        None => match repo::branch(upstream, repo).await?.as_str() {
            "detached" => {
                return Err(Unread::Refused(format!(
                    "HEAD is detached in {repo}: name the base_branch"
                )))
            }
            branch => branch.to_owned(),
        },
    };
    // The server takes the base as a reference: a local branch is what it is sure to find.
    if !branches.contains(&base) {
        return Err(Unread::Refused(format!(
            "base_branch {base} is no local branch of {repo}"
        )));
    }
    let base_ref = format!("refs/heads/{base}");
    let Some(commit) = repo::commit_of(upstream, repo, &base_ref).await? else {
        return Err(Unread::Refused(format!("{base} names no commit in {repo}")));
    };
    let reads = vec![
        at.now(Part::Rev(format!("refs/heads/{name}"))).await?,
        at.read(Part::Rev(base_ref), Some(commit.clone())),
    ];
    Ok(at.previewed(
        format!(
            "Creates the branch {name} in {repo} at commit {commit}, where {base} is now; \
             nothing is checked out."
        ),
        vec![change(
            &format!("/branches/{}", pointer_token(name)),
            None,
            Some(commit),
        )],
        reads,
    ))
}

#[cfg(test)]
mod tests {
    use super::{relative, sections};

    #[test]
    fn a_diff_splits_into_one_section_per_file_with_its_path() {
        let diff = "diff --git a/a.txt b/a.txt\n+one\ndiff --git a/src/b c.rs b/src/b c.rs\n-x\n";
        let parts = sections(diff);
        assert_eq!(
            parts,
            [
                ("a.txt", "diff --git a/a.txt b/a.txt\n+one\n"),
                ("src/b c.rs", "diff --git a/src/b c.rs b/src/b c.rs\n-x\n"),
            ]
        );
        assert!(sections("").is_empty());
    }

    #[test]
    fn a_named_path_is_relative_to_the_repository_and_dot_is_all_of_it() {
        assert_eq!(relative("/r", "/r/src/"), "src");
        assert_eq!(relative("/r", "./a.txt"), "a.txt");
        assert_eq!(relative("/r", "."), "");
        assert_eq!(relative("/r", "/r"), "");
        assert_eq!(relative("/r/", "/r/a"), "a");
        assert_eq!(
            relative("/r", "/rx/a"),
            "rx/a",
            "outside: the server refuses it"
        );
    }
}
