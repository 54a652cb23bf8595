//! Model providers: capabilities whose effect is a paid call outside the gateway (text, speech,
//! image, video), the adapters that make those calls, the price tables, the normalizers that
//! turn each provider's answer into seed 002's one envelope, and a local provider for the demo
//! and the tests.
//!
//! What a capability is (its schema, price table, plan) is the same in every gateway; where its
//! calls go is given when the pack is registered: [`Providers`] holds the endpoints and keys.
//!
//! A capability pack like any team's: it depends on `countersign-pack` (and what its job needs:
//! reqwest for the calls, axum for the local provider), never on the engine or the server.

mod capabilities;
mod http;
pub mod local;
pub mod openai;
pub mod prices;
pub mod replicate;

use std::fmt;
use std::time::Duration;

use countersign_pack::{ApiError, ApiResult, Called, Output};
use countersign_proto::{Credits, ErrorCode};
use serde_json::{Map, Value};

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
        check_base_url(base_url)?;
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

/// A base URL the key may be sent to: http(s) with a host and nothing that could carry a
/// secret of its own (user info, query); plain http only to this machine.
fn check_base_url(base_url: &str) -> anyhow::Result<()> {
    let url = reqwest::Url::parse(base_url)
        .map_err(|e| anyhow::anyhow!("the provider URL {base_url:?} does not parse: {e}"))?;
    let Some(host) = url.host_str() else {
        anyhow::bail!("the provider URL {base_url:?} names no host");
    };
    let loopback = countersign_proto::loopback::is_loopback_host(host);
    anyhow::ensure!(
        url.username().is_empty() && url.password().is_none() && url.query().is_none(),
        "the provider URL must not carry user info or a query: keys come from the environment \
         or the keyring"
    );
    anyhow::ensure!(
        url.scheme() == "https" || (url.scheme() == "http" && loopback),
        "the provider URL must be https (plain http only on this machine): the key travels with \
         every call"
    );
    Ok(())
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

    /// Refuses, before anything is reserved or sent, a call to a provider with no endpoint.
    pub fn ready(&self, provider: Provider) -> ApiResult<()> {
        self.endpoint(provider).map(|_| ())
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

/// What a provider capability's call gets: the endpoints, the params, the approved maximum
/// (the charge never exceeds it, and a call that would is cut off).
#[derive(Clone, Copy)]
pub struct ProviderCall<'a> {
    pub providers: &'a Providers,
    pub params: &'a Value,
    pub budget: Credits,
}

/// What a failed call may have cost at the provider, which decides what the wallet pays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spent {
    /// The provider certainly did no work: nothing was sent, or it said so (4xx, 429, 503).
    Nothing,
    /// It answered with its token usage (a refusal, a filtered answer).
    Tokens { input: u64, output: u64 },
    /// It billed this much prediction time.
    PredictMs(u64),
    /// The work may have been done and billed, and the answer does not say how much: a paid
    /// request that timed out, an answer that broke off or makes no sense, a prediction canceled.
    Unknown,
}

/// A call that did not produce its output.
#[derive(Debug, Clone)]
pub struct Failure {
    pub error: ApiError,
    pub spent: Spent,
}

impl Failure {
    pub fn unknown(error: ApiError) -> Failure {
        Failure {
            error,
            spent: Spent::Unknown,
        }
    }
}

impl From<ApiError> for Failure {
    fn from(error: ApiError) -> Failure {
        Failure {
            error,
            spent: Spent::Nothing,
        }
    }
}

/// A call's end in credits: usage priced by `price` (capped at the budget), the budget when
/// the cost is unknown, nothing when nothing was done.
pub fn priced(
    provider: &'static str,
    outcome: Result<Output, Failure>,
    budget: Credits,
    price: impl FnOnce(Result<&mut Output, Spent>) -> Option<Credits>,
) -> Called {
    let zero = Credits::cents(0);
    match outcome {
        Ok(mut output) => {
            let charged = price(Ok(&mut output)).unwrap_or(budget);
            Called {
                provider,
                outcome: Ok(output),
                charged: prices::at_most(charged, budget),
                nothing_done: false,
            }
        }
        Err(Failure { error, spent }) => {
            let charged = match spent {
                Spent::Nothing => zero,
                Spent::Unknown => budget,
                spent => price(Err(spent)).unwrap_or(budget),
            };
            Called {
                provider,
                outcome: Err(error),
                charged: prices::at_most(charged, budget),
                nothing_done: spent == Spent::Nothing,
            }
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

#[cfg(test)]
mod tests {
    use super::check_base_url;

    #[test]
    fn a_key_goes_only_to_https_or_this_machine() {
        for good in [
            "https://api.openai.com",
            "http://127.0.0.1:8080",
            "http://localhost:1/v",
        ] {
            assert!(check_base_url(good).is_ok(), "{good}");
        }
        for bad in [
            "http://api.openai.com",
            "https://user:pw@api.openai.com",
            "https://api.openai.com/?key=sk",
            "ftp://127.0.0.1",
            "not a url",
        ] {
            assert!(check_base_url(bad).is_err(), "{bad}");
        }
    }
}
