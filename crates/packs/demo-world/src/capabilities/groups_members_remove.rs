//! `groups.members.remove`: remove a group's members by filter (seed 004's bulk example). The
//! preview groups the outcome by consequence: direct removals, access kept through nested groups,
//! linked entitlements lost, notifications queued.

use std::collections::HashSet;
use std::sync::Arc;

use countersign_proto::describe::{CostClass, Describe, DryRunMode, Preflight};
use countersign_proto::plan::{Assumption, Change, Effect, EffectKind, ReadRevision, Severity};
use countersign_proto::Credits;
use serde::Deserialize;
use serde_json::json;
use sqlx::AnyConnection;

use countersign_pack::build::{self, blocker, count, effect, effect_cost, effect_id, note};
use countersign_pack::{
    ids, ApiResult, Applied, Dialect, EffectProfile, Execution, Handle, JournalEntry, Planned,
    PlannedEffect, Subject,
};

pub const ID: &str = "groups.members.remove";
pub const TITLE: &str = "Remove members from a group";

/// Memberships revoked, access kept through nested groups, linked entitlements lost for good, and emails.
pub const EFFECTS: EffectProfile = EffectProfile {
    kinds: &[EffectKind::Revoke, EffectKind::Grant, EffectKind::Notify],
    irreversible: true,
    external: true,
};

/// What each removed member is emailed: exactly what the plan signs (`notice`).
const NOTICE_SUBJECT: &str = "Your access changed";

fn notice_body(group: &str) -> String {
    format!("You are no longer a direct member of {group}")
}

fn notice(group: &str) -> Change {
    build::message(NOTICE_SUBJECT, &notice_body(group))
}

/// Each queued notification costs this many hundredths of a credit.
const NOTIFICATION_CENTS: i64 = 1;

pub fn describe() -> Describe {
    build::describe(
        ID,
        TITLE,
        build::params(
            &["group", "filter"],
            json!({
                "group": {"type": "string", "pattern": "^grp_[a-z0-9_]{1,40}$"},
                "filter": {
                    "type": "object",
                    "additionalProperties": false,
                    "minProperties": 1,
                    "properties": {
                        "employment": {"enum": ["contractor", "employee", "intern"]},
                        "users": {
                            "type": "array", "maxItems": 1000, "uniqueItems": true,
                            "items": {"type": "string", "pattern": "^usr_[a-z0-9_]{1,40}$"}
                        }
                    }
                }
            }),
        ),
        DryRunMode::Required,
        // Priced per queued notification, so by how many the filter selects.
        (Preflight::Estimate, CostClass::Metered),
        2,
    )
}

#[derive(Deserialize)]
pub struct Params {
    group: String,
    filter: Filter,
}

#[derive(Deserialize)]
struct Filter {
    employment: Option<String>,
    users: Option<Vec<String>>,
}

/// The groups nested (at any depth) under `group`, whose members keep `group`'s access; a cycle
/// back to `group` itself gives its own members nothing.
const NESTED_MEMBERS: &str = "
    WITH RECURSIVE nested(id) AS (
        SELECT child_id FROM group_nesting WHERE parent_id = $1
        UNION SELECT n.child_id FROM group_nesting n JOIN nested ON n.parent_id = nested.id
    )
    SELECT DISTINCT m.user_id FROM group_members m JOIN nested ON m.group_id = nested.id
    WHERE nested.id != $1";

/// The groups nested under `group` at any depth, with their revisions: whose members keep access
/// is read from them, so a change to one of them makes the plan stale.
async fn nested_groups(
    conn: &mut AnyConnection,
    group: &str,
) -> Result<Vec<(String, i64)>, sqlx::Error> {
    sqlx::query_as(
        "WITH RECURSIVE nested(id) AS (
             SELECT child_id FROM group_nesting WHERE parent_id = $1
             UNION SELECT n.child_id FROM group_nesting n JOIN nested ON n.parent_id = nested.id
         )
         SELECT g.id, g.revision FROM groups g JOIN nested ON g.id = nested.id
         WHERE g.id != $1 ORDER BY g.id",
    )
    .bind(group)
    .fetch_all(conn)
    .await
}

async fn nested_members(
    conn: &mut AnyConnection,
    group: &str,
) -> Result<HashSet<String>, sqlx::Error> {
    let ids: Vec<String> = sqlx::query_scalar(NESTED_MEMBERS)
        .bind(group)
        .fetch_all(conn)
        .await?;
    Ok(ids.into_iter().collect())
}

