//! Who may decide a plan: one person is one approval, nobody decides a plan that acts on their
//! own behalf or grants access to them, and an approval counts only where an open rule of the
//! plan asks for its person. The same answer refuses a decision (`not_eligible`) and tells an
//! approver's console, in the plan record, why it may not approve.

use countersign_proto::approvals::Eligibility;
use countersign_proto::decision::Decision;
use countersign_proto::plan::EffectKind;
use countersign_proto::rules::Rule;
use sqlx::AnyConnection;

use crate::accounts::callers::{Approver, Caller};
use crate::approval::requirement::{Approving, Tally};
use crate::plan::plans::StoredPlan;
use crate::{approval::approvals, approval::teams, ids, ApiResult};

/// What a plan record tells the approver `caller` about deciding `plan`; nothing for an agent.
pub async fn of(
    conn: &mut AnyConnection,
    caller: &Caller,
    plan: &StoredPlan,
) -> ApiResult<Option<Eligibility>> {
    let Caller::Approver(approver) = caller else {
        return Ok(None);
    };
    // Their standing approval counting for the plan already answers too: a second seat by hand
    // would be one person's second approval (`decisions::decide` refuses it).
    let reason = match checks(conn, approver, plan, true).await? {
        Some(why) => Some(why),
        None => refusal_beyond_person(conn, approver, plan, Decision::Approve).await?,
    };
    Ok(Some(Eligibility {
        eligible: reason.is_none(),
        reason,
    }))
}

/// Why `approver` may not make `decision` on `plan`, or `None` when they may.
pub async fn refusal(
    conn: &mut AnyConnection,
    approver: &Approver,
    plan: &StoredPlan,
    decision: Decision,
) -> ApiResult<Option<String>> {
    if let Some(why) = personal(conn, approver, plan).await? {
        return Ok(Some(why));
    }
    refusal_beyond_person(conn, approver, plan, decision).await
}

/// [`refusal`] once the person may decide the plan: whether they wrote its request, and
/// whether a rule asks for them.
async fn refusal_beyond_person(
    conn: &mut AnyConnection,
    approver: &Approver,
    plan: &StoredPlan,
    decision: Decision,
) -> ApiResult<Option<String>> {
    if decision == Decision::Approve {
        if let Some(why) = wrote_request(conn, approver, plan).await? {
            return Ok(Some(why));
        }
    }
    asked(conn, approver, plan, decision).await
}

/// Why `approver` may not approve `plan` because they wrote its request: they amended the plan
/// it supersedes into it (`docs/amend.md`), under this account or another of their person. The
/// amender is the plan's requester: their approval would be a request approved by its writer.
pub(crate) async fn wrote_request(
    conn: &mut AnyConnection,
    approver: &Approver,
    plan: &StoredPlan,
) -> Result<Option<String>, sqlx::Error> {
    let Some(amendment) = &plan.amendment else {
        return Ok(None);
    };
    let same_person = match (&approver.user_id, amendment.approver_id == approver.id) {
        (_, true) => true,
        (None, false) => false,
        (Some(person), false) => {
            let amender: Option<Option<String>> =
                sqlx::query_scalar("SELECT user_id FROM approvers WHERE id = $1")
                    .bind(&amendment.approver_id)
                    .fetch_optional(&mut *conn)
                    .await?;
            amender.flatten().as_deref() == Some(person.as_str())
        }
    };
    Ok(same_person.then(|| {
        format!(
            "You wrote this request: {} amended plan {} into it, so someone else must approve it.",
            amendment.display_name, amendment.amends
        )
    }))
}

