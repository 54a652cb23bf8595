//! Approval policy as code (docs/policy.md): the built-in policy requires what each capability
//! always did; a policy's rules are met only by the people they ask, each person once; a denial
//! reaches nobody; a new policy evaluates the open plans again.

use std::collections::BTreeSet;

use countersign_demo_world::sim;
use countersign_embedded::seed_demo;
use countersign_engine::Store;
use countersign_pack::ApprovalRule;
use countersign_policy::{Policy, Sources};
use countersign_proto::approvals::RiskFlag;
use countersign_proto::decision::Decision;
use countersign_proto::describe::DryRunMode;
use countersign_proto::plan::Preview;
use countersign_proto::risk::{default_high_cost_threshold, risk_flags};
use serde_json::{json, Value};

use crate::common::{approve_by, assert_error, grant, on_disk, Gateway, GRANT};

pub fn policy(rego: &str) -> Policy {
    let text = format!("package countersign.approval\n\nimport rego.v1\n\n{rego}\n");
    let sources = Sources {
        modules: vec![("team.rego".to_owned(), text)],
        data: None,
    };
    Policy::from_sources(sources, "test").unwrap()
}

fn settings(days: u32) -> Value {
    json!({"project": "prj_184", "retention_days": days})
}

const FINANCE_SIGNS: &str = r#"rules contains {"id": "finance_signs",
    "description": "Finance signs every change.", "count": 1, "teams": ["finance"]}
if count(input.plan.effects) > 0"#;

#[tokio::test]
async fn the_builtin_policy_requires_what_each_capability_always_did() {
    let (gw, dana) = Gateway::with_approver("Dana").await;
    let registry = gw.state.registry;
    let mut covered = BTreeSet::new();
    // The simulated agent's requests, and a coding agent's call beside them.
    let agent_call = (
        "a coding agent's command",
        "agent.tool_call",
        json!({"tool_name": "Bash", "tool_input": {"command": "ls"}, "cwd": "/srv"}),
    );
    for (label, capability_id, params) in sim::examples().into_iter().chain([agent_call]) {
        let body = gw.preview(capability_id, params).await;
        let preview: Preview = serde_json::from_value(body.clone()).unwrap();
        let capability = registry.get(capability_id).unwrap();
        // The rule as the engine applied it before policies were code.
        let risky = risk_flags(&preview, default_high_cost_threshold())
            .into_iter()
            .any(|f| f != RiskFlag::Blocked);
        let waits = !preview.effects.is_empty()
            && match capability.approval() {
                ApprovalRule::Always => true,
                ApprovalRule::WhenRisky => risky,
                ApprovalRule::AboveCost(limit) => {
                    preview.estimated_cost.amount_max.value() > limit.value()
                }
            };
        let required = match waits {
            true => capability.describe().approval.required_approvals,
            false => 0,
        };
        assert_eq!(preview.would_require_approval, waits, "{label}");
        let record = gw.record(&dana.token, &preview.plan_id).await.body;
        assert_eq!(record["approvals"]["required"], required, "{label}");
        let rules = record["approvals"]["rules"].as_array().cloned();
        match waits {
            true => {
                let rules = rules.unwrap_or_else(|| panic!("{label}: {record}"));
                assert_eq!(rules.len(), 1, "{label}");
                assert_eq!(rules[0]["id"], "capability_default", "{label}");
                assert_eq!(rules[0]["count"], required, "{label}");
                assert_eq!(rules[0]["teams"], json!([]), "{label}");
            }
            false => assert_eq!(rules, None, "{label}"),
        }
        covered.insert((capability_id, waits));
    }
    let previewable: BTreeSet<&str> = registry
        .all()
        .filter(|c| c.describe().dry_run != DryRunMode::NotApplicable)
        .map(|c| c.id())
        .collect();
    let seen: BTreeSet<&str> = covered.iter().map(|(id, _)| *id).collect();
    assert_eq!(seen, previewable, "every capability with a preview");
    assert!(covered.contains(&("text.generate", true)));
    assert!(covered.contains(&("text.generate", false)));
}

