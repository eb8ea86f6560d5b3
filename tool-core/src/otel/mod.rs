//! Spans and metrics that follow the OpenTelemetry semantic conventions for generative AI and
//! for the Model Context Protocol (the opt-in `otel` feature).
//!
//! With the feature on, an [`Agent`](crate::Agent) turn is an `invoke_agent {agent}` span, each
//! model call a `chat {model}` span (kind `CLIENT`) inside it, and each tool call an
//! `execute_tool {tool}` span (kind `INTERNAL`) beside them, with the attributes of the
//! [GenAI conventions](https://github.com/open-telemetry/semantic-conventions-genai):
//! `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`, the usage counts,
//! `error.type`, and so on. The MCP server and client make `tools/call {tool}` spans (kinds
//! `SERVER` and `CLIENT`) with the MCP attributes, and the client carries the trace context to
//! the server in the request's `params._meta` (`traceparent`, `tracestate`), so one trace
//! covers an agent, its MCP tools and their servers. Three histograms are recorded:
//! `gen_ai.client.token.usage`, `gen_ai.client.operation.duration` and
//! `gen_ai.execute_tool.duration`.
//!
//! The spans are `tracing` spans, named for OpenTelemetry with the `otel.name` and `otel.kind`
//! fields that [`tracing-opentelemetry`](https://docs.rs/tracing-opentelemetry) reads: install
//! its layer (over any `opentelemetry` tracer: OTLP, stdout, in memory) in the application's
//! subscriber and they become OpenTelemetry spans. The metrics go to the global meter provider
//! unless [`Telemetry::meter_provider`] names another. Nothing is exported by tool-core itself.
//!
//! What the model and the tools said (messages, arguments, results, tool definitions) may be
//! private, so it is recorded only when the application asks for it with
//! [`Telemetry::capture_content`].
//!
//! ```no_run
//! use tool_core::{Agent, AgentOptions, model::TestModel, otel::Telemetry};
//!
//! let agent = Agent::new(
//!     TestModel::new(),
//!     AgentOptions::new().telemetry(Telemetry::new().agent_name("helper")),
//! );
//! ```

#[cfg(feature = "mcp")]
pub(crate) mod mcp;

use std::{fmt, sync::Arc, time::Duration};

use opentelemetry::{
    KeyValue,
    metrics::{Histogram, Meter, MeterProvider},
};
use serde_json::{Value, json};
use tracing::{Span, field::Empty};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use crate::{
    message::{FinishReason, Message, ToolCall, Usage},
    schema::Provider,
    tool::ChatTool,
};

/// The name of the instrumentation scope tool-core's metrics are recorded under.
pub const SCOPE: &str = "tool-core";

/// How an agent reports itself to OpenTelemetry: its name, the conversation's id, whether
/// content is recorded, and where the metrics go.
///
/// The default names no agent (the turn's span is then plain `invoke_agent`), records no
/// content, and sends the metrics to the global meter provider as it is when the agent is
/// built.
#[derive(Clone, Default)]
#[must_use]
pub struct Telemetry {
    agent_name: Option<String>,
    conversation_id: Option<String>,
    capture_content: bool,
    instruments: Option<Arc<Instruments>>,
}

impl fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Telemetry")
            .field("agent_name", &self.agent_name)
            .field("conversation_id", &self.conversation_id)
            .field("capture_content", &self.capture_content)
            .finish_non_exhaustive()
    }
}

impl Telemetry {
    /// The defaults: no agent name, no conversation id, no content, the global meter provider.
    pub fn new() -> Self {
        Self::default()
    }

    /// The agent's name (`gen_ai.agent.name`), which also names its turns' spans:
    /// `invoke_agent {name}`.
    pub fn agent_name(mut self, name: impl Into<String>) -> Self {
        self.agent_name = Some(name.into());
        self
    }

    /// The id of the conversation the agent holds (`gen_ai.conversation.id`), set on its turn
    /// and model-call spans.
    pub fn conversation_id(mut self, id: impl Into<String>) -> Self {
        self.conversation_id = Some(id.into());
        self
    }

