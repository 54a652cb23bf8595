//! Plans: turning an evaluation into a stored preview, and reading plans back with their status.

use chrono::{DateTime, Duration, Utc};
use countersign_proto::approvals::{
    Amendment, Approvals, EffectCounts, MovedRevision, PlanRecord, PlanStatus, PlanSummary,
    PlanWallet, Staleness, ValidationCounts, ValidationSubjects,
};
use countersign_proto::digest::{plan_digest, request_digest};
use countersign_proto::plan::{Caller, PlanRequest, Preview, ReadRevision, Severity, Validation};
use countersign_proto::risk::{default_high_cost_threshold, risk_flags};
use countersign_proto::{ErrorCode, INTERFACE_VERSION};
use rust_decimal::Decimal;
use serde_json::{json, Value};
use sqlx::AnyConnection;

use countersign_pack::{Planned, Subject};

pub use super::moved::{moved, Observed};

use crate::accounts::Agent;
use crate::approval::requirement::Requirement;
use crate::plan::summaries::{SubjectSet, SubjectSummaries};
use crate::registry::{Capability, Registry};
use crate::store::Dialect;
use crate::{ids, ApiError, ApiResult};

/// How long a plan stays executable (PROTOCOL section 4).
pub const PLAN_LIFETIME: Duration = Duration::minutes(15);

use crate::plan::stored_plan;
pub use crate::plan::stored_plan::StoredPlan;

/// A new plan's id.
pub fn new_id() -> String {
    ids::random_id("plan_", 8)
}

/// The ids a new preview is made under: its plan's, and its preview audit row's.
pub struct PreviewIds<'a> {
    pub plan_id: String,
    pub audit_id: &'a str,
}

/// Turns an evaluation into a preview: ids, times, blocking checks, subjects, the request's
/// digest. Whether it waits for people and its digest follow from its policy ([`seal`]).
pub fn build_preview(
    capability: Capability,
    agent: &Agent,
    params: &Value,
    expected: Option<&std::collections::BTreeMap<String, String>>,
    mut planned: Planned,
    ids: PreviewIds<'_>,
    summaries: &SubjectSummaries,
) -> ApiResult<Preview> {
    let describe = capability.describe();
    if let Some(expected) = expected {
        planned
            .validation
            .extend(version_conflicts(expected, &planned.read_revisions));
    }
    planned
        .validation
        .sort_by_key(|v| (v.severity, !v.blocks_execution));
    let created_at = ids::now();
    let preview = Preview {
        interface_version: INTERFACE_VERSION.to_owned(),
        mode: "preview".to_owned(),
        valid: true,
        executable: !planned.validation.iter().any(|v| v.blocks_execution),
        capability_id: capability.id().to_owned(),
        resolved_version: describe.version.clone(),
        audit_id: ids.audit_id.to_owned(),
        plan_id: ids.plan_id,
        created_at,
        expires_at: created_at + PLAN_LIFETIME,
        caller: Caller {
            agent_id: agent.id.clone(),
            on_behalf_of: agent.on_behalf_of.clone(),
        },
        request: PlanRequest {
            params: params.clone(),
        },
        read_revisions: planned.read_revisions,
        would_require_approval: false,
        estimated_cost: planned.estimated_cost,
        billing: describe.billing,
        effects: planned
            .effects
            .into_iter()
            .map(|planned| {
                let mut effect = planned.effect;
                if !planned.subjects.is_empty() {
                    effect.subjects = Some(summaries.of_effect(&effect.id, &planned.subjects));
                }
                effect
            })
            .collect(),
        validation: planned.validation,
        assumptions: planned.assumptions,
        request_digest: request_digest(capability.id(), params).map_err(anyhow::Error::from)?,
        plan_digest: String::new(),
    };
    Ok(preview)
}

/// Sets whether `preview` waits for people, as `requirement` says, and binds it with its digest.
pub fn seal(preview: &mut Preview, requirement: &Requirement) -> ApiResult<()> {
    preview.would_require_approval = !requirement.rules.is_empty();
    preview.plan_digest =
        plan_digest(&serde_json::to_value(&*preview)?).map_err(anyhow::Error::from)?;
    Ok(())
}

