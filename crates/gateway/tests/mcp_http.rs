//! `/mcp` admits only agents, before any MCP session starts; tool hints follow each
//! capability's declared effects, and no preview holds an effect its capability did not declare.

use std::collections::BTreeSet;

use crate::common::{assert_error, grant, retention, Gateway, Reply, GRANT};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use countersign_embedded::default_registry;
use countersign_engine::Capability;
use countersign_gateway::mcp::annotations;
use countersign_proto::plan::{EffectKind, Preview};
use serde_json::{json, Value};

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}})
}

async fn post_mcp(gw: &Gateway, token: Option<&str>) -> Reply {
    let mut request = Request::post("/mcp")
        .header("host", "gateway.example")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    gw.send(request.body(Body::from(initialize().to_string())).unwrap())
        .await
}

#[tokio::test]
async fn only_an_agent_token_opens_mcp() {
    let gw = Gateway::new().await;
    assert_error(&post_mcp(&gw, None).await, "unauthenticated", 401);
    let unknown = post_mcp(&gw, Some("csa_not_a_token")).await;
    assert_error(&unknown, "unauthenticated", 401);
    assert!(unknown.body["metadata"]["trace_id"]
        .as_str()
        .is_some_and(|t| t.starts_with("trc_")));
    let approver = gw.enroll("Dana").await;
    assert_error(
        &post_mcp(&gw, Some(&approver.token)).await,
        "forbidden",
        403,
    );

    let agent = post_mcp(&gw, Some(&gw.agent)).await;
    assert_eq!(agent.status, StatusCode::OK, "{}", agent.body);
    assert_eq!(
        agent.body["result"]["serverInfo"]["name"],
        "countersign-gateway"
    );
    assert!(agent.body["result"]["capabilities"]["tools"].is_object());
}

#[test]
fn hints_follow_the_declared_effects() {
    let hints = |c: Capability| {
        let a = annotations(c);
        (
            a.read_only_hint,
            a.destructive_hint,
            a.open_world_hint,
            a.idempotent_hint,
        )
    };
    let (f, t) = (Some(false), Some(true));
    assert_eq!(hints(cap("wallet.agent_budget.guard.check")), (t, f, f, t));
    assert_eq!(hints(cap("groups.members.remove")), (f, t, t, f));
    assert_eq!(hints(cap(GRANT)), (f, f, t, f));
    assert_eq!(hints(cap("projects.settings.update")), (f, f, f, f));
    assert_eq!(hints(cap("storage.quota.update")), (f, f, f, f));
    assert_eq!(hints(cap("documents.document.upload")), (f, f, f, f));
    for provider in [
        "text.generate",
        "speech.synthesize",
        "image.generate",
        "video.generate",
    ] {
        assert_eq!(hints(cap(provider)), (f, f, t, f), "{provider}");
    }
}

fn cap(id: &str) -> Capability {
    default_registry().get(id).unwrap()
}

/// What the previews of one capability showed, to hold against what it declares.
#[derive(Default)]
struct Seen {
    kinds: BTreeSet<String>,
    irreversible: bool,
    external: bool,
}

fn kind_name(kind: EffectKind) -> String {
    serde_json::to_value(kind)
        .unwrap()
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn previews_hold_exactly_the_declared_effects() {
    let gw = Gateway::new().await;
    let requests = [
        (cap("projects.settings.update"), retention("prj_184", 7)),
        (
            cap("groups.members.remove"),
            json!({"group": "grp_support", "filter": {"employment": "contractor"}}),
        ),
        (cap(GRANT), grant("prj_184", "usr_92", "admin")),
        (
            cap("storage.quota.update"),
            json!({"quota": "sq_product", "quota_bytes": 1}),
        ),
        (
            cap("documents.document.upload"),
            json!({"project": "prj_421", "filename": "a.md", "mime_type": "text/markdown", "size_bytes": 5}),
        ),
        (
            cap("text.generate"),
            json!({"model": "gpt-4o-mini", "max_tokens": 8, "messages": [{"role": "user", "content": "Hi"}]}),
        ),
        (
            cap("speech.synthesize"),
            json!({"model": "tts-1", "input": "Hi", "voice": "alloy"}),
        ),
        (
            cap("image.generate"),
            json!({"model": "stability-ai/sdxl", "prompt": "An owl"}),
        ),
        (
            cap("video.generate"),
            json!({"model": "minimax/video-01", "prompt": "An owl", "seconds": 1}),
        ),
    ];
    let mut seen: Vec<(Capability, Seen)> = Vec::new();
    for (capability, params) in requests {
        let preview: Preview =
            serde_json::from_value(gw.preview(capability.id(), params).await).unwrap();
        let mut s = Seen::default();
        for effect in &preview.effects {
            s.kinds.insert(kind_name(effect.kind));
            s.irreversible |= !effect.reversible && !effect.external;
            s.external |= effect.external;
        }
        seen.push((capability, s));
    }
    seen.push((cap("wallet.agent_budget.guard.check"), Seen::default()));
    for (capability, s) in seen {
        let declared = capability.effects();
        let kinds: BTreeSet<String> = declared.kinds.iter().map(|k| kind_name(*k)).collect();
        let id = capability.id();
        assert_eq!(s.kinds, kinds, "{id}: effect kinds");
        assert_eq!(s.irreversible, declared.irreversible, "{id}: irreversible");
        assert_eq!(s.external, declared.external, "{id}: external");
    }
}

/// One `tools/call` of the test agent's: its result.
#[tokio::test]
async fn a_body_that_is_no_json_rpc_message_is_answered_in_json_rpc() {
    let gw = Gateway::new().await;
    for (body, code) in [
        ("", -32700),
        ("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\"", -32700),
        ("[1, 2", -32700),
        ("{}", -32600),
        (
            "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"tools/call\", \"params\": 7}",
            -32600,
        ),
    ] {
        let request = Request::post("/mcp")
            .header("host", "gateway.example")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("authorization", format!("Bearer {}", gw.agent))
            .body(Body::from(body))
            .unwrap();
        let reply = gw.send(request).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{body}: {}",
            reply.body
        );
        assert_eq!(reply.body["jsonrpc"], "2.0");
        assert_eq!(reply.body["id"], Value::Null);
        assert_eq!(reply.body["error"]["code"], code, "{body}: {}", reply.body);
    }
}

