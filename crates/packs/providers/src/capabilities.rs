//! The provider pack: `text.generate`, `speech.synthesize`, `image.generate`, `video.generate`.
//! Each plan is one external call with the range it can cost; the call is cut at that range's
//! maximum (`max_tokens`, a fixed input, a prediction canceled at its time budget) and charged
//! what the provider's usage says within it.

use std::sync::Arc;
use std::time::Duration;

use countersign_proto::describe::{CostClass, Describe, DryRunMode, Preflight};
use countersign_proto::plan::{Assumption, Effect, EffectCost, EffectKind, EstimatedCost};
use countersign_proto::Credits;
use rust_decimal::prelude::ToPrimitive;
use serde::Deserialize;
use serde_json::{json, Value};

use countersign_pack::build;
use countersign_pack::{
    parse, ApiError, ApiResult, ApprovalRule, BoxFuture, Called, Definition, EffectProfile,
    ExternalCall, ExternalCapability, Handle, Kind, Pack, Planned, PlannedEffect,
};

use crate::prices::{self, down, up, ChatPrice, PredictPrice, SpeechPrice};
use crate::replicate::{self, Modality};
use crate::{openai, priced, PackSettings, Provider, ProviderCall, Providers, Spent};

const PROFILE: EffectProfile = EffectProfile {
    kinds: &[EffectKind::ExternalCall],
    irreversible: false,
    external: true,
};

/// The four provider capabilities, approved by a person above `settings.approval_above`, their
/// calls going where `providers` says.
pub fn pack(settings: &PackSettings, providers: Providers) -> Pack {
    let rule = ApprovalRule::AboveCost(settings.approval_above);
    let providers = Arc::new(providers);
    let with = |providers: &Arc<Providers>| Setup {
        rule,
        providers: providers.clone(),
    };
    Pack::new(
        "providers",
        vec![
            Kind::External(Box::new(TextGenerate(with(&providers)))),
            Kind::External(Box::new(SpeechSynthesize(with(&providers)))),
            Kind::External(Box::new(ImageGenerate(with(&providers)))),
            Kind::External(Box::new(VideoGenerate(with(&providers)))),
        ],
    )
}

/// What each provider capability is registered with.
struct Setup {
    rule: ApprovalRule,
    providers: Arc<Providers>,
}

fn describe(id: &str, title: &str, cost_class: CostClass, schema: Value) -> Describe {
    build::describe(
        id,
        title,
        schema,
        DryRunMode::Required,
        (Preflight::Estimate, cost_class),
        1,
    )
}

/// One call, priced `min`–`max`, with the provider's usage deciding within the range.
fn one_call(
    provider: Provider,
    model: &str,
    description: String,
    (min, max): (Credits, Credits),
) -> Planned {
    let effect = Effect {
        id: "eff_1".to_owned(),
        effect_type: "provider_call".to_owned(),
        kind: EffectKind::ExternalCall,
        derived: false,
        cause: None,
        resource: format!("providers/{}/models/{model}", provider.name()),
        description,
        reversible: true,
        external: true,
        changes: vec![],
        subjects: None,
        cost: Some(EffectCost {
            amount: max,
            currency: "credits".to_owned(),
        }),
    };
    let mut planned = build::nothing(min);
    planned.estimated_cost = EstimatedCost {
        amount_min: min,
        amount_max: max,
        currency: "credits".to_owned(),
    };
    planned.effects = vec![PlannedEffect::new(effect)];
    if min != max {
        planned.assumptions.push(Assumption {
            dependency: provider.name().to_owned(),
            description: format!(
                "The provider's usage report decides the charge between {min} and {max} credits."
            ),
            execution_can_proceed_without: false,
        });
    }
    planned
}

fn choose<T: Copy>(models: &[T], name: impl Fn(&T) -> &str, model: &str) -> ApiResult<T> {
    models
        .iter()
        .find(|m| name(m) == model)
        .copied()
        .ok_or_else(|| {
            ApiError::validation("/params/model", format!("No price for model {model}."))
        })
}

