use chrono::{DateTime, Utc};
use serde_json::json;

use super::*;
use crate::review::queue::NoContext;
use crate::wire::CREDITS;

fn summary(id: &str, minutes: u32, capability: &str, credits: &str, risk: &[&str]) -> PlanSummary {
    serde_json::from_value(json!({
        "plan_id": id, "plan_digest": "sha256:00", "capability_id": capability,
        "title": format!("Title of {id}"),
        "caller": {"agent_id": "agt_ops"}, "created_at": "2026-12-05T10:00:00Z",
        "expires_at": format!("2026-12-05T10:{minutes:02}:00Z"), "status": "pending_approval",
        "estimated_cost": {"amount_min": "0", "amount_max": credits, "currency": "credits"},
        "effect_counts": {"direct": 1, "derived": 0}, "subjects_total": minutes,
        "validation_counts": {"error": 0, "warning": 0, "info": 0}, "risk": risk,
        "approvals": {"required": 1, "received": []}
    }))
    .unwrap()
}

fn now() -> DateTime<Utc> {
    "2026-12-05T10:00:00Z".parse().unwrap()
}

/// Plans `p00` … `p{n-1}`, each expiring a minute after the one before, in shuffled order.
fn queue(n: u32) -> Vec<PlanSummary> {
    let mut plans: Vec<PlanSummary> = (0..n)
        .map(|i| {
            let capability = if i % 3 == 0 {
                "docs.upload"
            } else {
                "projects.rename"
            };
            let risk: &[&str] = if i % 4 == 0 { &["bulk"] } else { &[] };
            summary(
                &format!("p{i:02}"),
                10 + i,
                capability,
                &format!("{}.00", i % 5),
                risk,
            )
        })
        .collect();
    plans.reverse();
    plans
}

fn ids(items: &[QueueItem]) -> Vec<&str> {
    items.iter().map(|i| i.plan_id.as_str()).collect()
}

