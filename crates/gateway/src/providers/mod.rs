//! Model providers: capabilities whose effect is a paid call outside the gateway, the adapters
//! that make those calls, and the normalizers that turn each provider's answer into seed 002's
//! one envelope.
//!
//! What a capability is (its schema, price table, plan) is the same in every gateway; where its
//! calls go is per gateway: [`Providers`] holds the endpoints and keys, in the gateway's state.

mod capabilities;
mod http;
pub mod openai;
pub mod prices;
pub mod replicate;

use std::fmt;
use std::time::Duration;

use countersign_proto::envelope::Usage;
use countersign_proto::{Credits, ErrorCode};
use serde_json::{Map, Value};

use crate::capabilities::Planned;
use crate::error::{ApiError, ApiResult};

pub use capabilities::pack;

/// The providers the provider pack speaks to, by their normalized identifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// An OpenAI-compatible API: chat completions and audio speech.
    OpenAi,
    /// A Replicate-style predictions API: image and video models.
    Replicate,
}

impl Provider {
    pub fn name(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Replicate => "replicate",
        }
    }

    /// The environment variable a key may come from.
    pub fn key_variable(self) -> &'static str {
        match self {
            Provider::OpenAi => "COUNTERSIGN_OPENAI_API_KEY",
            Provider::Replicate => "COUNTERSIGN_REPLICATE_API_TOKEN",
        }
    }
}

/// A provider key: sent in a header, never printed.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    pub fn new(key: impl Into<String>) -> Secret {
        Secret(key.into())
    }

    fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(…)")
    }
}

/// The keyring entry a gateway's provider key lives under: service `countersign-gateway`,
/// user the provider's name.
pub const KEYRING_SERVICE: &str = "countersign-gateway";

/// Where one provider's calls go.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub base_url: String,
    key: Secret,
}

impl Endpoint {
    pub fn new(base_url: &str, key: Secret) -> Endpoint {
        Endpoint {
            base_url: base_url.trim_end_matches('/').to_owned(),
            key,
        }
    }

    /// The endpoint at `base_url` with the key from the provider's environment variable, or
    /// else from the OS keyring; a key in a file or on the command line is not offered.
    pub fn with_stored_key(provider: Provider, base_url: &str) -> anyhow::Result<Endpoint> {
        if let Ok(key) = std::env::var(provider.key_variable()) {
            if !key.is_empty() {
                return Ok(Endpoint::new(base_url, Secret::new(key)));
            }
        }
        let entry = keyring::Entry::new(KEYRING_SERVICE, provider.name())?;
        let key = entry.get_password().map_err(|e| {
            anyhow::anyhow!(
                "no {} key: set {} or store one in the OS keyring (service {KEYRING_SERVICE}, \
                 user {}): {e}",
                provider.name(),
                provider.key_variable(),
                provider.name()
            )
        })?;
        Ok(Endpoint::new(base_url, Secret::new(key)))
    }
}

/// A gateway's provider endpoints, the one HTTP client they share, and its patience.
#[derive(Debug, Clone)]
pub struct Providers {
    client: reqwest::Client,
    openai: Option<Endpoint>,
    replicate: Option<Endpoint>,
    /// One HTTP exchange's limit.
    pub request_timeout: Duration,
    /// Attempts per exchange when the provider says to come back (429, 503) or was unreachable.
    pub attempts: u32,
    /// How often a running prediction is asked how it stands.
    pub poll_every: Duration,
}

impl Providers {
    pub fn new(openai: Option<Endpoint>, replicate: Option<Endpoint>) -> Providers {
        Providers {
            // Redirects would carry the key to a host nobody configured.
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("a client with rustls and no redirects builds"),
            openai,
            replicate,
            request_timeout: Duration::from_secs(60),
            attempts: 3,
            poll_every: Duration::from_millis(500),
        }
    }

    /// No provider configured: provider plans can be previewed and approved, and their
    /// execution answers `provider_misconfigured`.
    pub fn none() -> Providers {
        Providers::new(None, None)
    }

    fn endpoint(&self, provider: Provider) -> ApiResult<&Endpoint> {
        let endpoint = match provider {
            Provider::OpenAi => self.openai.as_ref(),
            Provider::Replicate => self.replicate.as_ref(),
        };
        endpoint.ok_or_else(|| {
            ApiError::new(
                ErrorCode::ProviderMisconfigured,
                format!(
                    "This gateway has no {} endpoint configured.",
                    provider.name()
                ),
            )
            .from_provider(provider.name())
        })
    }
}

/// The provider pack's settings, fixed when it is registered.
#[derive(Debug, Clone)]
pub struct PackSettings {
    /// Plans whose maximum cost is above this wait for an approver.
    pub approval_above: Credits,
}

impl Default for PackSettings {
    fn default() -> PackSettings {
        PackSettings {
            approval_above: Credits::cents(100),
        }
    }
}

/// What an external capability gets to make its call.
#[derive(Clone, Copy)]
pub struct ProviderCall<'a> {
    pub providers: &'a Providers,
    pub params: &'a Value,
    pub planned: &'a Planned,
    /// The approved maximum: the charge never exceeds it, and a call that would is cut off.
    pub budget: Credits,
}

/// A provider's answer in seed 002's terms.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Output {
    pub content: String,
    pub usage: Usage,
    pub metadata: Map<String, Value>,
    pub images: Vec<Value>,
    pub files: Vec<Value>,
    pub videos: Vec<Value>,
}

/// How a call ended, and what it cost whichever way it ended.
#[derive(Debug, Clone)]
pub struct Called {
    pub provider: &'static str,
    pub outcome: Result<Output, ApiError>,
    /// What the provider's usage says was spent, at most the budget.
    pub charged: Credits,
}

impl Called {
    pub fn failed(provider: &'static str, error: ApiError, charged: Credits) -> Called {
        Called {
            provider,
            outcome: Err(error),
            charged,
        }
    }
}

/// The provider's own keys that no envelope field holds, kept under metadata (seed 002:
/// provider details belong in metadata; clients tolerate keys they do not know).
pub(crate) fn provider_fields(answer: &Map<String, Value>, mapped: &[&str]) -> Value {
    Value::Object(
        answer
            .iter()
            .filter(|(k, _)| !mapped.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}
