//! Property tests over generated worlds (seed 004): for any world and filter, the preview selects
//! exactly what a model of the world says, and execution leaves exactly the previewed state.
//! Nesting shapes vary: chains, diamonds and cycles over five groups.

use std::collections::BTreeSet;

use crate::common::props::{cases, exec, ids, run, runtime, subject_ids};
use crate::common::Gateway;
use proptest::prelude::*;
use serde_json::{json, Value};

const EMPLOYMENT: [&str; 3] = ["contractor", "employee", "intern"];

#[derive(Debug, Clone)]
struct Person {
    employment: usize,
    direct: bool,
    nested: bool,
    /// In a group nested two levels down, which still carries the top group's access.
    deep: bool,
    on_call: bool,
}

fn people() -> impl Strategy<Value = Vec<Person>> {
    prop::collection::vec(
        (
            0..3usize,
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(|(employment, direct, nested, deep, on_call)| Person {
                employment,
                direct,
                nested,
                deep,
                on_call,
            }),
        0..40,
    )
}

/// The ids an effect of `plan` names, paged in full as an approver reads them; `None` when the
/// plan has no effect of that type. Identities, not totals: a plan that names the wrong people
/// in the right number must fail.
async fn subjects_of(
    gw: &Gateway,
    reader: &str,
    plan: &Value,
    effect_type: &str,
) -> Option<BTreeSet<String>> {
    let effect = plan["effects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == effect_type)?;
    let plan_id = plan["plan_id"].as_str().unwrap();
    let ids = gw
        .all_subjects(reader, plan_id, effect["id"].as_str().unwrap(), 7)
        .await;
    Some(ids.into_iter().collect())
}

async fn removal(world: Vec<Person>, employment: usize, only: Option<Vec<usize>>) {
    let gw = Gateway::bare().await;
    exec(
        &gw,
        "INSERT INTO groups (id, name, revision) VALUES
         ('grp_t', 'T', 1), ('grp_n', 'N', 1), ('grp_d', 'D', 1)",
    )
    .await;
    // t contains n contains d, and d contains t again: a cycle the queries must survive.
    exec(
        &gw,
        "INSERT INTO group_nesting VALUES ('grp_t', 'grp_n'), ('grp_n', 'grp_d'), ('grp_d', 'grp_t')",
    )
    .await;
    exec(
        &gw,
        "INSERT INTO entitlements VALUES ('pager', 'pager', 'grp_t', 1)",
    )
    .await;
    for (n, p) in world.iter().enumerate() {
        let id = format!("usr_{n:03}");
        exec(&gw, &format!("INSERT INTO users (id, name, email, employment) VALUES ('{id}', 'P{n}', '{id}@x', '{}')", EMPLOYMENT[p.employment])).await;
        if p.direct {
            exec(
                &gw,
                &format!("INSERT INTO group_members VALUES ('grp_t', '{id}')"),
            )
            .await;
        }
        if p.nested {
            exec(
                &gw,
                &format!("INSERT INTO group_members VALUES ('grp_n', '{id}')"),
            )
            .await;
        }
        if p.deep {
            exec(
                &gw,
                &format!("INSERT INTO group_members VALUES ('grp_d', '{id}')"),
            )
            .await;
        }
        if p.on_call {
            exec(
                &gw,
                &format!("INSERT INTO entitlement_holders VALUES ('pager', '{id}')"),
            )
            .await;
        }
    }
    let listed: Option<BTreeSet<String>> = only.map(|o| {
        o.into_iter()
            .filter(|n| *n < world.len())
            .map(|n| format!("usr_{n:03}"))
            .collect()
    });
    // The model: who the filter selects, who keeps access, who loses the pager.
    let selected: BTreeSet<String> = world
        .iter()
        .enumerate()
        .filter(|(_, p)| p.direct && p.employment == employment)
        .map(|(n, _)| format!("usr_{n:03}"))
        .filter(|id| listed.as_ref().is_none_or(|l| l.contains(id)))
        .collect();
    let is = |id: &String, f: fn(&Person) -> bool| f(&world[id[4..].parse::<usize>().unwrap()]);
    let retained: BTreeSet<String> = selected
        .iter()
        .filter(|id| is(id, |p| p.nested || p.deep))
        .cloned()
        .collect();
    let losing: BTreeSet<String> = selected
        .iter()
        .filter(|id| is(id, |p| p.on_call && !p.nested && !p.deep))
        .cloned()
        .collect();

    let mut filter = json!({"employment": EMPLOYMENT[employment]});
    if let Some(l) = &listed {
        filter["users"] = json!(l);
    }
    let plan = gw
        .preview(
            "groups.members.remove",
            json!({"group": "grp_t", "filter": filter}),
        )
        .await;
    let reader = gw.enroll("Reader").await;
    let named = |effect_type| subjects_of(&gw, &reader.token, &plan, effect_type);
    let expect = |set: &BTreeSet<String>| (!set.is_empty()).then(|| set.clone());
    assert_eq!(named("direct_membership_removed").await, expect(&selected));
    assert_eq!(
        named("access_retained_via_nested_group").await,
        expect(&retained)
    );
    assert_eq!(named("pager_entitlement_removed").await, expect(&losing));
    assert_eq!(
        plan["estimated_cost"]["amount_max"],
        format!("{}.{:02}", selected.len() / 100, selected.len() % 100)
    );

    let holders_before = ids(&gw, "SELECT user_id FROM entitlement_holders").await;
    let direct_before = ids(
        &gw,
        "SELECT user_id FROM group_members WHERE group_id = 'grp_t'",
    )
    .await;
    // A filter that selects nobody plans nothing, and nothing waits for anybody.
    assert_eq!(plan["would_require_approval"], !selected.is_empty());
    run(&gw, "groups.members.remove", &plan).await;

    let direct_after = ids(
        &gw,
        "SELECT user_id FROM group_members WHERE group_id = 'grp_t'",
    )
    .await;
    assert_eq!(
        direct_after,
        direct_before.difference(&selected).cloned().collect()
    );
    let holders_after = ids(&gw, "SELECT user_id FROM entitlement_holders").await;
    assert_eq!(
        holders_after,
        holders_before.difference(&losing).cloned().collect()
    );
    let mailed = ids(&gw, "SELECT user_id FROM email_outbox").await;
    assert_eq!(mailed, selected);
}

async fn retention(items: Vec<bool>, current: i64, wanted: i64) {
    let gw = Gateway::bare().await;
    exec(&gw, &format!("INSERT INTO projects (id, name, revision, retention_days, retention_note) VALUES ('prj_t', 'T', 1, {current}, 'Keep.\nx')")).await;
    for (n, held) in items.iter().enumerate() {
        exec(&gw, &format!(
            "INSERT INTO project_items VALUES ('itm_{n:02}', 'prj_t', 'Item', '2026-01-{:02}T00:00:00Z', '2026-01-01T00:00:00Z', {})",
            n % 28 + 1, *held as i32
        )).await;
    }
    let plan = gw
        .preview(
            "projects.settings.update",
            json!({"project": "prj_t", "retention_days": wanted}),
        )
        .await;
    let free = items.iter().filter(|h| !**h).count();
    let held = items.len() - free;
    if current == wanted {
        assert!(plan["effects"].as_array().unwrap().is_empty());
        assert_eq!(plan["validation"][0]["code"], "no_change");
        return;
    }
    let reader = gw.enroll("Reader").await;
    let recalculated: BTreeSet<String> = items
        .iter()
        .enumerate()
        .filter(|(_, held)| !**held)
        .map(|(n, _)| format!("itm_{n:02}"))
        .collect();
    assert_eq!(
        subjects_of(&gw, &reader.token, &plan, "expiry_recalculated").await,
        (free > 0).then_some(recalculated)
    );
    let warned = plan["validation"]
        .as_array()
        .unwrap()
        .iter()
        .any(|v| v["code"] == "legal_hold_items_skipped");
    assert_eq!(warned, held > 0);

    let before = ids(
        &gw,
        "SELECT id || expires_at FROM project_items WHERE legal_hold = 1",
    )
    .await;
    run(&gw, "projects.settings.update", &plan).await;
    assert_eq!(
        ids(
            &gw,
            "SELECT id || expires_at FROM project_items WHERE legal_hold = 1"
        )
        .await,
        before
    );
    let wrong: i64 = sqlx::query_scalar(&format!(
        "SELECT COUNT(*) FROM project_items WHERE legal_hold = 0 AND expires_at != {}",
        gw.state.store.dialect().days_after("created_at", "$1")
    ))
    .bind(wanted)
    .fetch_one(gw.state.store.pool())
    .await
    .unwrap();
    assert_eq!(wrong, 0);
}

/// A nesting graph over `grp_g0` (the group a removal targets) and four more groups: any edges,
/// so chains, diamonds and cycles (back to `grp_g0` too) all occur.
#[derive(Debug, Clone)]
struct Nesting {
    edges: Vec<(usize, usize)>,
    /// Per person: employment, then a bit per group they are a direct member of.
    people: Vec<(usize, u8, bool)>,
}

const GROUPS: usize = 5;

fn nestings() -> impl Strategy<Value = Nesting> {
    (
        prop::collection::btree_set((0..GROUPS, 0..GROUPS), 0..10),
        prop::collection::vec((0..3usize, 0..32u8, any::<bool>()), 0..30),
    )
        .prop_map(|(edges, people)| Nesting {
            edges: edges.into_iter().filter(|(a, b)| a != b).collect(),
            people,
        })
}

async fn removal_over(nesting: Nesting, employment: usize) {
    let gw = Gateway::bare().await;
    for g in 0..GROUPS {
        exec(
            &gw,
            &format!("INSERT INTO groups (id, name, revision) VALUES ('grp_g{g}', 'G{g}', 1)"),
        )
        .await;
    }
    for (parent, child) in &nesting.edges {
        exec(
            &gw,
            &format!("INSERT INTO group_nesting VALUES ('grp_g{parent}', 'grp_g{child}')"),
        )
        .await;
    }
    exec(
        &gw,
        "INSERT INTO entitlements VALUES ('pager', 'pager', 'grp_g0', 1)",
    )
    .await;
    for (n, (job, groups, on_call)) in nesting.people.iter().enumerate() {
        let id = format!("usr_{n:03}");
        exec(&gw, &format!("INSERT INTO users (id, name, email, employment) VALUES ('{id}', 'P{n}', '{id}@x', '{}')", EMPLOYMENT[*job])).await;
        for g in (0..GROUPS).filter(|g| groups & (1 << g) != 0) {
            exec(
                &gw,
                &format!("INSERT INTO group_members VALUES ('grp_g{g}', '{id}')"),
            )
            .await;
        }
        if *on_call {
            exec(
                &gw,
                &format!("INSERT INTO entitlement_holders VALUES ('pager', '{id}')"),
            )
            .await;
        }
    }
    // The model: the groups reachable from g0 through nesting, g0 itself never among them.
    let mut reachable = BTreeSet::new();
    let mut frontier = vec![0usize];
    while let Some(g) = frontier.pop() {
        for (_, child) in nesting.edges.iter().filter(|(p, _)| *p == g) {
            if *child != 0 && reachable.insert(*child) {
                frontier.push(*child);
            }
        }
    }
    let id = |n: usize| format!("usr_{n:03}");
    let person = |pick: &dyn Fn(&(usize, u8, bool)) -> bool| -> BTreeSet<String> {
        (0..nesting.people.len())
            .filter(|n| pick(&nesting.people[*n]))
            .map(id)
            .collect()
    };
    let keeps = |groups: u8| reachable.iter().any(|g| groups & (1 << g) != 0);
    let selected = person(&|(job, groups, _)| groups & 1 != 0 && *job == employment);
    let retained =
        person(&|(job, groups, _)| groups & 1 != 0 && *job == employment && keeps(*groups));
    let losing = person(&|(job, groups, on_call)| {
        groups & 1 != 0 && *job == employment && *on_call && !keeps(*groups)
    });

    let plan = gw
        .preview(
            "groups.members.remove",
            json!({"group": "grp_g0", "filter": {"employment": EMPLOYMENT[employment]}}),
        )
        .await;
    assert_eq!(
        subject_ids(&gw, &plan, "direct_membership_removed").await,
        selected
    );
    assert_eq!(
        subject_ids(&gw, &plan, "access_retained_via_nested_group").await,
        retained,
        "{nesting:?}"
    );
    assert_eq!(
        subject_ids(&gw, &plan, "pager_entitlement_removed").await,
        losing,
        "{nesting:?}"
    );
    if selected.is_empty() {
        return;
    }
    let members_of =
        |g: usize| person(&move |(_, groups, _): &(usize, u8, bool)| groups & (1 << g) != 0);
    let nested_before: Vec<_> = (1..GROUPS).map(members_of).collect();
    run(&gw, "groups.members.remove", &plan).await;
    // Who is where afterwards, identity by identity: exactly the selected left the group,
    // exactly the losing lost the pager, and no other group changed.
    let still = ids(
        &gw,
        "SELECT user_id FROM group_members WHERE group_id = 'grp_g0'",
    )
    .await;
    let expected: BTreeSet<String> = members_of(0).difference(&selected).cloned().collect();
    assert_eq!(still, expected, "{nesting:?}");
    let holders = ids(&gw, "SELECT user_id FROM entitlement_holders").await;
    let on_call = person(&|(_, _, on_call)| *on_call);
    let expected: BTreeSet<String> = on_call.difference(&losing).cloned().collect();
    assert_eq!(holders, expected, "{nesting:?}");
    for (g, before) in (1..GROUPS).zip(nested_before) {
        let now = ids(
            &gw,
            &format!("SELECT user_id FROM group_members WHERE group_id = 'grp_g{g}'"),
        )
        .await;
        assert_eq!(now, before, "grp_g{g}, {nesting:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn bulk_removal_selects_and_leaves_what_the_model_says(
        world in people(),
        employment in 0..3usize,
        only in prop::option::of(prop::collection::vec(0..40usize, 1..10)),
    ) {
        runtime().block_on(removal(world, employment, only));
    }

    #[test]
    fn removal_over_any_nesting_keeps_exactly_the_reachable_members(
        nesting in nestings(),
        employment in 0..3usize,
    ) {
        runtime().block_on(removal_over(nesting, employment));
    }

    #[test]
    fn retention_recalculates_exactly_the_free_items(
        items in prop::collection::vec(any::<bool>(), 0..30),
        current in prop::sample::select(vec![7i64, 14, 30, 90]),
        wanted in prop::sample::select(vec![7i64, 14, 30, 90, 365]),
    ) {
        runtime().block_on(retention(items, current, wanted));
    }
}