fn enum_of<T>(models: &[T], name: impl Fn(&T) -> &str) -> Value {
    json!(models.iter().map(name).collect::<Vec<_>>())
}

/// One provider capability: its description, its `plan` (which reads no state) and its `call`
/// to `$provider`.
macro_rules! provider_capability {
    ($name:ident, $id:literal, $title:literal, $class:expr, $schema:expr,
     plan: $plan:ident, call: $call:ident, provider: $provider:expr) => {
        struct $name(Setup);

        impl Definition for $name {
            fn id(&self) -> &'static str {
                $id
            }
            fn title(&self) -> &'static str {
                $title
            }
            fn describe(&self) -> Describe {
                describe($id, $title, $class, $schema)
            }
            fn effects(&self) -> EffectProfile {
                PROFILE
            }
            fn approval(&self) -> ApprovalRule {
                self.0.rule
            }
            fn plan<'a>(
                &'a self,
                _: &'a mut Handle<'_>,
                params: &'a Value,
            ) -> BoxFuture<'a, ApiResult<Planned>> {
                Box::pin(async move { $plan(&parse(params)?) })
            }
        }

        impl ExternalCapability for $name {
            fn ready(&self) -> ApiResult<()> {
                self.0.providers.ready($provider)
            }

            fn call<'a>(&'a self, call: ExternalCall<'a>) -> BoxFuture<'a, ApiResult<Called>> {
                Box::pin($call(ProviderCall {
                    providers: &self.0.providers,
                    params: call.params,
                    budget: call.budget,
                }))
            }
        }
    };
}

// ---- text.generate -------------------------------------------------------------------------

#[derive(Deserialize)]
struct TextParams {
    model: String,
    messages: Vec<Message>,
    max_tokens: u64,
    temperature: Option<f64>,
}

#[derive(Deserialize, serde::Serialize)]
struct Message {
    role: String,
    content: String,
}

fn text_schema() -> Value {
    json!({
        "type": "object", "additionalProperties": false,
        "required": ["model", "messages", "max_tokens"],
        "properties": {
            "model": {"enum": enum_of(&prices::chat_models(), |m| m.model)},
            "messages": {"type": "array", "minItems": 1, "maxItems": 64, "items": {
                "type": "object", "additionalProperties": false,
                "required": ["role", "content"],
                "properties": {
                    "role": {"enum": ["system", "user", "assistant"]},
                    "content": {"type": "string", "minLength": 1, "maxLength": 32000}
                }}},
            "max_tokens": {"type": "integer", "minimum": 1, "maximum": 4096},
            "temperature": {"type": "number", "minimum": 0, "maximum": 2}
        }
    })
}

fn text_price(p: &TextParams) -> ApiResult<ChatPrice> {
    choose(&prices::chat_models(), |m| m.model, &p.model)
}

fn text_range(p: &TextParams, price: &ChatPrice) -> (u64, u64, Credits, Credits) {
    let messages: Vec<(&str, &str)> = p
        .messages
        .iter()
        .map(|m| (m.role.as_str(), m.content.as_str()))
        .collect();
    let (low, high) = prices::chat_input_tokens(&messages);
    (
        low,
        high,
        down(price.cost(low, 0)),
        up(price.cost(high, p.max_tokens)),
    )
}

fn text_plan(p: &TextParams) -> ApiResult<Planned> {
    let price = text_price(p)?;
    let (low, high, min, max) = text_range(p, &price);
    let description = format!(
        "Send {} message{} (~{low}–{high} tokens) to {} and take at most {} tokens back.",
        p.messages.len(),
        if p.messages.len() == 1 { "" } else { "s" },
        p.model,
        p.max_tokens
    );
    Ok(one_call(
        Provider::OpenAi,
        &p.model,
        description,
        (min, max),
    ))
}

provider_capability!(
    TextGenerate,
    "text.generate",
    "Generate text with a model",
    CostClass::Metered,
    text_schema(),
    plan: text_plan,
    call: text_call,
    provider: Provider::OpenAi
);