    /// Whether to record what was said (default `false`): `gen_ai.input.messages`,
    /// `gen_ai.output.messages`, `gen_ai.system_instructions`, `gen_ai.tool.definitions`,
    /// `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result`. The conventions leave
    /// them off by default, since they may hold personal or secret data and be large.
    pub fn capture_content(mut self, capture: bool) -> Self {
        self.capture_content = capture;
        self
    }

    /// Records the metrics with this meter provider instead of the global one.
    pub fn meter_provider(mut self, provider: &impl MeterProvider) -> Self {
        self.instruments = Some(Arc::new(Instruments::new(&provider.meter(SCOPE))));
        self
    }

    /// The telemetry an agent keeps: the metrics' instruments made now, from the global meter
    /// provider when none was named, and none at all when the global one is still the no-op
    /// provider it starts as (so that an application that installs no meter provider pays
    /// nothing for the metrics' attributes).
    pub(crate) fn resolved(mut self) -> Self {
        if self.instruments.is_none() {
            let provider = opentelemetry::global::meter_provider();
            if !records_nothing(&*provider) {
                self.instruments = Some(Arc::new(Instruments::new(&provider.meter(SCOPE))));
            }
        }
        self
    }

    /// Whether content is recorded.
    pub(crate) fn captures_content(&self) -> bool {
        self.capture_content
    }
}

/// Whether a meter provider is stateless, as the no-op provider the global one starts as is: a
/// provider with no state has no reader or exporter to give a measurement to.
fn records_nothing(provider: &(dyn MeterProvider + Send + Sync)) -> bool {
    std::mem::size_of_val(provider) == 0
}

/// The three histograms of the conventions, with the bucket boundaries they advise.
struct Instruments {
    token_usage: Histogram<u64>,
    operation_duration: Histogram<f64>,
    tool_duration: Histogram<f64>,
}

/// The boundaries the conventions advise for durations, in seconds.
const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

/// The boundaries the conventions advise for token counts.
const TOKEN_BUCKETS: [f64; 14] = [
    1.0,
    4.0,
    16.0,
    64.0,
    256.0,
    1024.0,
    4096.0,
    16384.0,
    65536.0,
    262_144.0,
    1_048_576.0,
    4_194_304.0,
    16_777_216.0,
    67_108_864.0,
];

impl Instruments {
    fn new(meter: &Meter) -> Self {
        Self {
            token_usage: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Number of input and output tokens used.")
                .with_boundaries(TOKEN_BUCKETS.to_vec())
                .build(),
            operation_duration: meter
                .f64_histogram("gen_ai.client.operation.duration")
                .with_unit("s")
                .with_description("GenAI operation duration.")
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build(),
            tool_duration: meter
                .f64_histogram("gen_ai.execute_tool.duration")
                .with_unit("s")
                .with_description("The duration of a single tool execution.")
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build(),
        }
    }
}

/// `gen_ai.provider.name` for a client of this format: the conventions' well-known value where
/// there is one.
pub(crate) fn provider_name(provider: Provider) -> &'static str {
    match provider {
        Provider::OpenAi => "openai",
        Provider::Anthropic => "anthropic",
        Provider::Gemini => "gcp.gemini",
        Provider::Ollama => "ollama",
    }
}

/// A span's `otel.name`, made only when a subscriber could record it: the span macros evaluate
/// the fields of a span no subscriber wants only for `tracing`'s `log` fallback, which runs
/// while no dispatcher has been set.
pub(crate) fn span_name(name: impl FnOnce() -> String) -> Option<String> {
    tracing::dispatcher::has_been_set().then(name)
}

/// The span of one agent turn: `invoke_agent {agent name}`, kind `INTERNAL`.
pub(crate) fn invoke_agent_span(telemetry: &Telemetry, provider: Provider, model: &str) -> Span {
    tracing::info_span!(
        "invoke_agent",
        otel.name = span_name(|| match &telemetry.agent_name {
            Some(agent) => format!("invoke_agent {agent}"),
            None => "invoke_agent".to_owned(),
        })
        .as_deref(),
        otel.kind = "internal",
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = "invoke_agent",
        gen_ai.provider.name = provider_name(provider),
        gen_ai.agent.name = telemetry.agent_name.as_deref(),
        gen_ai.request.model = model,
        gen_ai.conversation.id = telemetry.conversation_id.as_deref(),
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        gen_ai.usage.cache_creation.input_tokens = Empty,
        gen_ai.usage.reasoning.output_tokens = Empty,
        error.type = Empty,
    )
}

