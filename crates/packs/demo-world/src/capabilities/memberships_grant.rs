//! `memberships.grant`: give a person a role in a project. Derived: a seat is consumed and an
//! invitation is emailed (external); an existing other role is a blocking conflict (seed 004).

use std::sync::Arc;

use countersign_proto::describe::{CostClass, Describe, DryRunMode, Preflight};
use countersign_proto::plan::{Assumption, Change, Effect, EffectKind, ReadRevision, Severity};
use countersign_proto::Credits;
use serde::Deserialize;
use serde_json::{json, Value};
use sqlx::AnyConnection;

use countersign_pack::build::{self, blocker, effect, effect_cost, effect_id, note};
use countersign_pack::{
    ids, ApiResult, Applied, EffectProfile, Execution, Flag, Handle, JournalEntry, Planned,
    PlannedEffect, Subject,
};

pub const ID: &str = "memberships.grant";
pub const TITLE: &str = "Grant a project role";

/// A role granted, a seat used, and an invitation emailed (the one thing that cannot be undone).
pub const EFFECTS: EffectProfile = EffectProfile {
    kinds: &[EffectKind::Grant, EffectKind::Update, EffectKind::Notify],
    irreversible: false,
    external: true,
};

/// The organisation's one seat pool.
pub const SEATS: &str = "seats/org";

const PRICE_CENTS: i64 = 5;

pub fn describe() -> Describe {
    build::describe(
        ID,
        TITLE,
        build::params(
            &["project", "subject", "role"],
            json!({
                "project": {"type": "string", "pattern": "^prj_[a-z0-9_]{1,40}$"},
                "subject": {"type": "string", "pattern": "^usr_[a-z0-9_]{1,40}$"},
                "role": {"enum": ["viewer", "editor", "admin"]}
            }),
        ),
        DryRunMode::Required,
        (Preflight::Estimate, CostClass::Flat),
        1,
    )
}

#[derive(Deserialize)]
pub struct Params {
    project: String,
    subject: String,
    role: String,
}

fn role_path(subject: &str) -> String {
    format!("/members/{subject}/role")
}

/// The invitation the grantee is emailed: exactly what the plan signs (`invitation`).
fn invitation_subject(p: &Params) -> String {
    format!("You were invited to {}", p.project)
}

fn invitation_body(p: &Params) -> String {
    format!("Role: {}", p.role)
}

fn invitation(p: &Params) -> Change {
    build::message(&invitation_subject(p), &invitation_body(p))
}

pub async fn plan(conn: &mut AnyConnection, p: &Params) -> ApiResult<Planned> {
    let mut planned = build::nothing(Credits::cents(0));
    let project = format!("projects/{}", p.project);
    let Some(revision) = crate::world::revision(conn, &project).await? else {
        planned
            .validation
            .push(crate::world::project_not_found(&p.project));
        return Ok(planned);
    };
    planned.read_revisions.push(ReadRevision {
        resource: project.clone(),
        revision,
    });
    let user: Option<(String, String, Flag, i64)> =
        sqlx::query_as("SELECT name, email, suspended, revision FROM users WHERE id = $1")
            .bind(&p.subject)
            .fetch_optional(&mut *conn)
            .await?;
    let Some((name, email, Flag(suspended), user_revision)) = user else {
        planned.validation.push(blocker(
            "subject_not_found",
            "/subject",
            format!("There is no user {}.", p.subject),
            "Check the user id; invitations go to existing accounts only.",
        ));
        return Ok(planned);
    };
    // Where the invitation goes and whether the person may hold a role: a change to either
    // makes the plan stale for its approvers.
    planned.read_revisions.push(ReadRevision {
        resource: format!("users/{}", p.subject),
        revision: user_revision.to_string(),
    });
    if suspended {
        planned.validation.push(blocker(
            "subject_suspended",
            "/subject",
            format!("{} ({}) is suspended.", p.subject, name),
            "Reactivate the account first, or choose another person.",
        ));
    }
    let existing: Option<String> = sqlx::query_scalar(
        "SELECT role FROM project_members WHERE project_id = $1 AND user_id = $2",
    )
    .bind(&p.project)
    .bind(&p.subject)
    .fetch_optional(&mut *conn)
    .await?;
    match existing {
        Some(role) if role == p.role => {
            planned.validation.push(note(
                Severity::Info,
                "already_granted",
                "/role",
                format!("{} already holds {role} on {}.", p.subject, p.project),
            ));
            return Ok(planned);
        }
        Some(role) => planned.validation.push(blocker(
            "role_conflict",
            "/role",
            format!(
                "{} already holds {role} on {}; a second role is not allowed.",
                p.subject, p.project
            ),
            "Revoke the existing role first, or request that role instead.",
        )),
        None => {}
    }
    let (total, used, seats_revision): (i64, i64, i64) =
        sqlx::query_as("SELECT total, used, revision FROM seat_pools WHERE id = 'org'")
            .fetch_one(&mut *conn)
            .await?;
    planned.read_revisions.push(ReadRevision {
        resource: SEATS.to_owned(),
        revision: seats_revision.to_string(),
    });
    if used >= total {
        planned.validation.push(blocker(
            "no_seat_available",
            "/subject",
            format!("All {total} seats are in use."),
            "Free a seat or buy more before granting a role.",
        ));
    }

    let subject = Arc::new(vec![Subject::new(p.subject.clone(), name.clone())]);
    let price = Credits::cents(PRICE_CENTS);
    planned.effects.push(PlannedEffect::with_subjects(
        Effect {
            changes: vec![Change {
                path: role_path(&p.subject),
                before: Value::Null,
                after: json!(p.role),
            }],
            cost: effect_cost(price),
            ..effect(
                1,
                "role_granted",
                EffectKind::Grant,
                format!("{project}/members"),
                format!("Grant {} the {} role on {}.", name, p.role, p.project),
            )
        },
        subject.clone(),
    ));
    planned.effects.push(PlannedEffect::new(Effect {
        derived: true,
        cause: Some(effect_id(1)),
        changes: vec![Change {
            path: "/used".to_owned(),
            before: json!(used),
            after: json!(used + 1),
        }],
        ..effect(
            2,
            "seat_consumed",
            EffectKind::Update,
            SEATS,
            format!("Use one more seat ({} of {total}).", used + 1),
        )
    }));
    planned.effects.push(PlannedEffect::with_subjects(
        Effect {
            derived: true,
            cause: Some(effect_id(1)),
            reversible: false,
            external: true,
            changes: vec![
                build::recipients([(p.subject.as_str(), email.as_str())]),
                invitation(p),
            ],
            ..effect(
                3,
                "invite_email_sent",
                EffectKind::Notify,
                "notifications/email",
                format!("Email {name} an invitation to {}.", p.project),
            )
        },
        subject,
    ));
    planned.assumptions.push(Assumption {
        dependency: "mail_relay".to_owned(),
        description:
            "The invitation is sent after commit; whether it is delivered is not known now."
                .to_owned(),
        execution_can_proceed_without: true,
    });
    planned.estimated_cost = build::credits(price);
    Ok(planned)
}

