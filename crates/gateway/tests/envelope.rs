//! Every capability's invoke answer, success and failure, against the one JSON Schema of the
//! envelope (`docs/envelope.schema.json`): a client renders the envelope's shape, never a
//! provider's internals (seed 002).

use std::collections::BTreeSet;

use crate::common::{approve_by, grant, retention, Gateway, Reply, GRANT};
use countersign_embedded::default_registry;
use countersign_engine::Capability;
use countersign_providers::local::LocalProviders;
use serde_json::{json, Value};

fn schema() -> jsonschema::Validator {
    let text = include_str!("../../../docs/envelope.schema.json");
    jsonschema::validator_for(&serde_json::from_str(text).unwrap()).unwrap()
}

fn assert_envelope(schema: &jsonschema::Validator, what: &str, reply: &Reply) {
    let errors: Vec<String> = schema
        .iter_errors(&reply.body)
        .map(|e| format!("{}: {e}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{what}: {errors:?}\n{}", reply.body);
}

/// A request each registered capability executes with; a capability added without one fails
/// the test instead of going unchecked.
fn request(id: &str) -> Value {
    match id {
        "documents.document.upload" => {
            json!({"project": "prj_421", "filename": "notes.md", "mime_type": "text/markdown", "size_bytes": 512})
        }
        "projects.settings.update" => retention("prj_184", 7),
        GRANT => grant("prj_184", "usr_92", "admin"),
        "groups.members.remove" => {
            json!({"group": "grp_support", "filter": {"employment": "contractor"}})
        }
        "storage.quota.update" => json!({"quota": "sq_product", "quota_bytes": 1_073_741_824u64}),
        "wallet.agent_budget.guard.check" => json!({"estimated_cost_credits": 0.37}),
        "text.generate" => json!({"model": "gpt-4o-mini", "max_tokens": 32,
                                  "messages": [{"role": "user", "content": "Say hello."}]}),
        "speech.synthesize" => json!({"model": "tts-1", "input": "Hello.", "voice": "alloy"}),
        "image.generate" => json!({"model": "black-forest-labs/flux-schnell", "prompt": "An owl"}),
        "video.generate" => json!({"model": "minimax/video-01", "prompt": "An owl", "seconds": 1}),
        "agent.tool_call" => {
            json!({"tool_name": "Bash", "tool_input": {"command": "ls"}, "cwd": "/srv"})
        }
        other => panic!("no request for {other}: add one"),
    }
}

/// Previews, approves as far as needed, and executes; or invokes inline where there is no plan.
async fn execute(gw: &Gateway, capability: Capability) -> (Reply, Option<Value>) {
    let id = capability.id();
    if capability.describe().dry_run == countersign_proto::describe::DryRunMode::NotApplicable {
        let reply = gw
            .invoke_as(&gw.agent, id, json!({"params": request(id)}))
            .await;
        return (reply, None);
    }
    let plan = gw.preview(id, request(id)).await;
    if plan["would_require_approval"] == true {
        let needed = capability.describe().approval.required_approvals;
        let mut approvers = Vec::new();
        for n in 0..needed {
            approvers.push(gw.enroll(&format!("{id} approver {n}")).await);
        }
        approve_by(gw, &plan, &approvers.iter().collect::<Vec<_>>()).await;
    }
    (gw.execute(&plan).await, Some(plan))
}

#[tokio::test]
async fn every_capability_answers_in_the_one_envelope() {
    let schema = schema();
    let local = LocalProviders::start().await.unwrap();
    let gw = Gateway::with_providers(local.providers()).await;
    let mut seen = BTreeSet::new();
    for capability in default_registry().all() {
        let id = capability.id();
        let (reply, plan) = execute(&gw, capability).await;
        assert_eq!(reply.status, 200, "{id}: {}", reply.body);
        assert_envelope(&schema, id, &reply);
        for modality in ["images", "files", "videos"] {
            assert!(reply.body[modality].is_array(), "{id} {modality}");
        }
        let charged = &reply.body["metadata"]["charged"]["amount"];
        assert_eq!(
            &reply.body["usage"]["credits"], charged,
            "{id}: usage says what was charged"
        );

        let failure = match plan {
            Some(plan) => gw.execute(&plan).await,
            None => {
                gw.invoke_as(
                    &gw.agent,
                    id,
                    json!({"params": {"estimated_cost_credits": 1e6}}),
                )
                .await
            }
        };
        assert!(!failure.status.is_success(), "{id}: {}", failure.body);
        assert_envelope(&schema, &format!("{id} failure"), &failure);
        seen.insert(id);
    }
    assert_eq!(seen.len(), 11, "{seen:?}");
}

#[tokio::test]
async fn provider_failures_answer_in_the_error_contract() {
    let schema = schema();
    let local = LocalProviders::start().await.unwrap();
    let mut providers = local.providers();
    providers.poll_every = std::time::Duration::from_millis(20);
    let gw = Gateway::with_providers(providers).await;
    let failing = [
        (
            "text.generate",
            json!({"model": "gpt-4o-mini", "max_tokens": 8,
                                 "messages": [{"role": "user", "content": "[[content-filter]]"}]}),
        ),
        (
            "speech.synthesize",
            json!({"model": "tts-1", "input": "Hi", "voice": "alloy", "format": "mp3"}),
        ),
        (
            "image.generate",
            json!({"model": "black-forest-labs/flux-schnell", "prompt": "[[fail]]"}),
        ),
    ];
    for (id, params) in failing {
        let plan = gw.preview(id, params).await;
        let reply = gw.execute(&plan).await;
        assert_eq!(reply.status, 422, "{id}: {}", reply.body);
        assert_envelope(&schema, id, &reply);
        assert_eq!(reply.body["error"]["code"], "provider_refused");
    }
    let unconfigured = Gateway::new().await;
    let plan = unconfigured
        .preview("text.generate", request("text.generate"))
        .await;
    let reply = unconfigured.execute(&plan).await;
    assert_eq!(reply.status, 502, "{}", reply.body);
    assert_eq!(reply.body["error"]["code"], "provider_misconfigured");
    assert_envelope(&schema, "unconfigured", &reply);
}

#[tokio::test]
async fn an_uploaded_document_is_a_file_of_the_envelope() {
    let gw = Gateway::new().await;
    let capability = default_registry().get("documents.document.upload").unwrap();
    let (reply, _) = execute(&gw, capability).await;
    let file = &reply.body["files"][0];
    assert_eq!(file["name"], "notes.md");
    assert_eq!(file["size_bytes"], 512);
    assert_eq!(file["id"], reply.body["metadata"]["document_id"]);
    assert_eq!(
        reply.body["usage"]["credits"],
        reply.body["metadata"]["charged"]["amount"]
    );
}
