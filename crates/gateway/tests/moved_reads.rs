//! Every revision each capability reads, pinned to a list written apart from the capability, and
//! moved one at a time: the plan stops at the next decision (or, needing none, at execution) with
//! `plan_stale` naming that resource.

use crate::common::{assert_error, grant, retention, Gateway, GRANT};
use countersign_engine::queue;
use countersign_pack::Handle;
use serde_json::{json, Value};

/// Each plan-making capability with a request that reads every kind of resource it can, and the
/// revisioned resources its preview must read, written down from what the capability does rather
/// than from what it reports: a capability that forgets a read fails here.
fn cases() -> Vec<(&'static str, Value, &'static [&'static str])> {
    vec![
        (
            "groups.members.remove",
            json!({"group": "grp_support", "filter": {"employment": "contractor"}}),
            // The group's members; the nested group through which four keep access; the
            // on-call entitlement linked to the group, which six lose.
            &[
                "entitlements/on_call",
                "groups/grp_support",
                "groups/grp_support_escalation",
            ],
        ),
        (
            GRANT,
            grant("prj_421", "usr_92", "editor"),
            // The project's roles (a conflicting role blocks); the seat the grant takes; the
            // person, whose address the invitation goes to and whose suspension blocks.
            &["projects/prj_421", "seats/org", "users/usr_92"],
        ),
        (
            "projects.settings.update",
            retention("prj_184", 14),
            // The project's retention, from which its items' expiries are recalculated.
            &["projects/prj_184"],
        ),
        (
            "storage.quota.update",
            json!({"quota": "sq_product", "quota_bytes": 1000}),
            // The quota, whose projects' uploads stop or resume.
            &["storage/sq_product"],
        ),
        (
            "documents.document.upload",
            json!({"project": "prj_184", "filename": "a.txt", "mime_type": "text/plain",
                   "size_bytes": 10}),
            // The project's quota: the upload's bytes count against it.
            &["storage/sq_product"],
        ),
    ]
}

async fn preview(gw: &Gateway, capability: &str, params: &Value) -> Value {
    gw.preview(capability, params.clone()).await
}

fn read_resources(plan: &Value) -> Vec<String> {
    plan["read_revisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["resource"].as_str().unwrap().to_owned())
        .collect()
}

/// A `plan_stale` refusal whose `moved` names `resource`.
fn assert_stale_naming(reply: &crate::common::Reply, resource: &str) {
    assert_error(reply, "plan_stale", 409);
    let moved = &reply.body["error"]["details"]["moved"];
    assert!(
        moved
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["resource"] == resource),
        "{resource} moved: {moved}"
    );
}

#[tokio::test]
async fn each_read_revision_moved_stops_its_plan() {
    let mut seen = std::collections::BTreeSet::new();
    for (capability, params, expected) in cases() {
        let resources = read_resources(&preview(&Gateway::new().await, capability, &params).await);
        let mut sorted = resources.clone();
        sorted.sort();
        assert_eq!(sorted, expected, "{capability} reads exactly these");
        for resource in resources {
            seen.insert(resource.clone());
            let (gw, dana) = Gateway::with_approver("Dana").await;
            let plan = preview(&gw, capability, &params).await;
            let plan_id = plan["plan_id"].as_str().unwrap();
            let mut w = gw.state.store.write().await.unwrap();
            let mut handle = Handle::new(&mut w.tx);
            countersign_demo_world::bump(&mut handle, &resource)
                .await
                .unwrap();
            for moved in handle.take_moved() {
                queue::mark_stale_readers(&mut w.tx, &moved).await.unwrap();
            }
            w.commit().await.unwrap();

            let reply = if plan["would_require_approval"] == true {
                dana.send(&gw, plan_id, &dana.sign(&dana.statement(&gw, &plan)))
                    .await
            } else {
                gw.invoke_as(&gw.agent, capability, json!({"plan_id": plan_id}))
                    .await
            };
            assert_stale_naming(&reply, &resource);
        }
    }
    // Groups (the nested one too), entitlements, projects, the seat pool, storage quotas and
    // people.
    assert!(seen.contains("groups/grp_support_escalation"), "{seen:?}");
    let kinds: std::collections::BTreeSet<&str> =
        seen.iter().filter_map(|r| r.split('/').next()).collect();
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        [
            "entitlements",
            "groups",
            "projects",
            "seats",
            "storage",
            "users"
        ]
    );
}

/// No capability writes people: a directory sync or an operator does, with plain SQL. Such a
/// write still moves the person's revision and their groups' (migration 0014), so the plans that
/// read them stop at the next decision, not only at execution; a write that changes nothing
/// moves nothing.
#[tokio::test]
async fn a_write_to_a_person_by_any_path_stops_the_plans_that_read_them() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let grant = preview(&gw, GRANT, &grant("prj_421", "usr_92", "editor")).await;
    let removal = preview(
        &gw,
        "groups.members.remove",
        &json!({"group": "grp_support", "filter": {"employment": "contractor"}}),
    )
    .await;
    let pool = gw.state.store.pool();
    let revision = |id: &'static str| async move {
        sqlx::query_scalar::<_, i64>("SELECT revision FROM users WHERE id = $1")
            .bind(id)
            .fetch_one(pool)
            .await
            .unwrap()
    };
    let unchanged = revision("usr_92").await;
    sqlx::query("UPDATE users SET email = email, suspended = suspended WHERE id = 'usr_92'")
        .execute(pool)
        .await
        .unwrap();
    assert_eq!(
        revision("usr_92").await,
        unchanged,
        "a write of the same values"
    );

    sqlx::query("UPDATE users SET email = 'sam@elsewhere.example' WHERE id = 'usr_92'")
        .execute(pool)
        .await
        .unwrap();
    // A contractor of the group becomes an employee: the removal's filter no longer takes them.
    sqlx::query(
        "UPDATE users SET employment = 'employee' WHERE id = (
             SELECT u.id FROM users u JOIN group_members m ON m.user_id = u.id
             WHERE m.group_id = 'grp_support' AND u.employment = 'contractor'
             ORDER BY u.id LIMIT 1)",
    )
    .execute(pool)
    .await
    .unwrap();
    for (plan, resource) in [(&grant, "users/usr_92"), (&removal, "groups/grp_support")] {
        let plan_id = plan["plan_id"].as_str().unwrap();
        let record = gw.record(&dana.token, plan_id).await;
        assert_eq!(
            record.body["status"], "stale",
            "{resource}: {}",
            record.body
        );
        let reply = dana
            .send(&gw, plan_id, &dana.sign(&dana.statement(&gw, plan)))
            .await;
        assert_stale_naming(&reply, resource);
    }
}
