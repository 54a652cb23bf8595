//! What an agent may touch, checked before anything is evaluated (seed 004: authorization is
//! separate from validation). Two rules, both from the request alone and authorization state:
//! the agent's scopes, and what the person it acts for may do in the capability's domain. A
//! refusal is the same `forbidden` whether or not the resource exists, and names no counts.

use std::fmt;

use countersign_proto::ErrorCode;
use serde_json::Value;
use sqlx::AnyConnection;

use crate::accounts::callers::Agent;
use crate::registry::{Capability, Registry};
use crate::store::Tx;
use crate::{ApiError, ApiResult};

/// The `resource` of a scope that covers every resource of its capability.
const ANY: &str = "*";

/// One capability, on every resource or on one: `capability_id` or `capability_id:resource`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    pub capability: Capability,
    pub resource: Option<String>,
}

impl Registry {
    /// `text` as a scope of one of this registry's capabilities.
    pub fn scope(&'static self, text: &str) -> Result<Scope, String> {
        let (id, resource) = match text.split_once(':') {
            Some((id, resource)) => (id, Some(resource)),
            None => (text, None),
        };
        let capability = self.get(id).ok_or_else(|| {
            let known: Vec<&str> = self.all().map(|c| c.id()).collect();
            format!("unknown capability {id:?}; one of {}", known.join(", "))
        })?;
        let Some(resource) = resource else {
            return Ok(Scope {
                capability,
                resource: None,
            });
        };
        let target = capability
            .target()
            .ok_or_else(|| format!("{id} acts on no resource; scope it without ':'"))?;
        let well_formed = resource.strip_prefix(target.prefix).is_some_and(|rest| {
            (1..=40).contains(&rest.len())
                && rest
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        });
        if !well_formed {
            return Err(format!(
                "{id} acts on {}… ids; {resource:?} is not one",
                target.prefix
            ));
        }
        Ok(Scope {
            capability,
            resource: Some(resource.to_owned()),
        })
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.resource {
            Some(resource) => write!(f, "{}:{resource}", self.capability.id()),
            None => f.write_str(self.capability.id()),
        }
    }
}

/// Records `scopes` for `agent_id` in the transaction that creates the agent.
pub async fn grant(tx: &mut Tx, agent_id: &str, scopes: &[Scope]) -> Result<(), sqlx::Error> {
    for scope in scopes {
        sqlx::query(
            "INSERT INTO agent_scopes (agent_id, capability_id, resource)
             VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
        )
        .bind(agent_id)
        .bind(scope.capability.id())
        .bind(scope.resource.as_deref().unwrap_or(ANY))
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// The scopes of `agent_id`; none means full access.
pub async fn of(
    conn: &mut AnyConnection,
    registry: &'static Registry,
    agent_id: &str,
) -> Result<Vec<Scope>, sqlx::Error> {
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT capability_id, resource FROM agent_scopes WHERE agent_id = $1
         ORDER BY capability_id, resource",
    )
    .bind(agent_id)
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(id, resource)| {
            Some(Scope {
                capability: registry.get(&id)?,
                resource: (resource != ANY).then_some(resource),
            })
        })
        .collect())
}

fn refused(capability: Capability) -> ApiError {
    ApiError::new(
        ErrorCode::Forbidden,
        format!(
            "This agent may not use {} on the resource it names.",
            capability.id()
        ),
    )
}

/// May `agent` preview or invoke `capability` with `params`? Reads no domain state but what the
/// domain says of the person the agent acts for.
pub async fn authorize(
    conn: &mut AnyConnection,
    registry: &'static Registry,
    agent: &Agent,
    capability: Capability,
    params: &Value,
) -> ApiResult<()> {
    let target = capability.target();
    let resource = target
        .and_then(|t| params.get(t.param))
        .and_then(Value::as_str);
    let scopes = of(conn, registry, &agent.id).await?;
    let in_scope = scopes.is_empty()
        || scopes.iter().any(|s| {
            s.capability == capability
                && s.resource
                    .as_deref()
                    .is_none_or(|scoped| Some(scoped) == resource)
        });
    if !in_scope {
        return Err(refused(capability));
    }
    match &agent.on_behalf_of {
        Some(person) if !registry.may_act(conn, person, target, resource).await? => {
            Err(refused(capability))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use crate::registry::tests::demo_registry;

    #[test]
    fn scopes_parse_with_and_without_a_resource() {
        let registry = demo_registry();
        let whole = registry.scope("projects.settings.update").unwrap();
        assert_eq!(whole.resource, None);
        let one = registry.scope("groups.members.remove:grp_support").unwrap();
        assert_eq!(one.capability.id(), "groups.members.remove");
        assert_eq!(one.to_string(), "groups.members.remove:grp_support");
    }

    #[test]
    fn malformed_scopes_are_refused() {
        for bad in [
            "no.such",
            "groups.members.remove:prj_184",
            "projects.settings.update:prj_",
            "wallet.agent_budget.guard.check:x",
            "projects.settings.update:prj_A",
        ] {
            assert!(demo_registry().scope(bad).is_err(), "{bad}");
        }
    }
}
