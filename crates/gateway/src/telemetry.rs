//! Logs and traces (docs/operations.md): log lines as text or one JSON object each, and, with an
//! OTLP endpoint, every span sent to it: one per request, and within it the policy's
//! evaluations, the store's writes, an execution (after OpenTelemetry's GenAI conventions for a
//! tool's execution) and a provider's call.

use std::str::FromStr;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use serde::{Deserialize, Serialize};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer};

/// How log lines are written to standard error.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    /// One JSON object per line, with the fields of the spans it was written in (a request's
    /// `countersign.trace_id` among them).
    Json,
}

impl FromStr for LogFormat {
    type Err = String;

    fn from_str(text: &str) -> Result<LogFormat, String> {
        match text {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            _ => Err(format!("{text:?} is not a log format: text or json")),
        }
    }
}

/// While it lives, spans go to the OTLP endpoint; dropped, it sends what is left.
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take() {
            if let Err(e) = provider.shutdown() {
                eprintln!("the last spans could not be sent: {e}");
            }
        }
    }
}

/// Logs at `RUST_LOG` (default `info`) in `format`, and spans to `otlp_endpoint` (OTLP over
/// HTTP, `http://collector:4318/v1/traces`) when one is given.
pub fn init(format: LogFormat, otlp_endpoint: Option<&str>) -> anyhow::Result<Telemetry> {
    let provider = otlp_endpoint.map(exporting_to).transpose()?;
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let fmt = match format {
        LogFormat::Text => fmt.boxed(),
        LogFormat::Json => fmt
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .boxed(),
    };
    tracing_subscriber::registry()
        .with(EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with(fmt)
        .with(provider.as_ref().map(spans))
        .try_init()?;
    Ok(Telemetry { provider })
}

/// The layer that turns spans into OpenTelemetry spans of `provider`.
pub fn spans<S>(provider: &SdkTracerProvider) -> impl Layer<S> + use<S>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    tracing_opentelemetry::layer().with_tracer(provider.tracer("countersign-gateway"))
}

fn exporting_to(endpoint: &str) -> anyhow::Result<SdkTracerProvider> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(endpoint)
        .build()?;
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            Resource::builder()
                .with_service_name("countersign-gateway")
                .build(),
        )
        .build())
}