/// The groups `group` is nested in, at any depth: their effective membership moves with it.
async fn ancestors(conn: &mut AnyConnection, group: &str) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar(
        "WITH RECURSIVE up(id) AS (
             SELECT parent_id FROM group_nesting WHERE child_id = $1
             UNION SELECT n.parent_id FROM group_nesting n JOIN up ON n.child_id = up.id
         ) SELECT id FROM up WHERE id != $1 ORDER BY id",
    )
    .bind(group)
    .fetch_all(conn)
    .await
}

fn subjects_where(ids: &HashSet<String>, of: &[Subject]) -> Arc<Vec<Subject>> {
    Arc::new(of.iter().filter(|s| ids.contains(&s.id)).cloned().collect())
}

pub async fn plan(conn: &mut AnyConnection, p: &Params) -> ApiResult<Planned> {
    let dialect = Dialect::of(conn);
    let mut planned = build::nothing(Credits::cents(0));
    let group = format!("groups/{}", p.group);
    let Some(revision) = crate::world::revision(conn, &group).await? else {
        planned.validation.push(blocker(
            "group_not_found",
            "/group",
            format!("Group {} does not exist.", p.group),
            "List the groups and use one of their ids.",
        ));
        return Ok(planned);
    };
    planned.read_revisions.push(ReadRevision {
        resource: group.clone(),
        revision,
    });
    let entitlements: Vec<(String, String, i64)> = sqlx::query_as(
        "SELECT id, name, revision FROM entitlements WHERE group_id = $1 ORDER BY id",
    )
    .bind(&p.group)
    .fetch_all(&mut *conn)
    .await?;
    for (id, _, revision) in &entitlements {
        planned.read_revisions.push(ReadRevision {
            resource: format!("entitlements/{id}"),
            revision: revision.to_string(),
        });
    }
    for (id, revision) in nested_groups(conn, &p.group).await? {
        planned.read_revisions.push(ReadRevision {
            resource: format!("groups/{id}"),
            revision: revision.to_string(),
        });
    }

    let users = p.filter.users.as_ref().map(|u| json!(u).to_string());
    let (group_id, employment) = (p.group.clone(), p.filter.employment.clone());
    let rows: Vec<(String, String, String)> = dialect
        .read_rows(
            conn,
            (
                "u.id, u.name, u.email",
                &format!(
                    "FROM group_members m JOIN users u ON u.id = m.user_id
                     WHERE m.group_id = $1
                       AND ($2 IS NULL OR u.employment = $2)
                       AND ($3 IS NULL OR u.id IN ({}))",
                    dialect.json_strings(3)
                ),
                "u.id",
            ),
            |query| query.bind(group_id).bind(employment).bind(users),
        )
        .await?;
    let to = build::recipients(
        rows.iter()
            .map(|(id, _, email)| (id.as_str(), email.as_str())),
    );
    let selected: Vec<Subject> = rows
        .into_iter()
        .map(|(id, label, _)| Subject::new(id, label))
        .collect();
    if selected.is_empty() {
        planned.validation.push(note(
            Severity::Info,
            "no_match",
            "/filter",
            format!("No direct member of {} matches the filter.", p.group),
        ));
        return Ok(planned);
    }
    let selected = Arc::new(selected);
    let n = selected.len();
    planned.effects.push(PlannedEffect::with_subjects(
        effect(
            1,
            "direct_membership_removed",
            EffectKind::Revoke,
            group.clone(),
            format!(
                "Remove {}.",
                count(n, "direct membership", "direct memberships").to_lowercase()
            ),
        ),
        selected.clone(),
    ));
    let derived = |id: usize, effect_type: &str, kind, resource: String, description| Effect {
        derived: true,
        cause: Some(effect_id(1)),
        ..effect(id, effect_type, kind, resource, description)
    };

    let nested = nested_members(conn, &p.group).await?;
    let retained = subjects_where(&nested, &selected);
    if !retained.is_empty() {
        let who = count(retained.len(), "subject keeps", "subjects keep");
        planned.effects.push(PlannedEffect::with_subjects(
            derived(
                planned.effects.len() + 1,
                "access_retained_via_nested_group",
                EffectKind::Grant,
                group.clone(),
                format!("{who} access through nested groups."),
            ),
            retained.clone(),
        ));
        let who = count(
            retained.len(),
            "selected subject retains",
            "selected subjects retain",
        );
        planned.validation.push(note(
            Severity::Warning,
            "access_outcome_varies",
            "/filter",
            format!("{who} group-derived access."),
        ));
    }
    for (id, name, _) in &entitlements {
        let holders: HashSet<String> =
            sqlx::query_scalar("SELECT user_id FROM entitlement_holders WHERE entitlement_id = $1")
                .bind(id)
                .fetch_all(&mut *conn)
                .await?
                .into_iter()
                .filter(|u| !nested.contains(u))
                .collect();
        let losing = subjects_where(&holders, &selected);
        if losing.is_empty() {
            continue;
        }
        let who = count(losing.len(), "subject loses", "subjects lose");
        planned.effects.push(PlannedEffect::with_subjects(
            Effect {
                reversible: false,
                ..derived(
                    planned.effects.len() + 1,
                    &format!("{id}_entitlement_removed"),
                    EffectKind::Revoke,
                    format!("entitlements/{id}"),
                    format!("{who} the linked {name} entitlement."),
                )
            },
            losing,
        ));
    }
    let cost = Credits::cents(NOTIFICATION_CENTS * n as i64);
    planned.effects.push(PlannedEffect::with_subjects(
        Effect {
            reversible: false,
            external: true,
            cost: effect_cost(cost),
            changes: vec![to, notice(&p.group)],
            ..derived(
                planned.effects.len() + 1,
                "notification_queued",
                EffectKind::Notify,
                "notifications/email".to_owned(),
                format!("Email {n} people that their access changed."),
            )
        },
        selected,
    ));
    planned.assumptions.push(Assumption {
        dependency: "mail_relay".to_owned(),
        description: "Delivery is attempted after commit; bounces are not known now.".to_owned(),
        execution_can_proceed_without: true,
    });
    planned.estimated_cost = build::credits(cost);
    Ok(planned)
}

