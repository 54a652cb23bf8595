//! The approval policy in the real desktop binary (tauri-driver under Xvfb): an approver in a
//! team opens on the plans that need them, sees the rules of each plan with what they still
//! need, and cannot approve a plan no open rule asks them for, told why. Screenshots of a plan
//! with two rules, light and dark, go to target/screenshots.

use countersign_e2e::webdriver::queue_row;
use countersign_e2e::{Policy, TestGateway};
use countersign_policy::Sources;
use serde_json::json;

use crate::app::{eventually, serial, App, Launch};
use crate::demo_plans::{contractors_of_support, preview, retention_plan, status};
use crate::notifications::{NotificationServer, NotifyCalls};

/// Finance signs retention changes, a lead signs grants, and a bulk removal needs two leads and
/// someone of finance.
const TEAM_POLICY: &str = r#"package countersign.approval

import rego.v1

rules contains {"id": "finance_signs_retention", "description": "Finance signs retention changes.",
	"count": 1, "teams": ["finance"]} if input.capability.id == "projects.settings.update"

rules contains {"id": "a_lead_grants", "description": "A lead signs every grant.",
	"count": 1, "teams": ["leads"]} if input.capability.id == "memberships.grant"

rules contains {"id": "two_leads_for_removals", "description": "A removal needs two team leads.",
	"count": 2, "teams": ["leads"]} if input.capability.id == "groups.members.remove"

rules contains {"id": "finance_sees_removals", "description": "Finance sees what a removal costs.",
	"count": 1, "teams": ["finance"]} if input.capability.id == "groups.members.remove"
"#;

fn team_policy() -> anyhow::Result<Policy> {
    let sources = Sources {
        modules: vec![("team.rego".to_owned(), TEAM_POLICY.to_owned())],
        data: None,
    };
    Ok(Policy::from_sources(sources, "e2e")?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lead_opens_on_the_plans_that_need_them_and_is_told_why_not_the_others(
) -> anyhow::Result<()> {
    let _one = serial().await;
    let gateway = TestGateway::under(team_policy()?).await?;
    let agent = gateway.agent("ops").await?;
    let retention = retention_plan(&agent, "prj_184", 14).await?;
    let grant = preview(
        &agent,
        "memberships.grant",
        json!({"project": "prj_200", "subject": "usr_41", "role": "editor"}),
    )
    .await?;
    let removal = contractors_of_support(&agent).await?;
    // Sam is usr_92, a lead in the demo's directory.
    let code = gateway.invite_as("Sam", "usr_92").await?;
    let sam = App::start(Launch::new(&gateway.url, &code)).await?;

    eventually("the queue to open on the plans that need Sam", || async {
        Ok(sam
            .count("[data-testid='facet-mine'][aria-pressed='true']")
            .await?
            == 1
            && sam.count(&queue_row(&grant)).await? == 1
            && sam.count(&queue_row(&removal)).await? == 1
            && sam.count(&queue_row(&retention)).await? == 0)
    })
    .await?;
    let sam = &sam;
    let turn = |plan: String| async move {
        let chip = format!("{} [data-testid='row-turn']", queue_row(&plan));
        anyhow::Ok(sam.find(&chip).await?.attr("data-turn").await?)
    };
    assert_eq!(turn(grant.clone()).await?.as_deref(), Some("me"));
    sam.click("[data-testid='facet-all']").await?;
    eventually("every plan once Sam asks for all", || async {
        Ok(sam.count(&queue_row(&retention)).await? == 1)
    })
    .await?;
    assert_eq!(turn(retention.clone()).await?.as_deref(), Some("others"));

    // Sam's window opened on a plan that needs Sam.
    let opened = sam
        .find("[data-testid='plan']")
        .await?
        .attr("data-plan-id")
        .await?;
    assert!(opened.as_deref() != Some(retention.as_str()), "{opened:?}");
    // The retention change asks finance: Sam reads why, and Approve stays shut.
    sam.open(&retention).await?;
    let why = sam.text("[data-testid='not-approvable']").await?;
    assert!(
        why.contains("usr_92 (of leads)") && why.contains("1 of finance (finance_signs_retention"),
        "{why}"
    );
    let approve = sam.find("[data-testid='approve']").await?;
    assert!(!approve.is_enabled().await?, "Approve is open to Sam");
    let line = sam.text("[data-testid='rule-line']").await?;
    assert_eq!(line, "Needs 1 of finance — 0 received");

    // The removal shows both of its rules, the one that asks Sam marked.
    sam.open(&removal).await?;
    eventually("the removal's two rules", || async {
        Ok(sam.count("[data-testid='rule']").await? == 2)
    })
    .await?;
    let rules = sam.text("[data-testid='rules']").await?;
    assert!(
        rules.contains("Needs 1 of finance — 0 received")
            && rules.contains("Needs 2 of leads — 0 received")
            && rules.contains("team.rego:")
            && rules.contains("not part of what you sign"),
        "{rules}"
    );
    assert_eq!(sam.count("[data-testid='rule-asks-me']").await?, 1);
    sam.shoot("plan-with-two-rules").await?;
    assert_eq!(status(&agent, &retention).await?, "pending_approval");
    Ok(())
}

/// A grant waits on on-call first and widens to the leads after four seconds: Sam, a lead, is not
/// told of it when it arrives (it waits on others, however risky), and is told once it waits on
/// him.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lead_is_told_when_a_rule_widens_to_them() -> anyhow::Result<()> {
    let _one = serial().await;
    let _server = NotificationServer::ensure()?;
    let sources = Sources {
        modules: vec![(
            "oncall.rego".to_owned(),
            r#"package countersign.approval
import rego.v1
rules contains {"id": "oncall_grants", "description": "On-call signs grants; the leads after four seconds.",
    "count": 1, "teams": ["oncall"], "escalate": {"after_seconds": 4, "teams": ["leads"]}}
if input.capability.id == "memberships.grant"
"#
            .to_owned(),
        )],
        data: None,
    };
    let gateway = TestGateway::under(Policy::from_sources(sources, "e2e")?).await?;
    let agent = gateway.agent("ops").await?;
    let code = gateway.invite_as("Sam", "usr_92").await?;
    let notify = NotifyCalls::watch()?;
    let sam = App::start(Launch::new(&gateway.url, &code)).await?;
    let grant = preview(
        &agent,
        "memberships.grant",
        json!({"project": "prj_421", "subject": "usr_41", "role": "editor"}),
    )
    .await?;
    eventually("the grant to wait on Sam once the rule widened", || async {
        Ok(notify.naming("Now waiting on you") > 0)
    })
    .await?;
    // A second grant, whose rule widens four seconds later: once its reminder is in, the first
    // has been through every pass that could have reminded of it again.
    let marker = preview(
        &agent,
        "memberships.grant",
        json!({"project": "prj_420", "subject": "usr_38", "role": "editor"}),
    )
    .await?;
    eventually("the second grant to wait on Sam", || async {
        Ok(notify.naming(&marker) > 0)
    })
    .await?;
    assert_eq!(
        notify.naming(&grant),
        1,
        "one reminder, no notice on arrival"
    );
    assert_eq!(notify.total(), 2);
    // Sam's queue opened on "Needs me": the grant is in it now.
    sam.find("[data-testid='facet-mine'][aria-pressed='true']")
        .await?;
    sam.open(&grant).await?;
    let escalated = sam.text("[data-testid='rules']").await?;
    assert!(escalated.contains("also leads since"), "{escalated}");
    Ok(())
}
