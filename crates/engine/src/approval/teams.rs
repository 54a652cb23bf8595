//! The gateway's directory of teams: which people are in which team, and which team an agent
//! works for. Approval policies read it (`input.directory`, `input.agent.team`) and the rules
//! they set are met by people of the teams they name.

use std::collections::BTreeMap;

use countersign_proto::approvals::ApproverProfile;
use sqlx::AnyConnection;

use crate::accounts::callers::Approver;
use crate::store::Store;

/// Whether `name` may name a team: 1-40 characters of a-z, 0-9, '_' and '-'.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 40
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

fn check(teams: &[String]) -> anyhow::Result<()> {
    for team in teams {
        anyhow::ensure!(
            valid_name(team),
            "team {team:?}: a team's name is 1-40 characters of a-z, 0-9, '_' and '-'"
        );
    }
    Ok(())
}

/// Makes `teams` the teams of `person` (a user id, or an approver's id for an approver invited
/// without one), in one transaction; none takes them out of every team.
pub async fn set_person(store: &Store, person: &str, teams: &[String]) -> anyhow::Result<()> {
    check(teams)?;
    anyhow::ensure!(!person.trim().is_empty(), "a person's id is needed");
    let mut w = store.write().await?;
    sqlx::query("DELETE FROM team_members WHERE person = $1")
        .bind(person)
        .execute(&mut *w.tx)
        .await?;
    for team in teams {
        add(&mut w.tx, team, person).await?;
    }
    w.commit().await?;
    Ok(())
}

/// Puts `person` in `team` (a name already checked), in the caller's transaction.
pub async fn add(conn: &mut AnyConnection, team: &str, person: &str) -> Result<(), sqlx::Error> {
    sqlx::query("INSERT INTO team_members (team, person) VALUES ($1, $2) ON CONFLICT DO NOTHING")
        .bind(team)
        .bind(person)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Binds agent `agent_id` to `team`, or to none.
pub async fn set_agent(store: &Store, agent_id: &str, team: Option<&str>) -> anyhow::Result<()> {
    if let Some(team) = team {
        check(&[team.to_owned()])?;
    }
    let mut w = store.write().await?;
    let updated = sqlx::query("UPDATE agents SET team = $1 WHERE id = $2")
        .bind(team)
        .bind(agent_id)
        .execute(&mut *w.tx)
        .await?;
    anyhow::ensure!(updated.rows_affected() == 1, "no agent {agent_id}");
    w.commit().await?;
    Ok(())
}

/// `approver` as the policy sees them: their person and that person's teams.
pub async fn profile(
    conn: &mut AnyConnection,
    approver: &Approver,
) -> Result<ApproverProfile, sqlx::Error> {
    let person = approver
        .user_id
        .clone()
        .unwrap_or_else(|| approver.id.clone());
    let teams = sqlx::query_scalar("SELECT team FROM team_members WHERE person = $1 ORDER BY team")
        .bind(&person)
        .fetch_all(&mut *conn)
        .await?;
    Ok(ApproverProfile {
        approver_id: approver.id.clone(),
        display_name: approver.display_name.clone(),
        person,
        teams,
        standing_flags: None,
    })
}

/// Every team with its members, and every agent bound to one.
pub async fn list(store: &Store) -> anyhow::Result<Listing> {
    let mut conn = store.pool().acquire().await?;
    let members: Vec<(String, String)> =
        sqlx::query_as("SELECT team, person FROM team_members ORDER BY team, person")
            .fetch_all(&mut *conn)
            .await?;
    let agents: Vec<(String, String)> = sqlx::query_as(
        "SELECT team, id FROM agents WHERE team IS NOT NULL AND revoked_at IS NULL ORDER BY team, id",
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut listing = Listing::default();
    for (team, person) in members {
        listing.teams.entry(team).or_default().people.push(person);
    }
    for (team, agent) in agents {
        listing.teams.entry(team).or_default().agents.push(agent);
    }
    Ok(listing)
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Listing {
    pub teams: BTreeMap<String, Team>,
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Team {
    pub people: Vec<String>,
    pub agents: Vec<String>,
}
