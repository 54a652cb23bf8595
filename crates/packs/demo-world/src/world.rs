//! The demo world's resources: which table keeps each kind's revision, and moving one.

use countersign_pack::{build, ApiResult, Handle, Target};
use countersign_proto::plan::Validation;
use sqlx::AnyConnection;

/// Requests that act on a project name it in `project`.
pub const PROJECT: Target = Target {
    param: "project",
    prefix: "prj_",
};

/// Requests that act on a group name it in `group`.
pub const GROUP: Target = Target {
    param: "group",
    prefix: "grp_",
};

/// Requests that act on a storage quota name it in `quota`.
pub const QUOTA: Target = Target {
    param: "quota",
    prefix: "sq_",
};

pub fn project_not_found(project: &str) -> Validation {
    build::blocker(
        "project_not_found",
        "/project",
        format!("Project {project} does not exist."),
        "List the projects and use one of their ids.",
    )
}

/// The kinds of resource that carry a revision, and the table behind each. A user's revision
/// moves by a trigger on every write to them (migration 0014), since no capability writes people.
pub const TABLES: [(&str, &str); 6] = [
    ("projects", "projects"),
    ("groups", "groups"),
    ("entitlements", "entitlements"),
    ("seats", "seat_pools"),
    ("storage", "storage_quotas"),
    ("users", "users"),
];

/// The table behind `resource`, and the id in it.
pub fn table_of(resource: &str) -> Option<(&'static str, &str)> {
    let (kind, id) = resource.split_once('/')?;
    let (_, table) = TABLES.iter().find(|(k, _)| *k == kind)?;
    (!id.contains('/')).then_some((table, id))
}

/// The current revision of `resource`, or `None` when it does not exist (or has none).
pub async fn revision(
    conn: &mut AnyConnection,
    resource: &str,
) -> Result<Option<String>, sqlx::Error> {
    let Some((table, id)) = table_of(resource) else {
        return Ok(None);
    };
    let revision: Option<i64> =
        sqlx::query_scalar(&format!("SELECT revision FROM {table} WHERE id = $1"))
            .bind(id)
            .fetch_optional(conn)
            .await?;
    Ok(revision.map(|r| r.to_string()))
}

/// Moves `resource` to its next revision: every write to it goes through here, so every plan
/// that read it shows as stale in the queue from this commit on.
pub async fn bump(handle: &mut Handle<'_>, resource: &str) -> ApiResult<()> {
    if let Some((table, id)) = table_of(resource) {
        sqlx::query(&format!(
            "UPDATE {table} SET revision = revision + 1 WHERE id = $1"
        ))
        .bind(id)
        .execute(handle.conn())
        .await?;
        handle.moved(resource);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_known_resources_have_tables() {
        assert_eq!(table_of("groups/grp_1"), Some(("groups", "grp_1")));
        assert_eq!(table_of("seats/org"), Some(("seat_pools", "org")));
        assert_eq!(table_of("projects/prj_1/items"), None);
        assert_eq!(table_of("users/usr_1"), Some(("users", "usr_1")));
        assert_eq!(table_of("documents/doc_1"), None);
        assert_eq!(table_of("groups"), None);
    }
}