async fn call_tool(gw: &Gateway, name: &str, arguments: Value) -> Value {
    gw.tool(&gw.agent, name, arguments).await["result"].clone()
}

/// Seed 004: a preview is evidence for a decision, not permission to write. A quota cut that
/// needs nobody's approval but blocks uploads in three projects is shown, derived effect and
/// warning, and runs only when the agent then executes it.
#[tokio::test]
async fn a_capability_tool_previews_and_stops_and_execute_runs_the_plan() {
    let gw = Gateway::new().await;
    let before = gw.snapshot().await;
    let cut = json!({"quota": "sq_product", "quota_bytes": 80_000_000});
    let result = call_tool(&gw, "storage.quota.update", cut).await;
    assert_eq!(result["isError"], false, "{result}");
    let answer = &result["structuredContent"];
    assert_eq!(answer["status"], "approved");
    assert_eq!(answer["next"], json!(["countersign_execute"]));
    let plan = &answer["plan"];
    assert_eq!(plan["effects"][1]["type"], "uploads_blocked");
    assert_eq!(plan["validation"][0]["code"], "uploads_blocked");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("Nothing has run") && text.contains("uploads_blocked"),
        "{text}"
    );
    let mut after = gw.snapshot().await;
    for bookkeeping in ["plans", "plan_subjects", "preview_audit", "plan_reads"] {
        after.remove(bookkeeping);
    }
    let mut unchanged = before.clone();
    for bookkeeping in ["plans", "plan_subjects", "preview_audit", "plan_reads"] {
        unchanged.remove(bookkeeping);
    }
    assert_eq!(after, unchanged, "the preview wrote nothing of the world");

    let plan_id = answer["plan_id"].clone();
    let ran = call_tool(&gw, "countersign_execute", json!({"plan_id": plan_id})).await;
    assert_eq!(ran["isError"], false, "{ran}");
    assert_eq!(ran["structuredContent"]["success"], true);
    assert_ne!(gw.snapshot().await, before, "the execution wrote");
}

#[tokio::test]
async fn a_capability_tool_takes_expected_revisions_and_an_idempotency_key() {
    let gw = Gateway::new().await;
    let params = retention("prj_184", 14);
    let first = call_tool(&gw, "projects.settings.update", params.clone()).await;
    let read = &first["structuredContent"]["plan"]["read_revisions"][0];
    let resource = read["resource"].as_str().unwrap();

    let mut moved = params.clone();
    moved["countersign_expected_revisions"] = json!({ resource: "1" });
    let refused = call_tool(&gw, "projects.settings.update", moved).await;
    assert_eq!(refused["isError"], true, "{refused}");
    let validation = &refused["structuredContent"]["error"]["details"]["validation"];
    assert!(
        validation
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["code"] == "version_conflict"),
        "{refused}"
    );

    let mut keyed = params.clone();
    keyed["countersign_idempotency_key"] = json!("retention-14");
    let once = call_tool(&gw, "projects.settings.update", keyed.clone()).await;
    let again = call_tool(&gw, "projects.settings.update", keyed).await;
    let plan_id = |r: &Value| {
        let s = &r["structuredContent"];
        s["plan_id"].as_str().map(str::to_owned)
    };
    assert!(plan_id(&once).is_some(), "{once}");
    assert_eq!(plan_id(&once), plan_id(&again), "{again}");
}