fn version_conflicts(
    expected: &std::collections::BTreeMap<String, String>,
    read: &[ReadRevision],
) -> Vec<Validation> {
    expected
        .iter()
        .filter_map(|(resource, want)| {
            let actual = read.iter().find(|r| &r.resource == resource);
            let found = actual.map_or("not read by this request", |r| r.revision.as_str());
            (actual.map(|r| &r.revision) != Some(want)).then(|| Validation {
                severity: Severity::Error,
                code: "version_conflict".to_owned(),
                path: Some("/expected_revisions".to_owned()),
                message: format!("{resource} is at revision {found}, not revision {want}."),
                blocks_execution: true,
                repair: Some("Fetch the current resource and create a new preview.".to_owned()),
            })
        })
        .collect()
}

/// Enters what plan `plan_id` read in the index a write consults for the plans it makes stale
/// (`queue::mark_stale_readers`). Only a plan listed for people is in it, from the write that
/// lists it until a write marks it stale or it closes (one found stale otherwise keeps its reads
/// until it closes; the lookup passes it over): a plan nobody waits on is judged when it runs,
/// its reads read again there, and thousands of them must not make every write read them back.
pub async fn index_reads(
    conn: &mut AnyConnection,
    plan_id: &str,
    reads: &[ReadRevision],
) -> Result<(), sqlx::Error> {
    for read in reads {
        sqlx::query(
            "INSERT INTO plan_reads (resource, plan_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        )
        .bind(&read.resource)
        .bind(plan_id)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// Subject rows per SQLite INSERT: five parameters each, under its limit of 32766.
const SUBJECT_BATCH: usize = 5000;

/// A plan's subject sets as [`insert`] stores them: written now, or staged before under its id.
pub struct SubjectRows<'a> {
    pub sets: &'a [SubjectSet],
    pub summaries: &'a SubjectSummaries,
    pub staged: bool,
}

/// What a plan is stored with beside its preview.
pub struct Stored<'a> {
    pub named: &'a [ValidationSubjects],
    pub requirement: &'a Requirement,
    pub policy_digest: &'a str,
    pub supersedes: Option<&'a str>,
    pub amendment: Option<&'a Amendment>,
    /// What the queue lists of it, when that is known as it is stored: the row is then written
    /// once, not inserted and rewritten (a 1 MB file's plan is a 3 MB row).
    pub summary: Option<&'a PlanSummary>,
}

/// Stores a preview, the resources it read, its full subject sets (unless they were staged under
/// its id) and the items its validation names.
pub async fn insert(
    conn: &mut AnyConnection,
    preview: &Preview,
    subjects: SubjectRows<'_>,
    stored: Stored<'_>,
) -> ApiResult<()> {
    let Stored {
        named,
        requirement,
        policy_digest,
        supersedes,
        amendment,
        summary,
    } = stored;
    let status = if preview.would_require_approval {
        PlanStatus::PendingApproval
    } else {
        PlanStatus::Approved
    };
    // Stored only while the store's policy in force is the one it was evaluated under: an
    // instance started with another policy meanwhile (on PostgreSQL) is in force now, and this
    // one refuses rather than store plans under rules the others do not apply.
    let inserted = sqlx::query(
        "INSERT INTO plans (id, capability_id, agent_id, plan_digest, preview, status,
         required_approvals, created_at, expires_at, supersedes, subject_rows, subjects_distinct,
         validation_subjects, rules, policy_digest, escalates_at, amendment, summary,
         counted_status, shared_subjects)
         SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
                $19, $20
         WHERE EXISTS (SELECT 1 FROM policy_state WHERE id = 1 AND digest = $15)",
    )
    .bind(&preview.plan_id)
    .bind(&preview.capability_id)
    .bind(&preview.caller.agent_id)
    .bind(&preview.plan_digest)
    .bind(serde_json::to_string(preview)?)
    .bind(status_text(status))
    .bind(i64::from(requirement.required()))
    .bind(ids::to_text(preview.created_at))
    .bind(ids::to_text(preview.expires_at))
    .bind(supersedes)
    .bind(subjects.summaries.rows as i64)
    .bind(subjects.summaries.distinct as i64)
    .bind(if named.is_empty() {
        None
    } else {
        Some(serde_json::to_string(named)?)
    })
    .bind(serde_json::to_string(requirement)?)
    .bind(policy_digest)
    .bind(
        requirement
            .next_escalation(preview.created_at, None)
            .filter(|_| status == PlanStatus::PendingApproval)
            .map(ids::to_text),
    )
    .bind(amendment.map(serde_json::to_string).transpose()?)
    .bind(summary.map(serde_json::to_string).transpose()?)
    .bind(summary.map(|_| status_text(status)))
    .bind(stored_plan::shared_text(&subjects.summaries.shared)?)
    .execute(&mut *conn)
    .await?;
    if inserted.rows_affected() == 0 {
        return Err(ApiError::new(
            ErrorCode::PolicyError,
            format!(
                "This gateway evaluates approval policy {policy_digest}, which is no longer the                  one in force in its store: another instance started with another policy.                  Nothing was stored; restart this instance with the policy in force."
            ),
        ));
    }
    if summary.is_some() {
        index_reads(conn, &preview.plan_id, &preview.read_revisions).await?;
    }
    if subjects.staged {
        // The staged rows are the plan's from this commit on: their marker goes.
        sqlx::query("DELETE FROM subject_staging WHERE plan_id = $1")
            .bind(&preview.plan_id)
            .execute(&mut *conn)
            .await?;
    } else {
        for (effect_id, set) in subjects.summaries.stored(subjects.sets) {
            insert_subjects(conn, &preview.plan_id, effect_id, set).await?;
        }
    }
    Ok(())
}