pub async fn apply(
    h: &mut Handle<'_>,
    p: &Params,
    planned: &Planned,
    execution: Execution<'_>,
) -> ApiResult<Applied> {
    let [grant, seat, invite] = &planned.effects[..] else {
        return Ok(Applied {
            content: format!("{} already holds {} on {}.", p.subject, p.role, p.project),
            ..Applied::default()
        });
    };
    // Journal values are read from the database around each write, never inferred from it.
    let role_before: Option<String> = sqlx::query_scalar(
        "SELECT role FROM project_members WHERE project_id = $1 AND user_id = $2",
    )
    .bind(&p.project)
    .bind(&p.subject)
    .fetch_optional(h.conn())
    .await?;
    let (user, role): (String, String) = sqlx::query_as(
        "INSERT INTO project_members (project_id, user_id, role) VALUES ($1, $2, $3)
         RETURNING user_id, role",
    )
    .bind(&p.project)
    .bind(&p.subject)
    .bind(&p.role)
    .fetch_one(h.conn())
    .await?;
    crate::world::bump(h, &format!("projects/{}", p.project)).await?;
    let role_change = Change {
        path: role_path(&user),
        before: json!(role_before),
        after: json!(role),
    };
    let used_before: i64 = sqlx::query_scalar("SELECT used FROM seat_pools WHERE id = 'org'")
        .fetch_one(h.conn())
        .await?;
    let used: i64 = sqlx::query_scalar(
        "UPDATE seat_pools SET used = used + 1, revision = revision + 1 WHERE id = 'org'
         RETURNING used",
    )
    .fetch_one(h.conn())
    .await?;
    let seat_change = Change {
        path: "/used".to_owned(),
        before: json!(used_before),
        after: json!(used),
    };
    let invited: Vec<build::QueuedMail> = sqlx::query_as(
        "INSERT INTO email_outbox (user_id, recipient, subject, body, plan_id, created_at)
         SELECT id, email, $1, $2, $3, $4
         FROM users WHERE id = $5 RETURNING user_id, recipient, subject, body",
    )
    .bind(invitation_subject(p))
    .bind(invitation_body(p))
    .bind(execution.plan_id)
    .bind(ids::to_text(ids::now()))
    .bind(&p.subject)
    .fetch_all(h.conn())
    .await?;
    Ok(Applied {
        content: format!(
            "Granted {} the {} role on {}.",
            p.subject, p.role, p.project
        ),
        journal: vec![
            JournalEntry::of(&grant.effect, vec![user], vec![role_change]),
            JournalEntry::of(&seat.effect, vec![], vec![seat_change]),
            build::notified(&invite.effect, invited),
        ],
        metadata: Default::default(),
        ..Applied::default()
    })
}
