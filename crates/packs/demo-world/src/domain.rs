//! What the engine must know of the demo world: its resources' revisions, the rule for the
//! people agents act for, and where their mail goes.

use countersign_pack::{ApiResult, BoxFuture, Domain, Flag, Handle, Target};

use crate::world::{self, PROJECT, TABLES};

pub struct World;

const KINDS: [&str; TABLES.len()] = {
    let mut kinds = [""; TABLES.len()];
    let mut i = 0;
    while i < TABLES.len() {
        kinds[i] = TABLES[i].0;
        i += 1;
    }
    kinds
};

impl Domain for World {
    fn kinds(&self) -> &'static [&'static str] {
        &KINDS
    }

    fn revision<'a>(
        &'a self,
        handle: &'a mut Handle<'_>,
        resource: &'a str,
    ) -> BoxFuture<'a, ApiResult<Option<String>>> {
        Box::pin(async move { Ok(world::revision(handle.conn(), resource).await?) })
    }

    /// A person must be a known, active user; employees act on every project, group and quota
    /// of the organisation; contractors only on projects where they hold a role, and never on
    /// groups or quotas.
    fn may_act<'a>(
        &'a self,
        handle: &'a mut Handle<'_>,
        person: &'a str,
        target: Option<Target>,
        resource: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<bool>, sqlx::Error>> {
        Box::pin(async move {
            let conn = handle.conn();
            let user: Option<(String, Flag)> =
                sqlx::query_as("SELECT employment, suspended FROM users WHERE id = $1")
                    .bind(person)
                    .fetch_optional(&mut *conn)
                    .await?;
            let Some((employment, Flag(suspended))) = user else {
                return Ok(None);
            };
            if suspended {
                return Ok(Some(false));
            }
            if employment == "employee" {
                return Ok(Some(true));
            }
            match (target, resource) {
                (None, _) => Ok(Some(true)),
                (Some(target), Some(project)) if target == PROJECT => {
                    let role: Option<String> = sqlx::query_scalar(
                        "SELECT role FROM project_members WHERE project_id = $1 AND user_id = $2",
                    )
                    .bind(project)
                    .bind(person)
                    .fetch_optional(&mut *conn)
                    .await?;
                    Ok(Some(role.is_some()))
                }
                _ => Ok(Some(false)),
            }
        })
    }

    fn address<'a>(
        &'a self,
        handle: &'a mut Handle<'_>,
        person: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, sqlx::Error>> {
        Box::pin(async move {
            sqlx::query_scalar("SELECT email FROM users WHERE id = $1")
                .bind(person)
                .fetch_optional(handle.conn())
                .await
        })
    }
}
