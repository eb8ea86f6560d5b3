//! MCP calls as the MCP conventions describe them: a `tools/call {tool}` span on each side, and
//! the W3C trace context carried from client to server in the request's `params._meta`.

use opentelemetry::{
    propagation::{Extractor, Injector, TextMapPropagator as _},
    trace::TraceContextExt as _,
};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use serde_json::{Map, Value};
use tracing::{Span, field::Empty};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// Which side of an MCP call a span is on.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(not(all(feature = "mcp", feature = "mcp-client")), allow(dead_code))]
pub(crate) enum Side {
    /// The client, which sent the request (span kind `CLIENT`).
    Client,
    /// The server, which handles it (span kind `SERVER`).
    Server,
}

/// The span of one `tools/call` request: `tools/call {tool}`, with `mcp.method.name`,
/// `gen_ai.tool.name`, `gen_ai.operation.name`, `mcp.protocol.version`, and, recorded later
/// where known, `jsonrpc.request.id`, `mcp.session.id` and `error.type`.
pub(crate) fn tools_call_span(
    side: Side,
    tool: &str,
    protocol_version: Option<&str>,
    transport: &'static str,
) -> Span {
    let kind = match side {
        Side::Client => "client",
        Side::Server => "server",
    };
    tracing::info_span!(
        "tools/call",
        otel.name = super::span_name(|| format!("tools/call {tool}")).as_deref(),
        otel.kind = kind,
        otel.status_code = Empty,
        otel.status_description = Empty,
        mcp.method.name = "tools/call",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool,
        mcp.protocol.version = protocol_version,
        mcp.session.id = Empty,
        jsonrpc.request.id = Empty,
        network.transport = transport,
        rpc.response.status_code = Empty,
        error.type = Empty,
    )
}

/// Adds the W3C trace context of `span` (`traceparent`, and `tracestate` when there is one) to
/// a request's `_meta`.
#[cfg_attr(not(feature = "mcp-client"), allow(dead_code))]
pub(crate) fn inject(span: &Span, meta: &mut Map<String, Value>) {
    if span.is_disabled() {
        return;
    }
    let context = span.context();
    TraceContextPropagator::new().inject_context(&context, &mut MetaInjector(meta));
}

/// Makes the trace context a request carries in its `_meta`, if any, the parent of `span`.
/// Call it before the span is entered.
pub(crate) fn continue_from(span: &Span, meta: &Map<String, Value>) {
    if span.is_disabled() {
        return;
    }
    let parent = TraceContextPropagator::new().extract(&MetaExtractor(meta));
    if parent.span().span_context().is_valid() {
        // An error means the span is already started or not an OpenTelemetry span: it then
        // stays where the ambient context put it.
        let _ = span.set_parent(parent);
    }
}

/// Records that the call failed: `error.type` (the JSON-RPC error code, or `tool_error` for a
/// result with `isError`), and the span's error status.
pub(crate) fn failed(span: &Span, error_type: &str, code: Option<i32>, message: &str) {
    if span.is_disabled() {
        return;
    }
    span.record("error.type", error_type);
    if let Some(code) = code {
        span.record("rpc.response.status_code", code.to_string());
    }
    span.record("otel.status_code", "error");
    span.record("otel.status_description", message);
}

struct MetaInjector<'a>(&'a mut Map<String, Value>);

impl Injector for MetaInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_owned(), Value::String(value));
    }
}

struct MetaExtractor<'a>(&'a Map<String, Value>);

impl Extractor for MetaExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}