pub async fn apply(
    h: &mut Handle<'_>,
    p: &Params,
    planned: &Planned,
    execution: Execution<'_>,
) -> ApiResult<Applied> {
    let dialect = h.dialect();
    let mut journal = Vec::new();
    let Some(direct) = planned.effects.first() else {
        return Ok(Applied {
            content: format!("No member of {} matched; nothing removed.", p.group),
            ..Applied::default()
        });
    };
    let selected = json!(direct.subject_ids()).to_string();
    let removed: Vec<String> = sqlx::query_scalar(&format!(
        "DELETE FROM group_members WHERE group_id = $1 AND user_id IN ({})
         RETURNING user_id",
        dialect.json_strings(2)
    ))
    .bind(&p.group)
    .bind(&selected)
    .fetch_all(h.conn())
    .await?;
    let removed_count = removed.len();
    journal.push(JournalEntry::of(&direct.effect, removed, vec![]));
    crate::world::bump(h, &format!("groups/{}", p.group)).await?;
    for ancestor in ancestors(h.conn(), &p.group).await? {
        crate::world::bump(h, &format!("groups/{ancestor}")).await?;
    }

    for planned_effect in &planned.effects[1..] {
        let e = &planned_effect.effect;
        let ids = json!(planned_effect.subject_ids()).to_string();
        let entry = if e.effect_type == "access_retained_via_nested_group" {
            // Nothing to write: read back who still has access after the removal.
            let still = nested_members(h.conn(), &p.group).await?;
            let kept = planned_effect
                .subject_ids()
                .into_iter()
                .filter(|id| still.contains(*id))
                .map(str::to_owned)
                .collect();
            JournalEntry::of(e, kept, vec![])
        } else if let Some(entitlement) = e.resource.strip_prefix("entitlements/") {
            let revoked = sqlx::query_scalar(&format!(
                "DELETE FROM entitlement_holders
                 WHERE entitlement_id = $1 AND user_id IN ({})
                 RETURNING user_id",
                dialect.json_strings(2)
            ))
            .bind(entitlement)
            .bind(&ids)
            .fetch_all(h.conn())
            .await?;
            crate::world::bump(h, &e.resource).await?;
            JournalEntry::of(e, revoked, vec![])
        } else {
            let queued = sqlx::query_as(&format!(
                "INSERT INTO email_outbox (user_id, recipient, subject, body, plan_id, created_at,
                                           charge)
                 SELECT id, email, $1, $6, $2, $3, $5
                 FROM users WHERE id IN ({})
                 RETURNING user_id, recipient, subject, body",
                dialect.json_strings(4)
            ))
            .bind(NOTICE_SUBJECT)
            .bind(execution.plan_id)
            .bind(ids::to_text(ids::now()))
            .bind(&ids)
            // Each message's share of the plan's price, refunded if it is cancelled unsent.
            .bind(Credits::cents(NOTIFICATION_CENTS).to_string())
            .bind(notice_body(&p.group))
            .fetch_all(h.conn())
            .await?;
            build::notified(e, queued)
        };
        journal.push(entry);
    }
    Ok(Applied {
        content: format!(
            "Removed {removed_count} direct memberships from {}.",
            p.group
        ),
        journal,
        metadata: Default::default(),
        ..Applied::default()
    })
}
