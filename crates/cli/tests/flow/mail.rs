//! `mail list|release` against a real gateway: an invitation held because its recipient's
//! address changed after the plan ran is listed with why and where a release would send it, is
//! released by a signed remedy from the terminal, and then goes to the new address once.

use std::sync::Mutex;

use countersign_engine::mail::{self, Outcome, Queued, Sender};
use serde_json::json;

use super::World;

/// The relay's part, recorded: who each message went to.
#[derive(Default)]
struct Recorded(Mutex<Vec<String>>);

impl Sender for Recorded {
    async fn send(&self, message: &Queued) -> Outcome {
        self.0.lock().unwrap().push(message.recipient.clone());
        Outcome::Sent
    }
}

#[test]
fn a_held_invitation_is_released_to_the_new_address_from_the_terminal() {
    let (world, code) = World::invited("Dana");
    world.json(&[
        "--url", &world.url, "enroll", "--code", &code, "--name", "Dana",
    ]);
    let plan = world.dry_run(
        "memberships.grant",
        json!({"project": "prj_184", "subject": "usr_92", "role": "admin"}),
    );
    world.json(&["approve", &plan, "--yes"]);
    world.invoke("memberships.grant", &plan);
    let relay = Recorded::default();
    let dispatch = || {
        world.runtime.block_on(async {
            let now = countersign_engine::ids::now();
            mail::dispatch(&world.state.store, world.state.registry, &relay, now)
                .await
                .unwrap()
        })
    };
    world.runtime.block_on(async {
        let mut w = world.state.store.write().await.unwrap();
        sqlx::query("UPDATE users SET email = 'sam@elsewhere.example' WHERE id = 'usr_92'")
            .execute(&mut *w.tx)
            .await
            .unwrap();
        w.commit().await.unwrap();
    });
    assert_eq!(dispatch().held, 1);

    let listed = world.json(&["mail", "list", &plan]);
    let held = &listed["attention"][0];
    assert_eq!(held["release_to"], "sam@elsewhere.example");
    assert_eq!(held["remedies"], json!(["release", "cancel"]));
    let text = world.cli().args(["mail", "list", &plan]).output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains("A release sends it to sam@elsewhere.example")
            && text.contains("Why: recipient_changed"),
        "{text}"
    );
    let message = held["message_id"].as_i64().unwrap().to_string();
    // Without a terminal to prompt on, nothing is signed unless --yes says so.
    let unasked = world
        .cli()
        .args(["mail", "release", &plan, &message])
        .output()
        .unwrap();
    assert_eq!(unasked.status.code(), Some(2));
    assert_eq!(dispatch(), mail::Pass::default(), "still held");

    let released = world.json(&["mail", "release", &plan, &message, "--yes"]);
    assert_eq!(released["state"], "pending");
    assert_eq!(released["recipient"], "sam@elsewhere.example");
    assert_eq!(dispatch().sent, 1);
    assert_eq!(*relay.0.lock().unwrap(), ["sam@elsewhere.example"]);
    let after = world.json(&["mail", "list", &plan]);
    assert_eq!(after["attention"], json!([]));
    assert_eq!(after["remedies"][0]["remedy"], "release");
    assert_eq!(after["remedies"][0]["approver"], "Dana");
}