/// What a model request asks for, as the `chat` span records it.
pub(crate) struct ChatRequestInfo<'a, 'r> {
    pub(crate) provider: Provider,
    pub(crate) model: &'a str,
    pub(crate) stream: bool,
    pub(crate) temperature: Option<f32>,
    pub(crate) max_tokens: Option<u32>,
    pub(crate) messages: &'r [Message],
    pub(crate) tools: &'r [ChatTool],
}

/// One model call in progress: its `chat {model}` span (kind `CLIENT`) and what its metrics
/// need.
pub(crate) struct ChatCall<'a> {
    span: Span,
    telemetry: &'a Telemetry,
    provider: Provider,
    model: &'a str,
    started: std::time::Instant,
}

impl<'a> ChatCall<'a> {
    /// Opens the span of a model call.
    pub(crate) fn start(telemetry: &'a Telemetry, request: &ChatRequestInfo<'a, '_>) -> Self {
        let span = tracing::info_span!(
            "chat",
            otel.name = span_name(|| format!("chat {}", request.model)).as_deref(),
            otel.kind = "client",
            otel.status_code = Empty,
            otel.status_description = Empty,
            gen_ai.operation.name = "chat",
            gen_ai.provider.name = provider_name(request.provider),
            gen_ai.request.model = request.model,
            gen_ai.conversation.id = telemetry.conversation_id.as_deref(),
            gen_ai.request.stream = request.stream,
            gen_ai.request.temperature = request.temperature.map(f64::from),
            gen_ai.request.max_tokens = request.max_tokens,
            gen_ai.response.id = Empty,
            gen_ai.response.model = Empty,
            gen_ai.response.time_to_first_chunk = Empty,
            gen_ai.usage.input_tokens = Empty,
            gen_ai.usage.output_tokens = Empty,
            gen_ai.usage.cache_read.input_tokens = Empty,
            gen_ai.usage.cache_creation.input_tokens = Empty,
            gen_ai.usage.reasoning.output_tokens = Empty,
            error.type = Empty,
        );
        if telemetry.capture_content && !span.is_disabled() {
            let (system, messages) = input_messages(request.messages);
            if let Some(system) = system {
                span.set_attribute("gen_ai.system_instructions", system.to_string());
            }
            span.set_attribute("gen_ai.input.messages", messages.to_string());
            if !request.tools.is_empty() {
                span.set_attribute(
                    "gen_ai.tool.definitions",
                    tool_definitions(request.tools).to_string(),
                );
            }
        }
        Self {
            span,
            telemetry,
            provider: request.provider,
            model: request.model,
            started: std::time::Instant::now(),
        }
    }

    /// The call's span, for the future that makes the call.
    pub(crate) fn span(&self) -> &Span {
        &self.span
    }

    /// Records the answer: finish reason, usage (on the span and in the token histogram), the
    /// output messages when content is recorded, and the call's duration.
    pub(crate) fn answered(
        self,
        finish_reason: &FinishReason,
        usage: Option<Usage>,
        content: &str,
        tool_calls: &[ToolCall],
    ) {
        if !self.span.is_disabled() {
            let reason = finish_reason_name(finish_reason);
            self.span.set_attribute(
                "gen_ai.response.finish_reasons",
                opentelemetry::Value::Array(
                    vec![opentelemetry::StringValue::from(reason.clone())].into(),
                ),
            );
            if let Some(usage) = usage {
                record_usage(&self.span, usage);
            }
            if self.telemetry.capture_content {
                self.span.set_attribute(
                    "gen_ai.output.messages",
                    json!([{
                        "role": "assistant",
                        "parts": assistant_parts(content, tool_calls),
                        "finish_reason": reason,
                    }])
                    .to_string(),
                );
            }
        }
        let Some(instruments) = &self.telemetry.instruments else {
            return;
        };
        let attributes = self.metric_attributes(None);
        if let Some(usage) = usage {
            let mut input = attributes.clone();
            input.push(KeyValue::new("gen_ai.token.type", "input"));
            instruments.token_usage.record(usage.input_tokens, &input);
            let mut output = attributes.clone();
            output.push(KeyValue::new("gen_ai.token.type", "output"));
            instruments.token_usage.record(usage.output_tokens, &output);
        }
        self.record_duration(instruments, &attributes);
    }

