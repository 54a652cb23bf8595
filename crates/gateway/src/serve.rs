//! `countersign-gateway serve`: the store, the packs, the policy and the relay composed from
//! [`Settings`], served over HTTPS, or plain HTTP on loopback, until Ctrl-C.

use std::net::SocketAddr;

use countersign_embedded::seed_demo;
use countersign_engine::execution::external::recover_interrupted;
use countersign_engine::{Limits, Registry, Store};
use countersign_policy::Policy;
use countersign_proto::Credits;
use countersign_providers::local::LocalProviders;
use countersign_providers::{Endpoint, PackSettings, Provider, Providers};

use crate::config::Settings;
use crate::{smtp, tls};

/// Serves until Ctrl-C.
pub async fn serve(settings: Settings) -> anyhow::Result<()> {
    let policy = load_policy(settings.policy.as_deref(), settings.policy_heap_limit_mb)?;
    let tls = match (&settings.tls_cert, &settings.tls_key) {
        (Some(cert), Some(key)) => Some(tls::server_config(cert, key)?),
        _ => {
            tls::ensure_plain_http_allowed(settings.addr)?;
            None
        }
    };
    let store = Store::open(&settings.database).await?;
    if settings.demo {
        seed_demo(&store).await?;
    }
    let relay = settings
        .smtp_relay
        .as_deref()
        .map(|url| smtp::Relay::new(url, &settings.mail_from))
        .transpose()?;
    let configured = settings.openai_url.is_some() || settings.replicate_url.is_some();
    // The demo's own provider, unless real ones are configured; it lives as long as this.
    let local = match settings.demo && !configured {
        true => Some(LocalProviders::start().await?),
        false => None,
    };
    let providers = match &local {
        Some(local) => local.providers(),
        None => providers(
            settings.openai_url.as_deref(),
            settings.replicate_url.as_deref(),
        )?,
    };
    let registry = registry(settings.approve_provider_calls_above, providers)?;
    recover_interrupted(&store, registry).await?;
    let state = countersign_embedded::state_with_policy(
        store,
        &settings.name,
        limits(&settings),
        registry,
        policy,
    )
    .await?;
    match relay {
        Some(relay) => smtp::spawn(&state, relay),
        None => tracing::info!("no smtp_relay: executed plans' emails stay queued"),
    }
    let gateway_id = state.gateway_id.clone();
    let listener = tokio::net::TcpListener::bind(settings.addr).await?;
    let local = listener.local_addr()?;
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let app = match settings.metrics_addr {
        Some(addr) => {
            let metrics = countersign_api::metrics(state.clone());
            let listener = tokio::net::TcpListener::bind(addr).await?;
            tracing::info!("metrics on http://{}/metrics", listener.local_addr()?);
            tokio::spawn(async move { axum::serve(listener, metrics).await });
            crate::api(state)
        }
        None => crate::router(state),
    };
    match tls {
        Some(config) => {
            println!("countersign-gateway {gateway_id} listening on https://{local}");
            let listener = tls::TlsListener::new(listener, config)?;
            tls::serve(listener, app, stop).await?;
        }
        None => {
            println!("countersign-gateway {gateway_id} listening on http://{local}");
            let service = app.into_make_service_with_connect_info::<SocketAddr>();
            axum::serve(listener, service)
                .with_graceful_shutdown(stop)
                .await?;
        }
    }
    Ok(())
}

/// The policy in `dir`, or the built-in one, with the process's heap ceiling set.
pub fn load_policy(dir: Option<&std::path::Path>, heap_limit_mb: u64) -> anyhow::Result<Policy> {
    countersign_policy::limit_memory(Some(heap_limit_mb.saturating_mul(1 << 20)));
    match dir {
        Some(dir) => Policy::load(dir).map_err(|e| anyhow::anyhow!("the policy: {e}")),
        None => Ok(Policy::builtin()),
    }
}

/// The shipped packs, the providers' waiting for approval above `approval_above` and calling
/// `providers`.
pub fn registry(
    approval_above: Credits,
    providers: Providers,
) -> anyhow::Result<&'static Registry> {
    let settings = PackSettings { approval_above };
    Ok(countersign_embedded::registry(&settings, providers)
        .map_err(anyhow::Error::msg)?
        .leak())
}

/// Where provider capabilities' calls go. Keys come from the environment or the OS keyring
/// (service `countersign-gateway`, user `openai` or `replicate`), never from a flag or a file.
pub fn providers(
    openai_url: Option<&str>,
    replicate_url: Option<&str>,
) -> anyhow::Result<Providers> {
    let endpoint = |provider, url: Option<&str>| {
        url.map(|url| Endpoint::with_stored_key(provider, url))
            .transpose()
    };
    Ok(Providers::new(
        endpoint(Provider::OpenAi, openai_url)?,
        endpoint(Provider::Replicate, replicate_url)?,
    ))
}

fn limits(settings: &Settings) -> Limits {
    Limits {
        max_pending_plans: settings.max_pending_plans,
        max_subject_rows: settings.max_subject_rows,
        rate: settings.rate_limit.0,
        approver_rate: settings.approver_rate_limit.0,
        max_previews_in_flight: settings.max_previews_in_flight,
        max_streams: settings.max_streams,
        max_waits: settings.max_waits,
    }
}
