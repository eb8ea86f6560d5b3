//! What the tests of traces across processes share: an OTLP/HTTP receiver on loopback that
//! decodes what processes export with the `opentelemetry-proto` types, and the test process's
//! own exporter to it.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{Router, body::Bytes, extract::State, routing::post};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_proto::tonic::{
    collector::trace::v1::ExportTraceServiceRequest,
    common::v1::{AnyValue, any_value},
    trace::v1::Span,
};
use opentelemetry_sdk::{Resource, trace::SdkTracerProvider};
use prost::Message as _;
use tracing_subscriber::{Layer as _, filter::Targets, layer::SubscriberExt as _};

/// The OTLP span kinds.
pub(crate) const INTERNAL: i32 = 1;
pub(crate) const SERVER_KIND: i32 = 2;
pub(crate) const CLIENT: i32 = 3;

/// The spans an OTLP/HTTP receiver got, with the `service.name` of the process that sent them.
#[derive(Clone, Default)]
pub(crate) struct Received(Arc<Mutex<Vec<(String, Span)>>>);

impl Received {
    pub(crate) fn spans(&self) -> Vec<(String, Span)> {
        self.0.lock().unwrap().clone()
    }

    /// The spans once `enough` says they are all there, waiting at most `limit`; what has come
    /// by then, if they never are.
    pub(crate) async fn wait_for(
        &self,
        limit: Duration,
        enough: impl Fn(&[(String, Span)]) -> bool,
    ) -> Vec<(String, Span)> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let spans = self.spans();
            if enough(&spans) || tokio::time::Instant::now() >= deadline {
                return spans;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

async fn traces(State(received): State<Received>, body: Bytes) -> &'static str {
    let request = ExportTraceServiceRequest::decode(body).expect("an OTLP trace export");
    let mut spans = received.0.lock().unwrap();
    for resource in request.resource_spans {
        let service = resource
            .resource
            .iter()
            .flat_map(|resource| &resource.attributes)
            .find(|pair| pair.key == "service.name")
            .map(|pair| text(pair.value.as_ref()))
            .unwrap_or_default();
        for scope in resource.scope_spans {
            for span in scope.spans {
                spans.push((service.clone(), span));
            }
        }
    }
    ""
}

/// Runs the receiver on a thread of its own, so exporters that block (the OTLP exporter's
/// HTTP client) never wait on the runtime that serves them. Returns its base URL.
pub(crate) fn start_receiver() -> (String, Received) {
    let received = Received::default();
    let state = received.clone();
    let (sender, url) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            sender
                .send(format!("http://{}", listener.local_addr().unwrap()))
                .unwrap();
            let app = Router::new()
                .route("/v1/traces", post(traces))
                .route("/v1/metrics", post(|| async { "" }))
                .with_state(state);
            axum::serve(listener, app).await.unwrap();
        });
    });
    let url = url.recv_timeout(Duration::from_secs(10)).unwrap();
    (url, received)
}

/// The test process's tool-core spans exported to the receiver at `url` as `service`, while the
/// returned guard lives; [`SdkTracerProvider::force_flush`] sends what is left.
pub(crate) fn export_to(
    url: &str,
    service: &'static str,
) -> (SdkTracerProvider, tracing::subscriber::DefaultGuard) {
    // The exporter builds a reqwest client, which needs the crypto provider installed.
    let _ = crate::http_client::builder();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(format!("{url}/v1/traces"))
        .build()
        .unwrap();
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(Resource::builder().with_service_name(service).build())
        .build();
    // Only tool-core's spans, as the examples export them (not rmcp's own).
    let subscriber = tracing_subscriber::registry().with(
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("tests"))
            .with_filter(Targets::new().with_target("tool_core", tracing::Level::INFO)),
    );
    let guard = tracing::subscriber::set_default(subscriber);
    (provider, guard)
}

pub(crate) fn text(value: Option<&AnyValue>) -> String {
    match value.and_then(|value| value.value.as_ref()) {
        Some(any_value::Value::StringValue(text)) => text.clone(),
        Some(any_value::Value::IntValue(number)) => number.to_string(),
        Some(any_value::Value::BoolValue(flag)) => flag.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

pub(crate) fn attributes(span: &Span) -> BTreeMap<String, String> {
    span.attributes
        .iter()
        .map(|pair| (pair.key.clone(), text(pair.value.as_ref())))
        .collect()
}

/// The one span `service` sent named `name`.
pub(crate) fn named(spans: &[(String, Span)], service: &str, name: &str) -> Span {
    let found: Vec<&Span> = spans
        .iter()
        .filter(|(from, span)| from == service && span.name == name)
        .map(|(_, span)| span)
        .collect();
    assert_eq!(found.len(), 1, "one {name} from {service}: {spans:#?}");
    found[0].clone()
}

/// The one child of `parent`, from any process; it must be named `name`.
pub(crate) fn only_child(spans: &[(String, Span)], parent: &Span, name: &str) -> (String, Span) {
    let found: Vec<&(String, Span)> = spans
        .iter()
        .filter(|(_, span)| span.parent_span_id == parent.span_id)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one child of {} ({name}): {spans:#?}",
        parent.name
    );
    assert_eq!(found[0].1.name, name, "the child of {}", parent.name);
    found[0].clone()
}