#[tokio::test]
async fn a_team_rule_is_met_only_by_that_team_and_tells_others_why() {
    let gw = Gateway::with_policy(policy(FINANCE_SIGNS)).await;
    let sam = gw.enroll_as("Sam", "usr_92").await; // leads
    let fay = gw.enroll_as("Fay", "usr_41").await; // finance
    let plan = gw.preview("projects.settings.update", settings(14)).await;
    let plan_id = plan["plan_id"].as_str().unwrap();

    let record = gw.record(&sam.token, plan_id).await.body;
    assert_eq!(record["eligibility"]["eligible"], false, "{record}");
    let why = record["eligibility"]["reason"].as_str().unwrap();
    assert!(
        why.contains("usr_92 (of leads)") && why.contains("1 of finance (finance_signs"),
        "{why}"
    );
    let refused = sam
        .send(&gw, plan_id, &sam.sign(&sam.statement(&gw, &plan)))
        .await;
    assert_error(&refused, "not_eligible", 403);
    assert!(refused.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("finance_signs"));
    let mut reject = sam.statement(&gw, &plan);
    reject.decision = Decision::Reject;
    reject.reason = Some("Not my call.".into());
    let rejection = sam.send(&gw, plan_id, &sam.sign(&reject)).await;
    assert_error(&rejection, "not_eligible", 403);

    let done = approve_by(&gw, &plan, &[&fay]).await;
    assert_eq!(done.body["status"], "approved", "{}", done.body);
    let rule = &done.body["approvals"]["rules"][0];
    assert_eq!(rule["met_by"], json!([fay.id]));
    assert_eq!(rule["missing"], 0);
    assert_eq!(rule["source"], json!({"file": "team.rego", "line": 5}));
    assert_eq!(gw.execute(&plan).await.status, 200);
}

#[tokio::test]
async fn a_two_person_rule_takes_two_people_of_its_team() {
    let gw = Gateway::with_policy(policy(
        r#"rules contains {"id": "two_leads", "count": 2, "teams": ["leads"]} if true"#,
    ))
    .await;
    let sam = gw.enroll_as("Sam", "usr_92").await;
    let ben = gw.enroll_as("Ben", "usr_08").await;
    let fay = gw.enroll_as("Fay", "usr_41").await;
    let plan = gw.preview("projects.settings.update", settings(21)).await;
    let first = approve_by(&gw, &plan, &[&sam]).await;
    assert_eq!(first.body["status"], "pending_approval");
    assert_eq!(first.body["approvals"]["rules"][0]["missing"], 1);
    assert_eq!(first.body["approvals"]["required"], 2);
    let plan_id = plan["plan_id"].as_str().unwrap();
    let outsider = fay
        .send(&gw, plan_id, &fay.sign(&fay.statement(&gw, &plan)))
        .await;
    assert_error(&outsider, "not_eligible", 403);
    let second = approve_by(&gw, &plan, &[&ben]).await;
    assert_eq!(second.body["status"], "approved");
    assert_eq!(
        second.body["approvals"]["rules"][0]["met_by"],
        json!([sam.id, ben.id])
    );
}

#[tokio::test]
async fn a_denied_plan_is_refused_to_its_agent_and_reaches_nobody() {
    let gw = Gateway::with_policy(policy(
        r#"rules := []
deny contains "Retention changes are frozen this week." if {
    input.capability.id == "projects.settings.update"
}"#,
    ))
    .await;
    let dana = gw.enroll("Dana").await;
    let reply = gw
        .try_preview("projects.settings.update", settings(7))
        .await;
    assert_error(&reply, "policy_denied", 403);
    assert_eq!(
        reply.body["error"]["details"]["reasons"],
        json!(["Retention changes are frozen this week."])
    );
    let plans: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM plans")
        .fetch_one(gw.state.store.pool())
        .await
        .unwrap();
    assert_eq!(plans, 0);
    let queue = gw
        .call(
            "GET",
            "/v1/approvals?status=pending",
            Some(&dana.token),
            None,
        )
        .await;
    assert_eq!(queue.body["items"], json!([]));
    // Another capability is not refused.
    gw.preview(GRANT, grant("prj_200", "usr_41", "editor"))
        .await;
}

