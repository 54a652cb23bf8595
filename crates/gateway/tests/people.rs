//! One person is one approval, and nobody decides their own access: an approver account belongs
//! to a person, a second account for one person is refused at the invite and at the enrollment,
//! a quorum counts people, and nobody approves a grant to themselves or a plan made on their
//! behalf; the plan record says why an approver may not approve.

use crate::common::{approve_by, assert_error, grant, Gateway, GRANT};
use countersign_engine::{accounts, approval::approvals, approval::revocation, plan::plans};
use countersign_proto::approvals::PlanStatus;
use serde_json::json;

const REMOVE: &str = "groups.members.remove";

fn contractors() -> serde_json::Value {
    json!({"group": "grp_support", "filter": {"employment": "contractor"}})
}

#[tokio::test]
async fn a_person_who_approves_already_gets_no_second_invite() {
    let gw = Gateway::new().await;
    let sam = gw.enroll_as("Sam", "usr_92").await;
    let refused = accounts::invite_approver(&gw.state.store, "Sam again", Some("usr_92"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("usr_92 already approves as") && refused.contains(&sam.id),
        "{refused}"
    );
    // Once the old account is revoked, the person may be invited again.
    revocation::revoke_approver(&gw.state.store, gw.state.registry, &sam.id)
        .await
        .unwrap();
    gw.enroll_as("Sam", "usr_92").await;
}

#[tokio::test]
async fn a_second_account_for_one_person_cannot_enroll() {
    let gw = Gateway::new().await;
    // Two invites for one person, both made before either was spent.
    let first = accounts::invite_approver(&gw.state.store, "Sam", Some("usr_92"))
        .await
        .unwrap();
    let second = accounts::invite_approver(&gw.state.store, "Sam (laptop)", Some("usr_92"))
        .await
        .unwrap();
    let sam = gw.enroll_with_code("Sam", &first).await;
    let key = ed25519_dalek::SigningKey::generate(&mut rand::rngs::OsRng);
    let reply = gw
        .call(
            "POST",
            "/v1/approvers/enroll",
            None,
            Some(json!({"enrollment_code": second, "public_key":
                countersign_proto::dsse::encode_public_key(&key.verifying_key())})),
        )
        .await;
    assert_error(&reply, "not_eligible", 403);
    let message = reply.body["error"]["message"].as_str().unwrap();
    assert!(message.contains(&sam.id), "{message}");
    let approvers: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM approvers WHERE user_id = $1")
        .bind("usr_92")
        .fetch_one(gw.state.store.pool())
        .await
        .unwrap();
    assert_eq!(approvers, 1, "nothing of the refused enrollment was kept");
}

#[tokio::test]
async fn two_accounts_of_one_person_count_once_toward_a_quorum() {
    let gw = Gateway::new().await;
    let dana = gw.enroll_as("Dana", "usr_38").await;
    // A second account of the same person, as a database from before the rule may hold one.
    let eli = gw.enroll("Eli").await;
    sqlx::query("UPDATE approvers SET user_id = 'usr_38' WHERE id = $1")
        .bind(&eli.id)
        .execute(gw.state.store.pool())
        .await
        .unwrap();
    let plan = gw.preview(REMOVE, contractors()).await;
    let plan_id = plan["plan_id"].as_str().unwrap();
    approve_by(&gw, &plan, &[&dana]).await;
    let again = eli.sign(&eli.statement(&gw, &plan));
    let reply = eli.send(&gw, plan_id, &again).await;
    assert_error(&reply, "not_eligible", 403);
    assert!(
        reply.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("one person, one decision"),
        "{}",
        reply.body
    );
    // And a second approval of one person that is on file counts once.
    sqlx::query(
        "INSERT INTO decisions (plan_id, approver_id, key_id, decision, nonce, envelope, decided_at)
         VALUES ($1, $2, $3, 'approve', 'n_same_person', '{}', '2026-12-01T00:00:00Z')",
    )
    .bind(plan_id)
    .bind(&eli.id)
    .bind(&eli.key_id)
    .execute(gw.state.store.pool())
    .await
    .unwrap();
    let mut conn = gw.state.store.pool().acquire().await.unwrap();
    let stored = plans::load(&mut conn, plan_id).await.unwrap().unwrap();
    assert_eq!(stored.required_approvals, 2);
    let standing = approvals::standing(&mut conn, &stored).await.unwrap();
    assert_eq!(standing, PlanStatus::PendingApproval);
}

#[tokio::test]
async fn nobody_approves_a_grant_to_themselves_and_the_record_says_why() {
    let gw = Gateway::new().await;
    let sam = gw.enroll_as("Sam", "usr_92").await;
    let dana = gw.enroll("Dana").await;
    let plan = gw
        .preview(GRANT, grant("prj_421", "usr_92", "editor"))
        .await;
    let plan_id = plan["plan_id"].as_str().unwrap();

    let seen_by_sam = gw.record(&sam.token, plan_id).await;
    assert_eq!(seen_by_sam.body["eligibility"]["eligible"], false);
    let why = seen_by_sam.body["eligibility"]["reason"].as_str().unwrap();
    assert!(why.contains("grantee") && why.contains("usr_92"), "{why}");
    assert_eq!(
        gw.record(&dana.token, plan_id).await.body["eligibility"],
        json!({"eligible": true})
    );
    assert!(gw
        .record(&gw.agent, plan_id)
        .await
        .body
        .get("eligibility")
        .is_none());

    let own = sam.sign(&sam.statement(&gw, &plan));
    let reply = sam.send(&gw, plan_id, &own).await;
    assert_error(&reply, "not_eligible", 403);
    assert!(
        reply.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("grantee"),
        "{}",
        reply.body
    );
    let decided = approve_by(&gw, &plan, &[&dana]).await;
    assert_eq!(decided.body["status"], "approved");
}