/// Snoozes some plans until a time after `now()`, and says it.
struct Snoozed(Vec<&'static str>);

impl RowContext for Snoozed {
    fn gist(&self, plan_id: &str) -> Option<String> {
        (plan_id == "p07").then(|| "prj_184 retention days 30 → 14".to_owned())
    }
    fn queued(&self, _: &str) -> bool {
        false
    }
    fn snoozed_until(&self, plan_id: &str) -> Option<DateTime<Utc>> {
        self.0
            .contains(&plan_id)
            .then(|| "2026-12-05T10:30:00Z".parse().unwrap())
    }
}

#[test]
fn a_window_is_the_rows_in_view_of_the_whole_list_soonest_expiry_first() {
    let plans = queue(40);
    let ordered = Ordered::new(&plans, &QueueQuery::default(), &NoContext, now());
    let rows = ordered.rows(&plans, &NoContext, 10, 5);
    assert_eq!(ids(&rows), ["p10", "p11", "p12", "p13", "p14"]);
    assert_eq!((ordered.counts.matching, ordered.counts.all), (40, 40));
    assert_eq!(
        ordered.rows(&plans, &NoContext, 38, 10).len(),
        2,
        "cut at the end"
    );
    assert!(ordered.rows(&plans, &NoContext, 400, 10).is_empty());
    assert_eq!(
        ordered.counts.capabilities,
        ["docs.upload", "projects.rename"]
    );
    // 0+1+2+3+4 credits, eight times.
    assert_eq!(ordered.counts.total_credits, "80.00");
}

#[test]
fn the_query_filters_sorts_and_counts_as_the_window_shows_it() {
    let plans = queue(40);
    let context = Snoozed(vec!["p00", "p04"]);
    let count =
        |o: &Ordered, f: Facet| o.counts.facets.iter().find(|c| c.facet == f).unwrap().count;

    let bulk = QueueQuery {
        facet: Facet::Bulk,
        ..QueueQuery::default()
    };
    let ordered = Ordered::new(&plans, &bulk, &context, now());
    // Every fourth plan is bulk; two of them are snoozed and leave the list and the counts.
    assert_eq!(ordered.counts.matching, 8);
    assert_eq!(ids(&ordered.rows(&plans, &context, 0, 2)), ["p08", "p12"]);
    assert_eq!(count(&ordered, Facet::Bulk), 8);
    assert_eq!(count(&ordered, Facet::Risky), 8);
    assert_eq!(count(&ordered, Facet::All), 38);
    assert_eq!(count(&ordered, Facet::Snoozed), 2);
    assert_eq!(ordered.counts.all, 40, "every pending plan, snoozed or not");

    let snoozed = QueueQuery {
        facet: Facet::Snoozed,
        ..QueueQuery::default()
    };
    let ordered = Ordered::new(&plans, &snoozed, &context, now());
    assert_eq!(ids(&ordered.rows(&plans, &context, 0, 9)), ["p00", "p04"]);

    let words = QueueQuery {
        text: "  RETENTION  days ".to_owned(),
        ..QueueQuery::default()
    };
    let ordered = Ordered::new(&plans, &words, &context, now());
    assert_eq!(
        ids(&ordered.rows(&plans, &context, 0, 9)),
        ["p07"],
        "the gist read is searched"
    );

    let credits = QueueQuery {
        capability: "docs.upload".to_owned(),
        sort: Sort::Credits,
        ..QueueQuery::default()
    };
    let ordered = Ordered::new(&plans, &credits, &NoContext, now());
    let rows = ordered.rows(&plans, &NoContext, 0, 4);
    // docs.upload is every third plan; 4 credits first, the soonest expiry first among equals.
    assert_eq!(ids(&rows), ["p09", "p24", "p39", "p03"]);
    assert!(rows
        .iter()
        .all(|r| r.capability_id == "docs.upload" && r.currency == CREDITS));

    let subjects = QueueQuery {
        sort: Sort::Subjects,
        ..QueueQuery::default()
    };
    let ordered = Ordered::new(&plans, &subjects, &NoContext, now());
    assert_eq!(ids(&ordered.rows(&plans, &NoContext, 0, 2)), ["p39", "p38"]);
}

#[test]
fn a_pinned_plan_is_found_wherever_it_is_and_said_where_it_shows() {
    let plans = queue(40);
    let bulk = QueueQuery {
        facet: Facet::Bulk,
        ..QueueQuery::default()
    };
    let ordered = Ordered::new(&plans, &bulk, &NoContext, now());
    let pins = ["p36", "p05", "gone", "p36"].map(str::to_owned);
    let pinned = ordered.pinned(&plans, &NoContext, &pins);
    let found: Vec<(&str, Option<u32>)> = pinned
        .iter()
        .map(|p| (p.item.plan_id.as_str(), p.at))
        .collect();
    assert_eq!(found, [("p36", Some(9)), ("p05", None)]);
}

#[test]
fn a_range_is_the_plans_between_two_in_the_list_in_its_order() {
    let plans = queue(40);
    let ordered = Ordered::new(&plans, &QueueQuery::default(), &NoContext, now());
    assert_eq!(
        ordered.between(&plans, "p12", "p09"),
        ["p09", "p10", "p11", "p12"]
    );
    assert_eq!(ordered.between(&plans, "p12", "p12"), ["p12"]);
    assert!(ordered.between(&plans, "p12", "gone").is_empty());
}

fn row(plan_id: &str, approvals: u32) -> QueueItem {
    let mut item = crate::review::queue::queue_item(&summary(plan_id, 10, "c", "0.01", &[]));
    item.approvals_received = approvals;
    item
}

/// A record of `items` as sent to a window at `generation`.
fn sent(generation: u64, items: &[QueueItem]) -> SentRows {
    let mut sent = SentRows::default();
    sent.change_to(generation, items);
    sent
}

#[test]
fn a_change_carries_only_the_rows_that_moved_each_with_its_place() {
    let mut was = sent(4, &[row("a", 0), row("b", 0), row("c", 0)]);
    let change = was.change_to(5, &[row("a", 0), row("b", 1), row("d", 0)]);
    assert_eq!(change.from, 4);
    assert_eq!(
        change.upserted,
        vec![
            PlacedRow {
                at: 1,
                item: row("b", 1)
            },
            PlacedRow {
                at: 2,
                item: row("d", 0)
            },
        ]
    );
    assert_eq!(change.removed, vec!["c".to_owned()]);
    let again = was.change_to(6, &[row("d", 0)]);
    assert_eq!(again.from, 5, "the next change starts where this one ended");
    assert!(again.upserted.is_empty());
    assert_eq!(again.removed, vec!["a".to_owned(), "b".to_owned()]);
}

#[test]
fn an_unchanged_window_crosses_as_no_rows() {
    let rows = [row("a", 0), row("b", 1)];
    let change = sent(7, &rows).change_to(8, &rows);
    assert!(change.upserted.is_empty() && change.removed.is_empty());
}

#[test]
fn a_change_to_any_field_of_a_row_sends_the_row() {
    let old = [row("a", 0)];
    let mut gist = row("a", 0);
    gist.gist = "prj_184 retention days 30 → 14".to_owned();
    let mut queued = row("a", 0);
    queued.queued = true;
    for changed in [gist, queued] {
        let change = sent(1, &old).change_to(2, std::slice::from_ref(&changed));
        assert_eq!(
            change.upserted,
            vec![PlacedRow {
                at: 0,
                item: changed
            }]
        );
    }
}