async fn text_call(call: ProviderCall<'_>) -> ApiResult<Called> {
    let p: TextParams = parse(call.params)?;
    let price = text_price(&p)?;
    let mut request = json!({"model": p.model, "messages": p.messages,
                             "max_tokens": p.max_tokens});
    if let Some(t) = p.temperature {
        request["temperature"] = json!(t);
    }
    let outcome = openai::chat(call.providers, &request).await;
    Ok(priced(
        Provider::OpenAi.name(),
        outcome,
        call.budget,
        |end| match end {
            Ok(out) => Some(up(
                price.cost(out.usage.input_tokens, out.usage.output_tokens)
            )),
            Err(Spent::Tokens { input, output }) => Some(up(price.cost(input, output))),
            Err(_) => None,
        },
    ))
}

// ---- speech.synthesize ---------------------------------------------------------------------

#[derive(Deserialize)]
struct SpeechParams {
    model: String,
    input: String,
    voice: String,
    #[serde(default = "wav")]
    format: String,
}

fn wav() -> String {
    "wav".to_owned()
}

fn speech_schema() -> Value {
    json!({
        "type": "object", "additionalProperties": false,
        "required": ["model", "input", "voice"],
        "properties": {
            "model": {"enum": enum_of(&prices::speech_models(), |m| m.model)},
            "input": {"type": "string", "minLength": 1, "maxLength": 4096},
            "voice": {"enum": ["alloy", "echo", "fable", "onyx", "nova", "shimmer"]},
            "format": {"enum": ["wav", "mp3", "opus", "flac", "aac"]}
        }
    })
}

fn speech_price(p: &SpeechParams) -> ApiResult<SpeechPrice> {
    choose(&prices::speech_models(), |m| m.model, &p.model)
}

fn speech_plan(p: &SpeechParams) -> ApiResult<Planned> {
    let price = speech_price(p)?;
    let characters = p.input.chars().count() as u64;
    let cost = up(price.cost(characters));
    let description = format!(
        "Read {characters} characters aloud with {} ({} voice) as {} audio.",
        p.model, p.voice, p.format
    );
    Ok(one_call(
        Provider::OpenAi,
        &p.model,
        description,
        (cost, cost),
    ))
}

provider_capability!(
    SpeechSynthesize,
    "speech.synthesize",
    "Synthesize speech",
    CostClass::Metered,
    speech_schema(),
    plan: speech_plan,
    call: speech_call,
    provider: Provider::OpenAi
);

async fn speech_call(call: ProviderCall<'_>) -> ApiResult<Called> {
    let p: SpeechParams = parse(call.params)?;
    let price = speech_price(&p)?;
    let characters = p.input.chars().count() as u64;
    let request = json!({"model": p.model, "input": p.input, "voice": p.voice,
                         "response_format": p.format});
    let outcome = openai::speech(call.providers, &request).await;
    Ok(priced(
        Provider::OpenAi.name(),
        outcome,
        call.budget,
        |end| {
            let out = end.ok()?;
            out.usage.units.insert("characters".to_owned(), characters);
            out.metadata.insert("model".to_owned(), json!(p.model));
            Some(up(price.cost(characters)))
        },
    ))
}

// ---- image.generate and video.generate -----------------------------------------------------

#[derive(Deserialize)]
struct ImageParams {
    model: String,
    prompt: String,
    #[serde(default = "square")]
    size: String,
    #[serde(default = "one")]
    count: u64,
}

fn square() -> String {
    "1024x1024".to_owned()
}

fn one() -> u64 {
    1
}

#[derive(Deserialize)]
struct VideoParams {
    model: String,
    prompt: String,
    seconds: u64,
}

fn image_schema() -> Value {
    json!({
        "type": "object", "additionalProperties": false,
        "required": ["model", "prompt"],
        "properties": {
            "model": {"enum": enum_of(&prices::image_models(), |m| m.model)},
            "prompt": {"type": "string", "minLength": 1, "maxLength": 2000},
            "size": {"enum": ["512x512", "1024x1024"]},
            "count": {"type": "integer", "minimum": 1, "maximum": 4}
        }
    })
}

