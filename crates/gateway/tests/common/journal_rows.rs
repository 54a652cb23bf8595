//! What an execution journal says the database must now hold differently, as the lines of
//! [`world_diff::diff`]: each journal entry read as the rows its effect type writes, with the
//! values it names, and the revision of every resource written moved by one.

use std::collections::BTreeSet;

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use countersign_proto::Credits;
use rust_decimal::Decimal;
use serde_json::{json, Map, Value};

use countersign_demo_world::table_of;

use super::world_diff::{key, row_line, update_line, Rows};

/// The world as the journal leaves it, given the plan, the world `before` and `after` (read for
/// what no journal can know ahead: an item's creation time, an address) and the credits charged.
pub fn expected(plan: &Value, journal: &[Value], before: &Rows, charged: &str) -> BTreeSet<String> {
    let params = &plan["request"]["params"];
    let param = |name: &str| params[name].as_str().unwrap_or_default().to_owned();
    let mut lines = BTreeSet::new();
    let mut written = BTreeSet::new();
    for entry in journal {
        let resource = entry["resource"].as_str().unwrap();
        let kind = entry["type"].as_str().unwrap();
        let subjects: Vec<&str> = entry["subjects"]
            .as_array()
            .map(|s| s.iter().map(|v| v.as_str().unwrap()).collect())
            .unwrap_or_default();
        let changes: Vec<&Value> = entry["changes"]
            .as_array()
            .map(|c| c.iter().collect())
            .unwrap_or_default();
        let change = |path: &str| {
            let c = changes
                .iter()
                .find(|c| c["path"] == path)
                .unwrap_or_else(|| {
                    panic!("{kind} journals no change of {path}: {entry}");
                });
            (c["before"].clone(), c["after"].clone())
        };
        match kind {
            "document_created" => {
                let mut row = Map::new();
                row.insert("filename".into(), change("/filename").1);
                row.insert("size_bytes".into(), change("/size_bytes").1);
                row.insert("project_id".into(), json!(param("project")));
                row.insert("mime_type".into(), json!(param("mime_type")));
                lines.insert(row_line('+', "documents", &row));
            }
            "storage_used" => {
                written.insert(resource.to_owned());
            }
            "setting_changed" => {
                let project = param("project");
                for column in ["retention_days", "retention_note"] {
                    if let Some(c) = changes.iter().find(|c| c["path"] == format!("/{column}")) {
                        lines.insert(update_line(
                            "projects",
                            &key(&project),
                            column,
                            &c["before"],
                            &c["after"],
                        ));
                    }
                }
                written.insert(resource.to_owned());
            }
            "expiry_recalculated" => {
                let days = params["retention_days"].as_i64().unwrap();
                for item in subjects {
                    let row = &before["project_items"][&key(item)];
                    let created: DateTime<Utc> =
                        row["created_at"].as_str().unwrap().parse().unwrap();
                    let expires =
                        (created + Duration::days(days)).to_rfc3339_opts(SecondsFormat::Secs, true);
                    if row["expires_at"] != json!(expires) {
                        lines.insert(update_line(
                            "project_items",
                            &key(item),
                            "expires_at",
                            &row["expires_at"],
                            &json!(expires),
                        ));
                    }
                }
            }
            "role_granted" => {
                let project = param("project");
                for user in subjects {
                    let (_, role) = change(&format!("/members/{user}/role"));
                    let row = json!({"project_id": project, "role": role, "user_id": user});
                    lines.insert(row_line('+', "project_members", row.as_object().unwrap()));
                }
                written.insert(format!("projects/{project}"));
            }
            "seat_consumed" => {
                let (was, now) = change("/used");
                lines.insert(update_line("seat_pools", &key("org"), "used", &was, &now));
                written.insert(resource.to_owned());
            }
            "quota_changed" => {
                let (was, now) = change("/quota_bytes");
                let quota = param("quota");
                lines.insert(update_line(
                    "storage_quotas",
                    &key(&quota),
                    "quota_bytes",
                    &was,
                    &now,
                ));
                written.insert(resource.to_owned());
            }
            "uploads_blocked" | "uploads_unblocked" => {
                let now = json!(i64::from(kind == "uploads_blocked"));
                for project in subjects {
                    let was = &before["projects"][&key(project)]["uploads_blocked"];
                    lines.insert(update_line(
                        "projects",
                        &key(project),
                        "uploads_blocked",
                        was,
                        &now,
                    ));
                }
            }
            "direct_membership_removed" => {
                let group = param("group");
                for user in subjects {
                    let row = json!({"group_id": group, "user_id": user});
                    lines.insert(row_line('-', "group_members", row.as_object().unwrap()));
                }
                written.insert(resource.to_owned());
                // The groups it is nested in change their members too: their plans go stale.
                written.extend(
                    ancestors(before, &group)
                        .into_iter()
                        .map(|g| format!("groups/{g}")),
                );
            }
            "access_retained_via_nested_group" => {}
            _ if kind.ends_with("_entitlement_removed") => {
                let entitlement = resource.strip_prefix("entitlements/").unwrap();
                for user in subjects {
                    let row = json!({"entitlement_id": entitlement, "user_id": user});
                    lines.insert(row_line(
                        '-',
                        "entitlement_holders",
                        row.as_object().unwrap(),
                    ));
                }
                written.insert(resource.to_owned());
            }
            "notification_queued" | "invite_email_sent" => {
                for user in subjects {
                    let address = &before["users"][&key(user)]["email"];
                    let row = json!({"plan_id": plan["plan_id"], "recipient": address,
                                     "state": "pending", "user_id": user});
                    lines.insert(row_line('+', "email_outbox", row.as_object().unwrap()));
                }
            }
            other => panic!("no rows known for the effect type {other}: teach journal_rows.rs"),
        }
    }
    for resource in written {
        let Some((table, id)) = table_of(&resource) else {
            continue;
        };
        let was = &before[table][&key(id)]["revision"];
        lines.insert(update_line(
            table,
            &key(id),
            "revision",
            was,
            &json!(was.as_i64().unwrap() + 1),
        ));
    }
    let charged: Decimal = charged.parse().unwrap();
    if !charged.is_zero() {
        let agent = plan["caller"]["agent_id"].as_str().unwrap();
        let spent = |was: Decimal| json!(Credits::new(was + charged).to_string());
        match before["wallets"].get(&key(agent)) {
            Some(wallet) => {
                let was = &wallet["spent_credits"];
                let now = spent(was.as_str().unwrap().parse().unwrap());
                lines.insert(update_line(
                    "wallets",
                    &key(agent),
                    "spent_credits",
                    was,
                    &now,
                ));
            }
            // A wallet is written first when something is charged, at the documented limit.
            None => {
                let row = json!({"agent_id": agent, "limit_credits": "50.00",
                                 "spent_credits": spent(Decimal::ZERO)});
                lines.insert(row_line('+', "wallets", row.as_object().unwrap()));
            }
        }
    }
    lines
}

/// The groups `group` is nested in, at any depth, as the world `before` nests them.
fn ancestors(before: &Rows, group: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut frontier = vec![group.to_owned()];
    while let Some(child) = frontier.pop() {
        for row in before["group_nesting"].values() {
            let parent = row["parent_id"].as_str().unwrap();
            if row["child_id"] == child.as_str()
                && parent != group
                && found.insert(parent.to_owned())
            {
                frontier.push(parent.to_owned());
            }
        }
    }
    found
}

/// Holds what an execution wrote (`before` → `after`) against its journal: nothing else, nothing
/// less, every value as journaled.
pub fn assert_nothing_else(
    plan: &Value,
    journal: &[Value],
    before: &Rows,
    after: &Rows,
    charged: &str,
) {
    let wrote = super::world_diff::diff(before, after);
    let said = expected(plan, journal, before, charged);
    let unsaid: Vec<_> = wrote.difference(&said).collect();
    let undone: Vec<_> = said.difference(&wrote).collect();
    assert!(
        unsaid.is_empty() && undone.is_empty(),
        "{}: written but not journaled {unsaid:#?}; journaled but not written {undone:#?}",
        plan["capability_id"]
    );
}