/// An effect's whole subject set, in batches: on SQLite as multi-row INSERTs with anonymous `?`s
/// (SQLite looks a named parameter up by a linear search, which makes binding thousands of them
/// quadratic); on PostgreSQL each batch one JSON array that the database unnests.
pub(crate) async fn insert_subjects(
    conn: &mut AnyConnection,
    plan_id: &str,
    effect_id: &str,
    subjects: &[Subject],
) -> Result<(), sqlx::Error> {
    // A detail of `null` is none: a page leaves it out, as `SubjectItem` serialises.
    let detail = |s: &Subject| {
        s.detail
            .as_ref()
            .filter(|d| !d.is_null())
            .map(Value::to_string)
    };
    match Dialect::of(conn) {
        Dialect::Sqlite => {
            for batch in subjects.chunks(SUBJECT_BATCH) {
                let sql = format!(
                    "INSERT INTO plan_subjects (plan_id, effect_id, subject_id, label, detail)
                     VALUES {}",
                    vec!["(?, ?, ?, ?, ?)"; batch.len()].join(", ")
                );
                let mut insert = sqlx::query(&sql);
                for subject in batch {
                    insert = insert
                        .bind(plan_id)
                        .bind(effect_id)
                        .bind(&subject.id)
                        .bind(&subject.label)
                        .bind(detail(subject));
                }
                insert.execute(&mut *conn).await?;
            }
        }
        Dialect::Postgres => {
            for batch in subjects.chunks(SUBJECT_BATCH * 10) {
                let rows: Vec<Value> = batch
                    .iter()
                    .map(|s| json!([s.id, s.label, detail(s)]))
                    .collect();
                sqlx::query(
                    "INSERT INTO plan_subjects (plan_id, effect_id, subject_id, label, detail)
                     SELECT $1, $2, s ->> 0, s ->> 1, s ->> 2
                     FROM jsonb_array_elements($3::jsonb) AS s",
                )
                .bind(plan_id)
                .bind(effect_id)
                .bind(Value::Array(rows).to_string())
                .execute(&mut *conn)
                .await?;
            }
        }
    }
    Ok(())
}

pub fn status_text(status: PlanStatus) -> String {
    match serde_json::to_value(status) {
        Ok(Value::String(s)) => s,
        _ => "failed".to_owned(),
    }
}