    /// Records a failed call: `error.type`, the span's error status and the duration.
    pub(crate) fn failed(self, error_type: &str, message: &dyn fmt::Display) {
        record_error(&self.span, error_type, message);
        if let Some(instruments) = &self.telemetry.instruments {
            let attributes = self.metric_attributes(Some(error_type));
            self.record_duration(instruments, &attributes);
        }
    }

    fn metric_attributes(&self, error_type: Option<&str>) -> Vec<KeyValue> {
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "chat"),
            KeyValue::new("gen_ai.provider.name", provider_name(self.provider)),
            KeyValue::new("gen_ai.request.model", self.model.to_owned()),
        ];
        if let Some(error_type) = error_type {
            attributes.push(KeyValue::new("error.type", error_type.to_owned()));
        }
        attributes
    }

    fn record_duration(&self, instruments: &Instruments, attributes: &[KeyValue]) {
        instruments
            .operation_duration
            .record(self.started.elapsed().as_secs_f64(), attributes);
    }
}

/// Records, on the current span (a `chat` span when the model call is traced), how long the
/// stream took to bring its first chunk.
pub(crate) fn first_chunk(after: Duration) {
    Span::current().record("gen_ai.response.time_to_first_chunk", after.as_secs_f64());
}

/// Records the end of a turn on its span: the usage of all its model calls and its finish
/// reason, or its error; the answer too when content is recorded.
pub(crate) fn agent_answered(
    span: &Span,
    telemetry: &Telemetry,
    usage: Option<Usage>,
    finish_reason: &FinishReason,
    text: &str,
) {
    if span.is_disabled() {
        return;
    }
    if let Some(usage) = usage {
        record_usage(span, usage);
    }
    let reason = finish_reason_name(finish_reason);
    span.set_attribute(
        "gen_ai.response.finish_reasons",
        opentelemetry::Value::Array(vec![opentelemetry::StringValue::from(reason.clone())].into()),
    );
    if telemetry.capture_content {
        span.set_attribute(
            "gen_ai.output.messages",
            json!([{
                "role": "assistant",
                "parts": assistant_parts(text, &[]),
                "finish_reason": reason,
            }])
            .to_string(),
        );
    }
}

/// Records the user's input of a turn on its span, when content is recorded.
pub(crate) fn agent_input(span: &Span, telemetry: &Telemetry, text: &str, tools: &[ChatTool]) {
    if !telemetry.capture_content || span.is_disabled() {
        return;
    }
    span.set_attribute(
        "gen_ai.input.messages",
        json!([{"role": "user", "parts": [{"type": "text", "content": text}]}]).to_string(),
    );
    if !tools.is_empty() {
        span.set_attribute(
            "gen_ai.tool.definitions",
            tool_definitions(tools).to_string(),
        );
    }
}

/// Records that an operation failed: `error.type` and the span's error status, with the
/// error's message as the status description.
pub(crate) fn record_error(span: &Span, error_type: &str, message: &dyn fmt::Display) {
    if span.is_disabled() {
        return;
    }
    span.record("error.type", error_type);
    span.record("otel.status_code", "error");
    span.record("otel.status_description", message.to_string());
}

/// The span of one tool call: `execute_tool {tool}`, kind `INTERNAL`.
pub(crate) fn execute_tool_span(
    telemetry: &Telemetry,
    name: &str,
    call_id: &str,
    description: Option<&str>,
    arguments: &str,
) -> Span {
    let span = tracing::info_span!(
        "execute_tool",
        otel.name = span_name(|| format!("execute_tool {name}")).as_deref(),
        otel.kind = "internal",
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = name,
        gen_ai.tool.call.id = call_id,
        gen_ai.tool.description = description,
        gen_ai.tool.type = "function",
        error.type = Empty,
    );
    if telemetry.capture_content && !span.is_disabled() {
        span.set_attribute("gen_ai.tool.call.arguments", arguments.to_owned());
    }
    span
}