#[tokio::test]
async fn an_unmet_rule_widens_to_its_escalation_after_its_time() {
    let gw = Gateway::with_policy(policy(
        r#"rules contains {"id": "oncall_first", "count": 1, "teams": ["oncall"],
    "escalate": {"after_seconds": 4, "teams": ["leads"]}} if true"#,
    ))
    .await;
    let sam = gw.enroll_as("Sam", "usr_92").await; // leads, not oncall
    let fay = gw.enroll_as("Fay", "usr_41").await; // finance: neither
    let plan = gw.preview("projects.settings.update", settings(60)).await;
    let plan_id = plan["plan_id"].as_str().unwrap();
    let early = sam
        .send(&gw, plan_id, &sam.sign(&sam.statement(&gw, &plan)))
        .await;
    assert_error(&early, "not_eligible", 403);
    // The sweep publishes the plan again once the rule widened: the queue's summary, which
    // consoles count from, names the escalation.
    let mut listed = json!(null);
    for _ in 0..100 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        listed = gw
            .call(
                "GET",
                "/v1/approvals?status=pending",
                Some(&sam.token),
                None,
            )
            .await
            .body;
        if listed["items"][0]["approvals"]["rules"][0]["escalated_at"].is_string() {
            break;
        }
    }
    assert!(
        listed["items"][0]["approvals"]["rules"][0]["escalated_at"].is_string(),
        "{listed}"
    );
    // Widened to leads, the rule still asks nobody outside both teams.
    let outsider = fay
        .send(&gw, plan_id, &fay.sign(&fay.statement(&gw, &plan)))
        .await;
    assert_error(&outsider, "not_eligible", 403);
    let late = approve_by(&gw, &plan, &[&sam]).await;
    assert_eq!(late.body["status"], "approved");
    assert!(late.body["approvals"]["rules"][0]["escalated_at"].is_string());
}

#[tokio::test]
async fn a_new_policy_evaluates_the_open_plans_again() {
    let database = on_disk(true).await;
    let store = Store::open(&database).await.unwrap();
    seed_demo(&store).await.unwrap();
    let before = countersign_embedded::state(
        store,
        "Test",
        Default::default(),
        countersign_embedded::default_registry(),
    )
    .await
    .unwrap();
    let gw = Gateway::from_state(before).await;
    let retention = gw.preview("projects.settings.update", settings(14)).await;
    let removal = gw
        .preview(
            "groups.members.remove",
            json!({"group": "grp_support", "filter": {"employment": "contractor"}}),
        )
        .await;
    let agent = gw.agent.clone();
    drop(gw);

    let changed = policy(&format!(
        r#"{FINANCE_SIGNS}
deny contains "No removals under this policy." if input.capability.id == "groups.members.remove""#
    ));
    let digest = changed.digest().to_owned();
    let store = Store::open(&database).await.unwrap();
    let after = countersign_embedded::state_with_policy(
        store,
        "Test",
        Default::default(),
        countersign_embedded::default_registry(),
        changed,
    )
    .await
    .unwrap();
    let gw = Gateway::acting_as(after, agent);
    let dana = gw.enroll("Dana").await;
    let record = gw
        .record(&dana.token, retention["plan_id"].as_str().unwrap())
        .await
        .body;
    assert_eq!(record["status"], "pending_approval", "{record}");
    assert_eq!(record["approvals"]["rules"][0]["id"], "finance_signs");
    let refused = gw
        .record(&dana.token, removal["plan_id"].as_str().unwrap())
        .await
        .body;
    assert_eq!(refused["status"], "rejected", "{refused}");
    let denied = refused["approvals"]["denied"][0].as_str().unwrap();
    assert!(
        denied.contains("No removals under this policy."),
        "{denied}"
    );
    let digests: Vec<String> =
        sqlx::query_scalar("SELECT DISTINCT policy_digest FROM plans ORDER BY 1")
            .fetch_all(gw.state.store.pool())
            .await
            .unwrap();
    assert_eq!(digests, [digest]);
    // Each change reached the queue as an event, after the two plans were created.
    let events: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM plan_events")
        .fetch_one(gw.state.store.pool())
        .await
        .unwrap();
    assert!(events >= 4, "{events} events");
}