/// A plan that can no longer be decided or run: the statuses `quotas::CLOSED` names in SQL.
pub fn is_closed(status: PlanStatus) -> bool {
    match status {
        PlanStatus::Executed
        | PlanStatus::Rejected
        | PlanStatus::Superseded
        | PlanStatus::Expired
        | PlanStatus::Failed => true,
        PlanStatus::PendingApproval | PlanStatus::Approved | PlanStatus::Stale => false,
    }
}

pub fn parse_status(text: &str) -> PlanStatus {
    serde_json::from_value(Value::String(text.to_owned())).unwrap_or(PlanStatus::Failed)
}

pub async fn load(conn: &mut AnyConnection, plan_id: &str) -> ApiResult<Option<StoredPlan>> {
    type Row = (
        String,
        String,
        String,
        i64,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<i64>,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
    );
    let row: Option<Row> = sqlx::query_as(
        "SELECT preview, agent_id, status, required_approvals, execution, supersedes, superseded_by,
                subjects_distinct, validation_subjects, rules, amendment, shared_subjects
         FROM plans WHERE id = $1",
    )
    .bind(plan_id)
    .fetch_optional(&mut *conn)
    .await?;
    let Some((
        preview,
        agent_id,
        status,
        required_approvals,
        execution,
        supersedes,
        superseded_by,
        subjects_distinct,
        validation_subjects,
        rules,
        amendment,
        shared,
    )) = row
    else {
        return Ok(None);
    };
    let required_approvals = u32::try_from(required_approvals).unwrap_or(u32::MAX);
    let requirement = match rules {
        Some(rules) => serde_json::from_str(&rules)?,
        None => Requirement::legacy(required_approvals),
    };
    Ok(Some(StoredPlan {
        preview: serde_json::from_str(&preview)?,
        agent_id,
        status: parse_status(&status),
        required_approvals,
        requirement,
        execution: execution.map(|e| serde_json::from_str(&e)).transpose()?,
        supersedes,
        superseded_by,
        subjects_distinct: subjects_distinct.map(|n| n as u64),
        validation_subjects: validation_subjects
            .map(|v| serde_json::from_str(&v))
            .transpose()?
            .unwrap_or_default(),
        amendment: amendment.map(|a| serde_json::from_str(&a)).transpose()?,
        shared_subjects: shared
            .map(|s| serde_json::from_str(&s))
            .transpose()?
            .unwrap_or_default(),
    }))
}

