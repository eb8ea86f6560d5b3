//! One trace across two processes: an agent calls a tool of the `mcp_server` example through
//! `McpClient`, the client carries the trace context in the request's `_meta`, and the server
//! continues the trace. Both processes export over OTLP/HTTP to a receiver this test runs on
//! loopback, which decodes what they send with the `opentelemetry-proto` types.

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
use serde_json::json;
use tool_core::{
    Agent, AgentOptions, ToolRegistry,
    mcp::{McpClient, McpServerConfig},
    model::{ScriptedModel, ScriptedResponse},
};
use tracing_subscriber::layer::SubscriberExt as _;

use crate::mcp_python::SERVER;

/// The spans an OTLP/HTTP receiver got, with the `service.name` of the process that sent them.
#[derive(Clone, Default)]
struct Received(Arc<Mutex<Vec<(String, Span)>>>);

impl Received {
    fn spans(&self) -> Vec<(String, Span)> {
        self.0.lock().unwrap().clone()
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
/// HTTP client) never wait on the runtime that serves them.
fn start_receiver() -> (String, Received) {
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

fn text(value: Option<&AnyValue>) -> String {
    match value.and_then(|value| value.value.as_ref()) {
        Some(any_value::Value::StringValue(text)) => text.clone(),
        Some(any_value::Value::IntValue(number)) => number.to_string(),
        Some(any_value::Value::BoolValue(flag)) => flag.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

fn attributes(span: &Span) -> BTreeMap<String, String> {
    span.attributes
        .iter()
        .map(|pair| (pair.key.clone(), text(pair.value.as_ref())))
        .collect()
}

/// The OTLP span kinds.
const INTERNAL: i32 = 1;
const SERVER_KIND: i32 = 2;
const CLIENT: i32 = 3;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_trace_covers_the_agent_its_mcp_client_and_the_mcp_server_process() {
    let (url, received) = start_receiver();
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
        .with_resource(Resource::builder().with_service_name("test-agent").build())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("tests")));
    let guard = tracing::subscriber::set_default(subscriber);

    let client = McpClient::connect(McpServerConfig::command(SERVER, ["--otlp", url.as_str()]))
        .await
        .unwrap();
    let registry = Arc::new(ToolRegistry::new());
    let registration = client.register_into(&registry).await.unwrap();
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "add", json!({"a": 2, "b": 3}).to_string()),
        ScriptedResponse::text("5"),
    ]);
    let agent = Agent::new(model, AgentOptions::new().registry(registry.clone()));
    let reply = tokio::time::timeout(Duration::from_secs(30), agent.chat("2 + 3?"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(reply.text, "5");

    // The server exports what is left when its stdin closes.
    registration.close().await;
    client.close().await;
    drop(guard);
    provider.force_flush().unwrap();
    let mut spans = Vec::new();
    for _ in 0..100 {
        spans = received.spans();
        let services: Vec<&str> = spans.iter().map(|(service, _)| service.as_str()).collect();
        if services.contains(&"mcp_server") && services.contains(&"test-agent") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let named = |service: &str, name: &str| -> Span {
        let found: Vec<&Span> = spans
            .iter()
            .filter(|(from, span)| from == service && span.name == name)
            .map(|(_, span)| span)
            .collect();
        assert_eq!(found.len(), 1, "one {name} from {service}: {spans:#?}");
        found[0].clone()
    };
    let turn = named("test-agent", "invoke_agent");
    let tool = named("test-agent", "execute_tool add");
    let call = named("test-agent", "tools/call add");
    let served = named("mcp_server", "tools/call add");

    for span in [&tool, &call, &served] {
        assert_eq!(
            span.trace_id, turn.trace_id,
            "{} is in the turn's trace",
            span.name
        );
    }
    assert!(turn.parent_span_id.is_empty());
    assert_eq!(tool.parent_span_id, turn.span_id);
    assert_eq!(call.parent_span_id, tool.span_id);
    assert_eq!(
        served.parent_span_id, call.span_id,
        "the server continues the client's span"
    );
    assert_eq!(
        (tool.kind, call.kind, served.kind),
        (INTERNAL, CLIENT, SERVER_KIND)
    );

    let client_side = attributes(&call);
    let server_side = attributes(&served);
    let version = &server_side["mcp.protocol.version"];
    assert!(version.starts_with("20"), "{version}");
    let id = &server_side["jsonrpc.request.id"];
    for (side, transport) in [(&client_side, "pipe"), (&server_side, "pipe")] {
        assert_eq!(side["mcp.method.name"], "tools/call");
        assert_eq!(side["gen_ai.tool.name"], "add");
        assert_eq!(side["gen_ai.operation.name"], "execute_tool");
        assert_eq!(side["mcp.protocol.version"], *version);
        assert_eq!(side["jsonrpc.request.id"], *id);
        assert_eq!(side["network.transport"], transport);
        assert!(!side.contains_key("error.type"), "{side:?}");
    }
}