fn video_schema() -> Value {
    json!({
        "type": "object", "additionalProperties": false,
        "required": ["model", "prompt", "seconds"],
        "properties": {
            "model": {"enum": enum_of(&prices::video_models(), |m| m.model)},
            "prompt": {"type": "string", "minLength": 1, "maxLength": 2000},
            "seconds": {"type": "integer", "minimum": 1, "maximum": 10}
        }
    })
}

fn image_price(p: &ImageParams) -> ApiResult<PredictPrice> {
    choose(&prices::image_models(), |m| m.model, &p.model)
}

fn video_price(p: &VideoParams) -> ApiResult<PredictPrice> {
    choose(&prices::video_models(), |m| m.model, &p.model)
}

fn image_plan(p: &ImageParams) -> ApiResult<Planned> {
    let price = image_price(p)?;
    let (min, max, seconds) = price.range(p.count);
    let description = format!(
        "Generate {} {} image{} with {}, at most {seconds} s of prediction.",
        p.count,
        p.size,
        if p.count == 1 { "" } else { "s" },
        p.model
    );
    Ok(one_call(
        Provider::Replicate,
        &p.model,
        description,
        (min, max),
    ))
}

fn video_plan(p: &VideoParams) -> ApiResult<Planned> {
    let price = video_price(p)?;
    let (min, max, seconds) = price.range(p.seconds);
    let description = format!(
        "Generate a {}-second video with {}, at most {seconds} s of prediction.",
        p.seconds, p.model
    );
    Ok(one_call(
        Provider::Replicate,
        &p.model,
        description,
        (min, max),
    ))
}

provider_capability!(
    ImageGenerate,
    "image.generate",
    "Generate images",
    CostClass::ExternalPassthrough,
    image_schema(),
    plan: image_plan,
    call: image_call,
    provider: Provider::Replicate
);
provider_capability!(
    VideoGenerate,
    "video.generate",
    "Generate a video",
    CostClass::ExternalPassthrough,
    video_schema(),
    plan: video_plan,
    call: video_call,
    provider: Provider::Replicate
);

/// A prediction charged by its billed time, within the budget; one whose time is not known
/// (canceled, cut off, without metrics) is charged the budget.
async fn predict(
    call: ProviderCall<'_>,
    price: PredictPrice,
    input: Value,
    modality: Modality,
    units: u64,
) -> ApiResult<Called> {
    let (_, _, seconds) = price.range(units);
    let longest = Duration::from_secs_f64(seconds.to_f64().unwrap_or(0.0));
    let outcome = replicate::predict(call.providers, price.model, &input, modality, longest).await;
    Ok(priced(
        Provider::Replicate.name(),
        outcome,
        call.budget,
        |end| match end {
            Ok(out) => {
                let (unit, n) = match modality {
                    Modality::Images => ("images", out.images.len()),
                    Modality::Videos => ("videos", out.videos.len()),
                };
                out.usage.units.insert(unit.to_owned(), n as u64);
                let ms = *out.usage.units.get("predict_ms")?;
                Some(up(price.cost_of_ms(ms)))
            }
            Err(Spent::PredictMs(ms)) => Some(up(price.cost_of_ms(ms))),
            Err(_) => None,
        },
    ))
}

async fn image_call(call: ProviderCall<'_>) -> ApiResult<Called> {
    let p: ImageParams = parse(call.params)?;
    let price = image_price(&p)?;
    let (width, height) = p.size.split_once('x').unwrap_or(("1024", "1024"));
    let input = json!({"prompt": p.prompt, "num_outputs": p.count,
                       "width": width.parse::<u32>().unwrap_or(1024),
                       "height": height.parse::<u32>().unwrap_or(1024)});
    predict(call, price, input, Modality::Images, p.count).await
}

async fn video_call(call: ProviderCall<'_>) -> ApiResult<Called> {
    let p: VideoParams = parse(call.params)?;
    let price = video_price(&p)?;
    let input = json!({"prompt": p.prompt, "duration": p.seconds});
    predict(call, price, input, Modality::Videos, p.seconds).await
}