/// Whether an open rule asks for `approver`'s person: to approve, their approval must count
/// towards a rule not yet met; to reject, some rule must ask for them.
async fn asked(
    conn: &mut AnyConnection,
    approver: &Approver,
    plan: &StoredPlan,
    decision: Decision,
) -> ApiResult<Option<String>> {
    // Rules that ask anyone take anyone's approval while a seat is free (and once none is, the
    // plan's status answers): nothing to read. The built-in policy's rules are all such.
    if plan.requirement.rules.iter().all(Rule::asks_anyone) {
        return Ok(None);
    }
    let profile = teams::profile(conn, approver).await?;
    let (person, teams) = (profile.person.as_str(), profile.teams);
    let tally = Tally::new(&plan.requirement, plan.preview.created_at, ids::now());
    let standing = approvals::standing_decisions(conn, &plan.preview.plan_id).await?;
    let candidate = Approving {
        approver_id: approver.id.clone(),
        person: person.to_owned(),
        teams: teams.clone(),
        standing: false,
    };
    let (statuses, met) = tally.count(&standing.approving);
    // Once every rule is met the plan's status answers a late decision (`plan_not_pending`).
    let counts = match decision {
        Decision::Approve => met || tally.would_count(&standing.approving, candidate),
        Decision::Reject => tally.asks(person, &teams),
    };
    if counts {
        return Ok(None);
    }
    let open: Vec<String> = statuses
        .iter()
        .filter(|s| s.missing > 0)
        .map(|s| format!("{} ({}, {} missing)", s.rule.who(), s.rule.id, s.missing))
        .collect();
    let of_teams = match teams.is_empty() {
        true => "in no team".to_owned(),
        false => format!("of {}", teams.join(", ")),
    };
    Ok(Some(format!(
        "No open rule of this plan asks for {person} ({of_teams}): it needs {}.",
        open.join("; ")
    )))
}

/// Why `approver`'s person may not decide `plan` whatever its rules: it acts for them, grants
/// to them, or they decided it under another account.
pub(crate) async fn personal(
    conn: &mut AnyConnection,
    approver: &Approver,
    plan: &StoredPlan,
) -> Result<Option<String>, sqlx::Error> {
    checks(conn, approver, plan, false).await
}

/// [`personal`]'s checks; with `own_standing`, also whether the approver's own standing approval
/// counts for the plan already (read in the same query as the person's other accounts).
async fn checks(
    conn: &mut AnyConnection,
    approver: &Approver,
    plan: &StoredPlan,
    own_standing: bool,
) -> Result<Option<String>, sqlx::Error> {
    let Some(person) = approver.user_id.as_deref() else {
        // An approver invited without a person is a person of its own: nothing to compare
        // but their own standing approval.
        return match own_standing {
            true => decided_already(conn, approver, plan, (None, true)).await,
            false => Ok(None),
        };
    };
    if plan.preview.caller.on_behalf_of.as_deref() == Some(person) {
        return Ok(Some(format!(
            "The plan acts on behalf of {person}, who is this approver; someone else must decide it."
        )));
    }
    for effect in &plan.preview.effects {
        if effect.kind != EffectKind::Grant || effect.subjects.is_none() {
            continue;
        }
        let granted: Option<i64> = sqlx::query_scalar(
            "SELECT 1 FROM plan_subjects WHERE plan_id = $1 AND effect_id = $2 AND subject_id = $3",
        )
        .bind(&plan.preview.plan_id)
        .bind(plan.rows_of(&effect.id))
        .bind(person)
        .fetch_optional(&mut *conn)
        .await?;
        if granted.is_some() {
            return Ok(Some(format!(
                "The plan grants access to {person}, who is this approver (the grantee); someone \
                 else must decide it."
            )));
        }
    }
    decided_already(conn, approver, plan, (Some(person), own_standing)).await
}

/// Whether `person` decided `plan` under another approver account, or (with `own_standing`) this
/// approver's standing approval approves it already: one query for both.
async fn decided_already(
    conn: &mut AnyConnection,
    approver: &Approver,
    plan: &StoredPlan,
    (person, own_standing): (Option<&str>, bool),
) -> Result<Option<String>, sqlx::Error> {
    let found: Option<(String, Option<String>)> = sqlx::query_as(
        "SELECT d.approver_id, d.standing_id FROM decisions d
         JOIN approvers a ON a.id = d.approver_id
         WHERE d.plan_id = $1 AND d.withdrawn_at IS NULL
           AND ((a.user_id = $2 AND a.id <> $3)
                OR ($4 = 1 AND a.id = $3 AND d.standing_id IS NOT NULL))
         LIMIT 1",
    )
    .bind(&plan.preview.plan_id)
    .bind(person)
    .bind(&approver.id)
    .bind(i64::from(own_standing))
    .fetch_optional(&mut *conn)
    .await?;
    Ok(found.map(|(other, standing)| match standing {
        Some(id) if other == approver.id => format!(
            "Your standing approval {id} approves this plan already: one person, one approval."
        ),
        _ => format!(
            "{} already decided this plan as approver {other}: one person, one decision.",
            person.unwrap_or(&approver.id)
        ),
    }))
}