#[tokio::test]
async fn an_approver_learns_the_person_teams_and_standing_flags_the_policy_sees() {
    let gw = Gateway::new().await;
    let sam = gw.enroll_as("Sam", "usr_92").await;
    let dana = gw.enroll("Dana").await;
    let me = gw
        .call("GET", "/v1/approvers/me", Some(&sam.token), None)
        .await;
    assert_eq!(me.status, 200, "{}", me.body);
    assert_eq!(
        me.body,
        json!({"approver_id": sam.id, "display_name": "Sam", "person": "usr_92", "teams": ["leads"],
               "standing_flags": ["access_change", "money", "external", "uncertain", "high_cost",
                                  "blocked"]})
    );
    let nobody = gw
        .call("GET", "/v1/approvers/me", Some(&dana.token), None)
        .await;
    assert_eq!(nobody.body["person"], dana.id.as_str());
    assert_eq!(nobody.body["teams"], json!([]));
    let agent = gw
        .call("GET", "/v1/approvers/me", Some(&gw.agent), None)
        .await;
    assert_error(&agent, "forbidden", 403);
}

#[tokio::test]
async fn a_rule_that_excludes_the_requester_leaves_the_agents_team_out() {
    let gw = Gateway::with_policy(policy(
        r#"rules contains {"id": "outside_finance", "count": 1, "teams": ["finance", "leads"],
    "exclude_requester": true} if true"#,
    ))
    .await;
    countersign_engine::approval::teams::set_agent(&gw.state.store, "agt_ops", Some("finance"))
        .await
        .unwrap();
    let fay = gw.enroll_as("Fay", "usr_41").await; // finance
    let sam = gw.enroll_as("Sam", "usr_92").await; // leads
    let plan = gw.preview("projects.settings.update", settings(90)).await;
    let plan_id = plan["plan_id"].as_str().unwrap();
    let record = gw.record(&fay.token, plan_id).await.body;
    assert_eq!(record["approvals"]["rules"][0]["excludes_team"], "finance");
    let refused = fay
        .send(&gw, plan_id, &fay.sign(&fay.statement(&gw, &plan)))
        .await;
    assert_error(&refused, "not_eligible", 403);
    let done = approve_by(&gw, &plan, &[&sam]).await;
    assert_eq!(done.body["status"], "approved");
}

#[tokio::test]
async fn a_rule_from_data_json_that_excludes_the_requester_leaves_the_agents_team_out() {
    // Nothing in the Rego names the agent: the rule object, exclude_requester and all, is data.
    let sources = Sources {
        modules: vec![(
            "data_rules.rego".to_owned(),
            "package countersign.approval\n\nimport rego.v1\n\nrules contains data.rule if true\n"
                .to_owned(),
        )],
        data: Some(
            r#"{"rule": {"id": "outside_finance", "count": 1, "teams": ["finance", "leads"],
                         "exclude_requester": true}}"#
                .to_owned(),
        ),
    };
    let gw = Gateway::with_policy(Policy::from_sources(sources, "test").unwrap()).await;
    countersign_engine::approval::teams::set_agent(&gw.state.store, "agt_ops", Some("finance"))
        .await
        .unwrap();
    let fay = gw.enroll_as("Fay", "usr_41").await; // finance
    let sam = gw.enroll_as("Sam", "usr_92").await; // leads
    let plan = gw.preview("projects.settings.update", settings(90)).await;
    let plan_id = plan["plan_id"].as_str().unwrap();
    let record = gw.record(&fay.token, plan_id).await.body;
    assert_eq!(record["approvals"]["rules"][0]["excludes_team"], "finance");
    assert_eq!(record["eligibility"]["eligible"], false);
    let refused = fay
        .send(&gw, plan_id, &fay.sign(&fay.statement(&gw, &plan)))
        .await;
    assert_error(&refused, "not_eligible", 403);
    let done = approve_by(&gw, &plan, &[&sam]).await;
    assert_eq!(done.body["status"], "approved");
}

#[tokio::test]
async fn a_policy_that_allocates_without_bound_is_a_policy_error_and_the_gateway_serves_on() {
    // The ceiling is the process's (each test runs in a process of its own under nextest); the
    // gateway sets it from --policy-heap-limit-mb.
    countersign_policy::limit_memory(Some(512 << 20));
    let gw = Gateway::with_policy(policy(
        r#"rules contains {"id": "one", "count": 1} if {
	input.plan.request.params.retention_days == 999
	count(numbers.range(1, 100000000)) > 0
}
rules contains {"id": "one", "count": 1} if input.plan.request.params.retention_days != 999"#,
    ))
    .await;
    let greedy = gw
        .try_preview("projects.settings.update", settings(999))
        .await;
    assert_error(&greedy, "policy_error", 500);
    let message = greedy.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("memory"), "{message}");
    // Nothing of it was kept, and the next plan is evaluated as ever.
    let plans = "SELECT COUNT(*) FROM plans WHERE agent_id = $1";
    assert_eq!(gw.count(plans, "agt_ops").await, 0);
    let next = gw.preview("projects.settings.update", settings(60)).await;
    assert_eq!(next["would_require_approval"], true, "{next}");
    countersign_policy::limit_memory(None);
}

