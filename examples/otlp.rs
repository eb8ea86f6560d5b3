//! The examples' logs and OpenTelemetry export: logs on stderr, and with `--otlp URL` tool-core's
//! spans (through `tracing-opentelemetry`) and metrics sent over OTLP/HTTP (protobuf) to a
//! collector.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::{Resource, metrics::SdkMeterProvider, trace::SdkTracerProvider};
use tracing_subscriber::{
    EnvFilter, Layer, Registry, filter::Targets, layer::SubscriberExt as _,
    util::SubscriberInitExt as _,
};

/// The standard variable naming the collector's base URL, used when no `--otlp` is given.
const ENDPOINT_VARIABLE: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";

/// The exporters of a running program; [`shutdown`](Self::shutdown) sends what is left.
pub(crate) struct Otlp {
    traces: SdkTracerProvider,
    metrics: SdkMeterProvider,
}

/// Sets up the program's output: its logs on stderr, filtered by `RUST_LOG` (else by
/// `default_filter`), and, when the `--otlp` flag or the standard variable names a collector,
/// tool-core's spans and metrics exported to it under the service name `service`. Returns the
/// exporters, which [`Otlp::shutdown`] flushes before the program ends; an error, with nothing
/// set up, when the exporters cannot be built.
pub(crate) fn init(
    flag: Option<String>,
    service: &'static str,
    default_filter: &str,
) -> Result<Option<Otlp>, String> {
    let (otlp, otel_layer) = match endpoint(flag) {
        None => (None, None),
        Some(url) => {
            let (otlp, layer) = start(&url, service)?;
            (Some(otlp), Some(layer))
        }
    };
    tracing_subscriber::registry()
        .with(otel_layer)
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_filter(
                    EnvFilter::try_from_default_env()
                        .unwrap_or_else(|_| EnvFilter::new(default_filter)),
                ),
        )
        .init();
    Ok(otlp)
}

/// The collector's base URL: the flag's, else the standard variable's, else none.
fn endpoint(flag: Option<String>) -> Option<String> {
    flag.or_else(|| std::env::var(ENDPOINT_VARIABLE).ok())
        .filter(|url| !url.trim().is_empty())
}

/// Starts exporting to the collector at `base` (`http://host:4318`: spans go to
/// `/v1/traces`, metrics to `/v1/metrics`), and returns the layer that turns tool-core's spans
/// into OpenTelemetry spans, for the program's subscriber. The metrics go through the global
/// meter provider, which the agent's telemetry reads when it is built.
fn start(
    base: &str,
    service: &'static str,
) -> Result<(Otlp, Box<dyn Layer<Registry> + Send + Sync>), String> {
    let base = base.trim_end_matches('/');
    // The exporters' HTTP client is reqwest built without a crypto provider of its own (as
    // tool-core builds it): rustls' `ring` one serves, installed for the process.
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
    let spans = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(format!("{base}/v1/traces"))
        .build()
        .map_err(|error| format!("cannot export spans to {base}: {error}"))?;
    let metrics = opentelemetry_otlp::MetricExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(format!("{base}/v1/metrics"))
        .build()
        .map_err(|error| format!("cannot export metrics to {base}: {error}"))?;
    let resource = Resource::builder().with_service_name(service).build();
    let traces = SdkTracerProvider::builder()
        .with_batch_exporter(spans)
        .with_resource(resource.clone())
        .build();
    let metrics = SdkMeterProvider::builder()
        .with_periodic_exporter(metrics)
        .with_resource(resource)
        .build();
    opentelemetry::global::set_meter_provider(metrics.clone());
    // Only tool-core's spans: the conventions' spans, not every library's internals.
    let layer = tracing_opentelemetry::layer()
        .with_tracer(traces.tracer(service))
        .with_filter(Targets::new().with_target("tool_core", tracing::Level::INFO));
    Ok((Otlp { traces, metrics }, Box::new(layer)))
}

impl Otlp {
    /// Sends the spans and metrics not sent yet, and stops the exporters.
    pub(crate) fn shutdown(self) {
        if let Err(error) = self.traces.shutdown() {
            eprintln!("error: exporting spans: {error}");
        }
        if let Err(error) = self.metrics.shutdown() {
            eprintln!("error: exporting metrics: {error}");
        }
    }
}
