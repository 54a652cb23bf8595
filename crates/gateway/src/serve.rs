//! `countersign-gateway serve`: the store, the packs, the policy and the relay composed from
//! [`Settings`], served over HTTPS, or plain HTTP on loopback, until SIGTERM or SIGINT, then
//! drained (docs/operations.md, "Stopping").

use std::future::{Future, IntoFuture as _};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use countersign_embedded::seed_demo;
use countersign_engine::execution::external::recover_interrupted;
use countersign_engine::{Engine, Limits, Registry, Store};
use countersign_mcp_proxy::{Spec, Upstream};
use countersign_policy::Policy;
use countersign_proto::Credits;
use countersign_providers::local::LocalProviders;
use countersign_providers::{Endpoint, PackSettings, Provider, Providers};

use crate::config::Settings;
use crate::{smtp, tls};

/// Serves until SIGTERM or SIGINT, then drains for `drain_seconds` at most.
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
    let upstreams = connect_upstreams(&settings.mcp_upstream).await?;
    let registry = registry(settings.approve_provider_calls_above, providers, &upstreams)?;
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
    let drain = Duration::from_secs(settings.drain_seconds);
    let (stop, stopped) = stopping(state.engine.clone(), drain);
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
    let serving: Pin<Box<dyn Future<Output = std::io::Result<()>> + Send>> = match tls {
        Some(config) => {
            println!("countersign-gateway {gateway_id} listening on https://{local}");
            let listener = tls::TlsListener::new(listener, config)?;
            Box::pin(tls::serve(listener, app, stop))
        }
        None => {
            println!("countersign-gateway {gateway_id} listening on http://{local}");
            let service = app.into_make_service_with_connect_info::<SocketAddr>();
            Box::pin(
                axum::serve(listener, service)
                    .with_graceful_shutdown(stop)
                    .into_future(),
            )
        }
    };
    tokio::select! {
        served = serving => served?,
        () = stopped => tracing::warn!("requests were still open after the drain; stopping anyway"),
    }
    tracing::info!("stopped");
    Ok(())
}

/// How long, after the drain's deadline, the calls that gave up have to record so and answer.
const AFTER_DEADLINE: Duration = Duration::from_secs(5);

/// On SIGTERM or SIGINT: the future that stops the listener (the drain begins, streams are told
/// to go elsewhere, requests under way finish), and the one that resolves once the drain has had
/// `drain` and the calls it cut short have answered, when the process stops whatever is open.
fn stopping(
    engine: Arc<Engine>,
    drain: Duration,
) -> (
    impl Future<Output = ()> + Send + 'static,
    impl Future<Output = ()> + Send + 'static,
) {
    let (signalled, mut told) = tokio::sync::watch::channel(false);
    let stop = {
        let engine = engine.clone();
        async move {
            stop_signal().await;
            tracing::info!(drain_seconds = drain.as_secs(), "stopping: draining");
            engine.shutdown.drain();
            signalled.send_replace(true);
        }
    };
    let stopped = async move {
        if told.wait_for(|s| *s).await.is_err() {
            return std::future::pending().await;
        }
        tokio::time::sleep(drain).await;
        tracing::warn!(
            "the drain's time is up: calls still out are recorded as of unknown outcome"
        );
        engine.shutdown.pass_deadline();
        tokio::time::sleep(AFTER_DEADLINE).await;
    };
    (stop, stopped)
}

async fn stop_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(e) => {
                tracing::warn!("SIGTERM cannot be caught ({e}); stop with SIGINT");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
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
/// `providers`, and the tools of `upstreams`.
pub fn registry(
    approval_above: Credits,
    providers: Providers,
    upstreams: &[Arc<Upstream>],
) -> anyhow::Result<&'static Registry> {
    let settings = PackSettings { approval_above };
    let mut packs = countersign_embedded::packs(&settings, providers);
    if !upstreams.is_empty() {
        packs.push(countersign_mcp_proxy::pack(upstreams));
    }
    Ok(Registry::new(packs).map_err(anyhow::Error::msg)?.leak())
}

/// Each `NAME=COMMAND` or `NAME=URL` connected, its tools listed; a gateway does not start with
/// an upstream it cannot reach.
pub async fn connect_upstreams(specs: &[String]) -> anyhow::Result<Vec<Arc<Upstream>>> {
    let mut upstreams: Vec<Arc<Upstream>> = Vec::with_capacity(specs.len());
    for text in specs {
        let spec = Spec::parse(text, |var| std::env::var(var).ok())
            .map_err(|e| anyhow::anyhow!("mcp_upstream: {e}"))?;
        anyhow::ensure!(
            upstreams.iter().all(|u| u.name() != spec.name),
            "mcp_upstream: two upstreams are called {}",
            spec.name
        );
        upstreams.push(Upstream::connect(spec).await.map_err(anyhow::Error::msg)?);
    }
    Ok(upstreams)
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