/// Records how a tool call ended on its span, and its duration in the tool histogram:
/// `error.type` when it failed, its result when it succeeded and content is recorded.
pub(crate) fn tool_finished(
    span: &Span,
    telemetry: &Telemetry,
    name: &str,
    elapsed: Duration,
    outcome: Result<&str, (&'static str, &str)>,
) {
    match outcome {
        Ok(result) => {
            if telemetry.capture_content && !span.is_disabled() {
                span.set_attribute("gen_ai.tool.call.result", result.to_owned());
            }
        }
        Err((error_type, message)) => record_error(span, error_type, &message),
    }
    if let Some(instruments) = &telemetry.instruments {
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("gen_ai.tool.name", name.to_owned()),
            KeyValue::new("gen_ai.tool.type", "function"),
        ];
        if let Some(agent) = &telemetry.agent_name {
            attributes.push(KeyValue::new("gen_ai.agent.name", agent.clone()));
        }
        if let Err((error_type, _)) = outcome {
            attributes.push(KeyValue::new("error.type", error_type));
        }
        instruments
            .tool_duration
            .record(elapsed.as_secs_f64(), &attributes);
    }
}

fn record_usage(span: &Span, usage: Usage) {
    span.record("gen_ai.usage.input_tokens", usage.input_tokens);
    span.record("gen_ai.usage.output_tokens", usage.output_tokens);
    if usage.cache_read_tokens > 0 {
        span.record(
            "gen_ai.usage.cache_read.input_tokens",
            usage.cache_read_tokens,
        );
    }
    if usage.cache_write_tokens > 0 {
        span.record(
            "gen_ai.usage.cache_creation.input_tokens",
            usage.cache_write_tokens,
        );
    }
    if usage.reasoning_tokens > 0 {
        span.record(
            "gen_ai.usage.reasoning.output_tokens",
            usage.reasoning_tokens,
        );
    }
}

/// A finish reason as the conventions' output messages name it.
fn finish_reason_name(reason: &FinishReason) -> String {
    match reason {
        FinishReason::Stop => "stop".to_owned(),
        FinishReason::ToolCalls => "tool_call".to_owned(),
        FinishReason::Length => "length".to_owned(),
        FinishReason::ContentFilter => "content_filter".to_owned(),
        FinishReason::Other(other) => other.clone(),
    }
}

/// The conventions' input messages (`gen_ai.input.messages`) and system instructions
/// (`gen_ai.system_instructions`) of a request's messages.
fn input_messages(messages: &[Message]) -> (Option<Value>, Value) {
    let mut system = Vec::new();
    let mut input = Vec::new();
    for message in messages {
        match message {
            Message::System { content } => {
                system.push(json!({"type": "text", "content": content}));
            }
            Message::User { content } => input.push(json!({
                "role": "user",
                "parts": [{"type": "text", "content": content}],
            })),
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => input.push(json!({
                "role": "assistant",
                "parts": assistant_parts(content, tool_calls),
            })),
            Message::Tool {
                tool_call_id,
                content,
                ..
            } => input.push(json!({
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": tool_call_id, "response": content}],
            })),
        }
    }
    let system = (!system.is_empty()).then_some(Value::Array(system));
    (system, Value::Array(input))
}

/// The parts of an assistant message: its text, then its tool calls (arguments as an object
/// when they are JSON, as the model's text otherwise).
fn assistant_parts(content: &str, tool_calls: &[ToolCall]) -> Value {
    let mut parts = Vec::with_capacity(tool_calls.len() + 1);
    if !content.is_empty() {
        parts.push(json!({"type": "text", "content": content}));
    }
    for call in tool_calls {
        let arguments = serde_json::from_str::<Value>(&call.arguments)
            .unwrap_or_else(|_| Value::String(call.arguments.to_string()));
        parts.push(json!({
            "type": "tool_call",
            "id": call.id,
            "name": call.name,
            "arguments": arguments,
        }));
    }
    Value::Array(parts)
}

/// `gen_ai.tool.definitions`: each tool's type, name, description and parameters.
fn tool_definitions(tools: &[ChatTool]) -> Value {
    Value::Array(
        tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "name": tool.name(),
                    "description": tool.description(),
                    "parameters": tool.function.parameters,
                })
            })
            .collect(),
    )
}