#[tokio::test]
async fn mcp_tools_describe_the_policy_in_force() {
    async fn list(gw: &Gateway) -> crate::common::Reply {
        let body = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {}});
        let request = axum::http::Request::post("/mcp")
            .header("host", "gateway.example")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .header("authorization", format!("Bearer {}", gw.agent))
            .body(axum::body::Body::from(body.to_string()))
            .unwrap();
        gw.send(request).await
    }
    let description = |listing: Value| {
        listing["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "groups.members.remove")
            .map(|t| t["description"].as_str().unwrap().to_owned())
            .unwrap_or_else(|| panic!("{listing}"))
    };
    let builtin = Gateway::new().await;
    let own_rule = description(list(&builtin).await.body);
    assert!(
        own_rule.contains("Every plan needs a signed approval by 2 approvers"),
        "{own_rule}"
    );
    let other = Gateway::with_policy(policy(FINANCE_SIGNS)).await;
    let policy_says = description(list(&other).await.body);
    assert!(
        policy_says.contains("is the gateway's approval policy")
            && !policy_says.contains("2 approvers"),
        "{policy_says}"
    );
}

/// Seed 000: `dry_run` is required exactly when describe says so. A capability whose requests
/// may wait for a person says so in `approval.needed`, and a plan-less invoke of one that waits
/// is told to preview (`dry_run_required`), never `approval_required` for a plan it never had.
#[tokio::test]
async fn describe_says_when_a_request_may_wait_and_a_plan_less_invoke_is_told_to_preview() {
    let builtin = Gateway::new().await;
    let list = builtin
        .call("GET", "/v1/capabilities", Some(&builtin.agent), None)
        .await
        .body;
    let needed = |id: &str| {
        let item = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["capability_id"] == id)
            .unwrap_or_else(|| panic!("{id}"));
        (item["dry_run"].clone(), item["approval"]["needed"].clone())
    };
    assert_eq!(
        needed("projects.settings.update"),
        (json!("required"), json!("always"))
    );
    assert_eq!(
        needed("storage.quota.update"),
        (json!("supported"), json!("depends_on_request"))
    );
    assert_eq!(
        needed("wallet.agent_budget.guard.check"),
        (json!("not_applicable"), json!("never"))
    );

    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/policy");
    let gw = Gateway::with_policy(Policy::load(std::path::Path::new(examples)).unwrap()).await;
    let list = gw
        .call("GET", "/v1/capabilities", Some(&gw.agent), None)
        .await
        .body;
    for item in list["items"].as_array().unwrap() {
        assert_eq!(item["approval"]["needed"], "depends_on_request", "{item}");
    }
    let one = gw
        .call(
            "GET",
            "/v1/capabilities/wallet.agent_budget.guard.check",
            Some(&gw.agent),
            None,
        )
        .await;
    assert_eq!(one.body["approval"]["needed"], "depends_on_request");

    // The example's supported capabilities wait only for risk or cost the demo world's requests
    // do not reach; a policy that sends every change to finance makes the upload wait.
    let gw = Gateway::with_policy(policy(FINANCE_SIGNS)).await;
    let upload = json!({"project": "prj_311", "filename": "runbook.md",
                        "mime_type": "text/markdown", "size_bytes": 120_000});
    let plan = gw
        .preview("documents.document.upload", upload.clone())
        .await;
    assert_eq!(plan["would_require_approval"], true, "{plan}");
    let reply = gw
        .invoke_as(
            &gw.agent,
            "documents.document.upload",
            json!({ "params": upload }),
        )
        .await;
    assert_error(&reply, "dry_run_required", 428);
    // Under the built-in policy the same request needs nobody and runs without a plan.
    let reply = builtin
        .invoke_as(
            &builtin.agent,
            "documents.document.upload",
            json!({ "params": upload }),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
}
