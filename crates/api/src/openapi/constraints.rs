//! The bounds the server enforces, stated in the description from the same constants the checks
//! use: page sizes, the formats of keys, nonces and cursors, the limits on params (`bounds`),
//! each capability's own params on its dry run, and which capabilities take params at invoke
//! (each on a path of its own) rather than only a plan.

use countersign_engine::plan::bounds::{
    MAX_DEPTH, MAX_EXPECTED, MAX_ITEMS, MAX_KEY, MAX_OBSERVED, MAX_RESOURCE, MAX_STRING, MAX_TOKEN,
};
use countersign_engine::{plan::reads, queue, Capability, Registry};
use countersign_proto::describe::DryRunMode;
use countersign_proto::dsse::DECISION_PAYLOAD_TYPE;
use countersign_proto::keys::KEY_PAYLOAD_TYPE;
use countersign_proto::standing::STANDING_PAYLOAD_TYPE;
use serde_json::{json, Value};

/// 16 to 128 base64url characters (`enrollment::nonce_is_valid`).
const NONCE: &str = "^[A-Za-z0-9_-]{16,128}$";
/// 32 bytes of unpadded base64url: 42 characters and a last one that carries 2 bits only. Whether
/// the bytes are a point of the curve no pattern can say: an enrollment answers for its code
/// first, so a made-up code with such a key is refused as unknown, not as malformed.
const PUBLIC_KEY: &str = "^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]=*$";

pub fn apply(api: &mut Value, registry: &'static Registry) {
    let all: Vec<&str> = registry.all().map(|c| c.id()).collect();
    let ids = |ids: &[&str]| json!({"type": "string", "enum": ids});
    param(api, "/v1/capabilities/{id}", "get", "id", ids(&all));

    let page = |max: u32| json!({"type": "integer", "minimum": 1, "maximum": max});
    param(api, "/v1/approvals", "get", "limit", page(queue::MAX_PAGE));
    param(
        api,
        "/v1/approvals",
        "get",
        "status",
        json!({"type": "string", "enum": ["pending"]}),
    );
    let subjects = "/v1/plans/{id}/effects/{effect}/subjects";
    param(api, subjects, "get", "limit", page(reads::MAX_PAGE));
    // Cursors are hex of the text they stand after (`summaries::cursor_after`, `cursors`); ids
    // and times are ASCII.
    let cursor = |pattern: &str| json!({"type": "string", "pattern": pattern});
    param(
        api,
        subjects,
        "get",
        "cursor",
        cursor("^c_.+_(?:[2-7][0-9a-f])+$"),
    );
    let queue_cursor = "^q_(?:[2-7][0-9a-f])*0a(?:[2-7][0-9a-f])*$";
    param(api, "/v1/approvals", "get", "cursor", cursor(queue_cursor));
    let standing_cursor = "^s_(?:[2-7][0-9a-f])*0a(?:[2-7][0-9a-f])*$";
    param(
        api,
        "/v1/standing",
        "get",
        "cursor",
        cursor(standing_cursor),
    );

    let schemas = &mut api["components"]["schemas"];
    schemas["ParamsValue"] = params_value(0);
    for depth in 1..=MAX_DEPTH {
        schemas[format!("ParamsValue{depth}")] = params_value(depth);
    }
    let nonce = json!({"type": "string", "pattern": NONCE});
    let public_key = json!({"type": "string", "pattern": PUBLIC_KEY});
    schemas["IdentityRequest"]["properties"]["nonce"] = nonce.clone();
    schemas["BoundEnrollRequest"]["properties"]["nonce"] = nonce;
    schemas["BoundEnrollRequest"]["properties"]["public_key"] = public_key.clone();
    schemas["EnrollRequest"]["properties"]["public_key"] = public_key;

    // An optional member may be `null`, which the server reads as absent.
    let token = json!({"type": ["string", "null"], "maxLength": MAX_TOKEN});
    let params = json!({"$ref": "#/components/schemas/ParamsValue"});
    let dry_run = &mut schemas["DryRunRequest"]["properties"];
    dry_run["params"] = params.clone();
    dry_run["idempotency_key"] = token.clone();
    dry_run["expected_revisions"] = json!({
        "type": ["object", "null"],
        "maxProperties": MAX_EXPECTED,
        "propertyNames": {"maxLength": MAX_RESOURCE},
        "additionalProperties": {"type": "string", "maxLength": MAX_TOKEN},
    });

    // The template invokes a plan; `null` params count as absent.
    schemas["InvokeRequest"] = json!({
        "type": "object",
        "additionalProperties": false,
        "description": "An approved plan's execution.",
        "properties": {
            "plan_id": {"type": "string", "maxLength": MAX_TOKEN},
            "idempotency_key": token,
            "params": {"type": "null"},
            "observed": {
                "type": ["object", "null"],
                "description": "Revisions the agent observes now of resources only it can read (docs/agent-hook.md).",
                "maxProperties": MAX_EXPECTED,
                "propertyNames": {"maxLength": MAX_OBSERVED},
                "additionalProperties": {"type": "string", "maxLength": MAX_TOKEN},
            },
        },
        "required": ["plan_id"],
    });
    envelope(api, "/v1/plans/{id}/decisions", DECISION_PAYLOAD_TYPE);
    envelope(api, "/v1/approvers/keys", KEY_PAYLOAD_TYPE);
    envelope(api, "/v1/standing", STANDING_PAYLOAD_TYPE);
    dry_run_paths(api, registry);
    invoke_paths(api, registry, &token);
}