pub async fn set_status(
    conn: &mut AnyConnection,
    plan_id: &str,
    status: PlanStatus,
) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE plans SET status = $1 WHERE id = $2")
        .bind(status_text(status))
        .bind(plan_id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// The distinct subjects of `plan`; for a plan stored before they were counted, whose rows are
/// gone, the largest effect's, which is at least right about the size.
pub fn subjects_total(plan: &StoredPlan) -> u64 {
    plan.subjects_distinct.unwrap_or_else(|| {
        plan.preview
            .effects
            .iter()
            .filter_map(|e| e.subjects.as_ref())
            .map(|s| s.total)
            .max()
            .unwrap_or(0)
    })
}

pub fn effective_status(
    plan: &StoredPlan,
    now: DateTime<Utc>,
    moved: &[MovedRevision],
) -> PlanStatus {
    match plan.status {
        PlanStatus::PendingApproval | PlanStatus::Approved | PlanStatus::Stale => {
            if now > plan.preview.expires_at {
                PlanStatus::Expired
            } else if !moved.is_empty() {
                PlanStatus::Stale
            } else {
                plan.status
            }
        }
        other => other,
    }
}

pub async fn record(
    conn: &mut AnyConnection,
    registry: &'static Registry,
    plan: StoredPlan,
) -> ApiResult<PlanRecord> {
    record_with(conn, registry, plan, Known::default()).await
}

/// What a caller has just read of a plan in this transaction, which [`record_with`] then does
/// not read again: each read is a round trip to a PostgreSQL server.
#[derive(Default)]
pub struct Known {
    /// Its decisions ([`decisions`]).
    pub approvals: Option<Approvals>,
    /// Its read revisions that moved ([`moved`]).
    pub moved: Option<Vec<MovedRevision>>,
}

/// As [`record`], with what the caller already knows of the plan.
pub async fn record_with(
    conn: &mut AnyConnection,
    registry: &'static Registry,
    plan: StoredPlan,
    known: Known,
) -> ApiResult<PlanRecord> {
    // Staleness concerns only a plan that may still be decided or run: an executed plan's own
    // writes moved what it read, and that is its result, not staleness.
    let open = matches!(
        plan.status,
        PlanStatus::PendingApproval | PlanStatus::Approved | PlanStatus::Stale
    );
    let moved = match known.moved {
        _ if !open => Vec::new(),
        Some(moved) => moved,
        None => moved(conn, registry, &plan.preview.read_revisions, None).await?,
    };
    let status = effective_status(&plan, ids::now(), &moved);
    let approvals = match known.approvals {
        Some(known) => known,
        None => crate::approval::approvals::of(conn, &plan).await?,
    };
    let wallet = crate::execution::wallet::load(conn, &plan.agent_id).await?;
    let mut execution = plan.execution;
    if let Some(Value::Object(done)) = &mut execution {
        done.insert(
            "deliveries".to_owned(),
            crate::mail::deliveries(conn, &plan.preview.plan_id).await?,
        );
    }
    Ok(PlanRecord {
        // What moved is reported while it is why the plan is held back; an expired plan is
        // over whatever moved under it.
        stale: (status == PlanStatus::Stale).then_some(Staleness { moved }),
        status,
        approvals,
        supersedes: plan.supersedes,
        superseded_by: plan.superseded_by,
        execution,
        title: Some(registry.title(&plan.preview.capability_id)),
        wallet: Some(PlanWallet {
            agent_id: plan.agent_id,
            remaining_credits: wallet.check(Decimal::ZERO).remaining_credits,
            limit_credits: wallet.limit,
        }),
        validation_subjects: plan.validation_subjects,
        eligibility: None,
        amendment: plan.amendment,
        plan: plan.preview,
    })
}

/// What the queue lists of a plan; `subjects_total` is the distinct count kept with the plan.
pub fn summary(
    registry: &'static Registry,
    record: &PlanRecord,
    subjects_total: u64,
) -> PlanSummary {
    let plan = &record.plan;
    let count = |s: Severity| plan.validation.iter().filter(|v| v.severity == s).count() as u32;
    PlanSummary {
        plan_id: plan.plan_id.clone(),
        plan_digest: plan.plan_digest.clone(),
        capability_id: plan.capability_id.clone(),
        title: registry.title(&plan.capability_id),
        caller: plan.caller.clone(),
        created_at: plan.created_at,
        expires_at: plan.expires_at,
        status: record.status,
        estimated_cost: plan.estimated_cost.clone(),
        effect_counts: EffectCounts {
            direct: plan.effects.iter().filter(|e| !e.derived).count() as u32,
            derived: plan.effects.iter().filter(|e| e.derived).count() as u32,
        },
        subjects_total,
        validation_counts: ValidationCounts {
            error: count(Severity::Error),
            warning: count(Severity::Warning),
            info: count(Severity::Info),
        },
        risk: risk_flags(plan, default_high_cost_threshold()),
        approvals: summary_approvals(&record.approvals),
    }
}

/// What a queue summary carries of a plan's approvals: its rules only when one of them names
/// who may meet it (teams or people, the requester's team left out, an escalation). Rules that
/// ask anyone tell a console nothing `required` and `received` do not about whose turn it is,
/// and a queue of 10,000 summaries would carry them all; the plan record keeps them.
fn summary_approvals(approvals: &Approvals) -> Approvals {
    match approvals.rules.iter().all(|s| s.rule.asks_anyone()) {
        true => Approvals {
            rules: Vec::new(),
            ..approvals.clone()
        },
        false => approvals.clone(),
    }
}