/// Each capability with a preview has its dry run described on a path of its own, its params its
/// input schema, in place of the template: a client generated from the description sends params
/// that can become a plan. (Others are answered `valid: false` with what to fix.)
fn dry_run_paths(api: &mut Value, registry: &'static Registry) {
    let paths = api["paths"].as_object_mut().expect("paths");
    let template = paths
        .remove("/v1/capabilities/{id}/dry_run")
        .expect("the dry run is described");
    for capability in registry
        .all()
        .filter(|c| c.describe().dry_run != DryRunMode::NotApplicable)
    {
        let id = capability.id();
        let mut own = template["post"].clone();
        own["operationId"] = json!(format!("dry_run_{id}"));
        own["parameters"] = json!([]);
        let mut body = api["components"]["schemas"]["DryRunRequest"].clone();
        body["properties"]["params"] = params_of(capability);
        own["requestBody"]["content"]["application/json"]["schema"] = body;
        api["paths"][format!("/v1/capabilities/{id}/dry_run")] = json!({"post": own});
    }
}

/// A capability's params: its input schema, within the bounds every request keeps.
fn params_of(capability: Capability) -> Value {
    json!({"allOf": [
        capability.describe().input_schema.clone(),
        {"$ref": "#/components/schemas/ParamsValue"},
    ]})
}

/// A capability that runs without a plan (`dry_run` other than `required`) takes its own params
/// at invoke: it gets a path of its own whose params are its input schema, beside the template,
/// which then names only the capabilities that execute a plan alone.
fn invoke_paths(api: &mut Value, registry: &'static Registry, token: &Value) {
    let template = "/v1/capabilities/{id}/invoke";
    let (by_plan, direct): (Vec<_>, Vec<_>) = registry
        .all()
        .partition(|c| c.describe().dry_run == DryRunMode::Required);
    let operation = api["paths"][template]["post"].clone();
    for capability in direct {
        let mut own = operation.clone();
        let id = capability.id();
        own["operationId"] = json!(format!("invoke_{id}"));
        own["parameters"] = json!([]);
        let params = params_of(capability);
        own["requestBody"]["content"]["application/json"]["schema"] = json!({
            "type": "object",
            "additionalProperties": false,
            "description": "An approved plan's execution, or params this capability runs without one.",
            "properties": {
                "plan_id": token,
                "idempotency_key": token,
                "params": {"anyOf": [params, {"type": "null"}]},
            },
            "oneOf": [
                {"required": ["plan_id"], "properties": {"plan_id": {"type": "string"}}},
                {"required": ["params"], "properties": {"params": {"not": {"type": "null"}}}},
            ],
        });
        api["paths"][format!("/v1/capabilities/{id}/invoke")] = json!({"post": own});
    }
    let by_plan: Vec<&str> = by_plan.iter().map(|c| c.id()).collect();
    let ids = json!({"type": "string", "enum": by_plan});
    param(api, template, "post", "id", ids);
}

/// The DSSE envelope an operation takes: its payload type, one signature, standard base64 (with
/// its unused bits zero, as the decoder asks). A made-up envelope of this form is refused for its
/// signature (`bad_signature`), which is checked before the payload is read.
fn envelope(api: &mut Value, path: &str, payload_type: &str) {
    const BASE64: &str =
        "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)?$";
    // 64 bytes: 85 characters and one that carries 2 bits.
    const SIGNATURE: &str = "^[A-Za-z0-9+/]{85}[AQgw]==$";
    let body = &mut api["paths"][path]["post"]["requestBody"]["content"]["application/json"];
    body["schema"] = json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["payloadType", "payload", "signatures"],
        "properties": {
            "payloadType": {"const": payload_type},
            "payload": {"type": "string", "pattern": BASE64},
            "signatures": {
                "type": "array",
                "minItems": 1,
                "maxItems": 1,
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["keyid", "sig"],
                    "properties": {
                        "keyid": {"type": "string"},
                        "sig": {"type": "string", "pattern": SIGNATURE},
                    },
                },
            },
        },
    });
}

/// Sets the schema of the parameter `name` of one operation.
fn param(api: &mut Value, path: &str, method: &str, name: &str, schema: Value) {
    let parameters = api["paths"][path][method]["parameters"]
        .as_array_mut()
        .unwrap_or_else(|| panic!("{method} {path} has parameters"));
    let parameter = parameters
        .iter_mut()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("{method} {path} has a parameter {name}"));
    parameter["schema"] = schema;
}

/// A value of the params `depth` levels down (`bounds::walk`): strings, member names, arrays and
/// objects bounded, and a container at the deepest level empty.
fn params_value(depth: usize) -> Value {
    let (items, inner) = if depth == MAX_DEPTH {
        (0, json!(false))
    } else {
        let next = format!("#/components/schemas/ParamsValue{}", depth + 1);
        (MAX_ITEMS, json!({"$ref": next}))
    };
    json!({"oneOf": [
        {"type": ["null", "boolean", "number"]},
        {"type": "string", "maxLength": MAX_STRING},
        {"type": "array", "maxItems": items, "items": inner},
        {"type": "object", "maxProperties": items, "propertyNames": {"maxLength": MAX_KEY},
         "additionalProperties": inner},
    ]})
}
