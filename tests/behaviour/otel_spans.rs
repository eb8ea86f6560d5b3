//! The `otel` feature: an agent's turns, model calls and tool calls as the OpenTelemetry GenAI
//! conventions describe them, read back from the SDK's in-memory exporters: span names, kinds,
//! parents and every attribute, content only when asked for, and the three histograms.

use std::{collections::BTreeMap, time::Duration};

use opentelemetry::{
    Value,
    trace::{SpanId, SpanKind, Status, TracerProvider as _},
};
use opentelemetry_sdk::{
    metrics::{
        InMemoryMetricExporter, PeriodicReader, SdkMeterProvider,
        data::{AggregatedMetrics, MetricData},
    },
    trace::{InMemorySpanExporter, SdkTracerProvider, SpanData},
};
use tool_core::{
    Agent, AgentError, AgentOptions, ToolError,
    agent::ApprovalDecision,
    model::{ScriptedModel, ScriptedResponse, ToolCall, Usage},
    otel::Telemetry,
    tool,
};
use tracing_subscriber::layer::SubscriberExt as _;

use futures::StreamExt as _;

use crate::{
    agent_support::Echo,
    loopback::{Reply, Server},
    provider_usage::whole_cached_turn,
    provider_wires::{self, client},
};

/// Spans exported in memory while the guard lives, on this thread.
pub(crate) struct Traced {
    exporter: InMemorySpanExporter,
    provider: SdkTracerProvider,
    _guard: tracing::subscriber::DefaultGuard,
}

/// Installs, for this thread, a subscriber that turns tool-core's spans into OpenTelemetry
/// spans kept in memory. The layer adds none of its own attributes (code location, thread,
/// timings), so a test can compare a span's attributes whole.
pub(crate) fn traced() -> Traced {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("tests"))
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
        .with_target(false);
    let subscriber = tracing_subscriber::registry().with(layer);
    let guard = tracing::subscriber::set_default(subscriber);
    Traced {
        exporter,
        provider,
        _guard: guard,
    }
}

impl Traced {
    /// The spans finished so far, in the order they ended.
    pub(crate) fn spans(&self) -> Vec<SpanData> {
        self.provider.force_flush().unwrap();
        self.exporter.get_finished_spans().unwrap()
    }
}

/// A span's attributes as text, for whole comparisons.
pub(crate) fn attributes(span: &SpanData) -> BTreeMap<String, String> {
    span.attributes
        .iter()
        .map(|pair| (pair.key.to_string(), text(&pair.value)))
        .collect()
}

fn text(value: &Value) -> String {
    match value {
        Value::Array(opentelemetry::Array::String(items)) => format!(
            "{:?}",
            items.iter().map(|item| item.as_str()).collect::<Vec<_>>()
        ),
        other => other.to_string(),
    }
}

/// The attributes as `(key, value)` pairs written in a test.
pub(crate) fn expected(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
        .collect()
}

/// The one span named `name` whose `key` attribute is `value`.
fn find<'a>(spans: &'a [SpanData], name: &str, key: &str, value: &str) -> &'a SpanData {
    let found: Vec<&SpanData> = spans
        .iter()
        .filter(|span| {
            span.name == name && attributes(span).get(key).map(String::as_str) == Some(value)
        })
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one `{name}` span with {key}={value}: {spans:#?}"
    );
    found[0]
}

/// Fail always.
#[tool]
async fn fail() -> Result<String, ToolError> {
    Err(ToolError::new("the disk is full"))
}

/// Ask the model to try again.
#[tool]
async fn flaky() -> Result<String, ToolError> {
    Err(ToolError::retry("call me with a reason"))
}

/// Delete everything.
#[tool(needs_approval, destructive)]
async fn purge() -> String {
    "purged".to_owned()
}

fn scenario() -> ScriptedModel {
    ScriptedModel::new([
        ScriptedResponse::tool_calls([
            ToolCall::new("c1", "echo", r#"{"text": "one"}"#),
            ToolCall::new("c2", "echo", r#"{"text": "two"}"#),
        ])
        .usage(Usage::new(10, 2)),
        ScriptedResponse::tool_calls([
            ToolCall::new("c3", "fail", "{}"),
            ToolCall::new("c4", "flaky", "{}"),
            ToolCall::new("c5", "purge", "{}"),
        ])
        .usage(Usage::new(20, 3).cache_read_tokens(8).reasoning_tokens(1)),
        ScriptedResponse::text("Done.").usage(Usage::new(30, 4)),
    ])
}

fn scenario_agent(model: &ScriptedModel, dir: &std::path::Path, telemetry: Telemetry) -> Agent {
    let agent = Agent::new(
        model.clone(),
        AgentOptions::new()
            .root_dir(dir)
            .max_tool_retries(3)
            .telemetry(telemetry),
    );
    agent.add_tool(Echo).unwrap();
    agent.add_tool(Fail).unwrap();
    agent.add_tool(Flaky).unwrap();
    agent.add_tool(Purge).unwrap();
    agent
}

/// Runs the scenario: a turn with two parallel calls, a failed call, a retry and a call that
/// waits for approval, then its continuation, which denies that call and gets the answer.
async fn run_scenario(agent: &Agent) {
    let error = tokio::time::timeout(Duration::from_secs(30), agent.chat("go"))
        .await
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(error, AgentError::AwaitingApproval { .. }),
        "{error:?}"
    );
    let reply = tokio::time::timeout(
        Duration::from_secs(30),
        agent.continue_with([("c5", ApprovalDecision::deny())]),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(reply.text, "Done.");
}

#[tokio::test]
async fn a_turn_is_an_invoke_agent_span_over_chat_and_execute_tool_spans() {
    let traced = traced();
    let dir = tempfile::tempdir().unwrap();
    let model = scenario();
    let agent = scenario_agent(
        &model,
        dir.path(),
        Telemetry::new()
            .agent_name("helper")
            .conversation_id("conv-1"),
    );
    run_scenario(&agent).await;

    let spans = traced.spans();
    let names: Vec<&str> = spans.iter().map(|span| &*span.name).collect();
    assert_eq!(
        names,
        [
            "chat scripted",
            "execute_tool echo",
            "execute_tool echo",
            "chat scripted",
            "execute_tool fail",
            "execute_tool flaky",
            "invoke_agent helper",
            "execute_tool purge",
            "chat scripted",
            "invoke_agent helper",
        ],
        "every span, in the order they ended"
    );

    // Two turns (the second continues the first after the approval decision), each a trace
    // of its own whose root is its invoke_agent span.
    let turns: Vec<&SpanData> = spans
        .iter()
        .filter(|span| span.name == "invoke_agent helper")
        .collect();
    for turn in &turns {
        assert_eq!(turn.span_kind, SpanKind::Internal);
        assert_eq!(turn.parent_span_id, SpanId::INVALID);
        assert_eq!(turn.status, Status::Unset);
    }
    assert_ne!(
        turns[0].span_context.trace_id(),
        turns[1].span_context.trace_id()
    );
    let turn_of = |span: &SpanData| {
        let turn = turns
            .iter()
            .position(|turn| turn.span_context.span_id() == span.parent_span_id)
            .expect("every other span is a child of a turn");
        assert_eq!(
            span.span_context.trace_id(),
            turns[turn].span_context.trace_id()
        );
        turn
    };
    let parents: Vec<usize> = spans
        .iter()
        .filter(|span| !span.name.starts_with("invoke_agent"))
        .map(turn_of)
        .collect();
    assert_eq!(parents, [0, 0, 0, 0, 0, 0, 1, 1]);

    assert_eq!(
        attributes(turns[0]),
        expected(&[
            ("gen_ai.operation.name", "invoke_agent"),
            ("gen_ai.provider.name", "openai"),
            ("gen_ai.agent.name", "helper"),
            ("gen_ai.request.model", "scripted"),
            ("gen_ai.conversation.id", "conv-1"),
            ("gen_ai.usage.input_tokens", "30"),
            ("gen_ai.usage.output_tokens", "5"),
            ("gen_ai.usage.cache_read.input_tokens", "8"),
            ("gen_ai.usage.reasoning.output_tokens", "1"),
            ("gen_ai.response.finish_reasons", r#"["tool_call"]"#),
        ])
    );
    assert_eq!(
        attributes(turns[1]),
        expected(&[
            ("gen_ai.operation.name", "invoke_agent"),
            ("gen_ai.provider.name", "openai"),
            ("gen_ai.agent.name", "helper"),
            ("gen_ai.request.model", "scripted"),
            ("gen_ai.conversation.id", "conv-1"),
            ("gen_ai.usage.input_tokens", "60"),
            ("gen_ai.usage.output_tokens", "9"),
            ("gen_ai.usage.cache_read.input_tokens", "8"),
            ("gen_ai.usage.reasoning.output_tokens", "1"),
            ("gen_ai.response.finish_reasons", r#"["stop"]"#),
        ])
    );

    let chats: Vec<&SpanData> = spans
        .iter()
        .filter(|span| span.name == "chat scripted")
        .collect();
    let chat = |input: &str, output: &str, reason: &str, extra: &[(&str, &str)]| {
        let mut pairs = vec![
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.provider.name", "openai"),
            ("gen_ai.request.model", "scripted"),
            ("gen_ai.conversation.id", "conv-1"),
            ("gen_ai.request.stream", "false"),
            ("gen_ai.usage.input_tokens", input),
            ("gen_ai.usage.output_tokens", output),
            ("gen_ai.response.finish_reasons", reason),
        ];
        pairs.extend_from_slice(extra);
        expected(&pairs)
    };
    for span in &chats {
        assert_eq!(span.span_kind, SpanKind::Client);
        assert_eq!(span.status, Status::Unset);
    }
    assert_eq!(
        attributes(chats[0]),
        chat("10", "2", r#"["tool_call"]"#, &[])
    );
    assert_eq!(
        attributes(chats[1]),
        chat(
            "20",
            "3",
            r#"["tool_call"]"#,
            &[
                ("gen_ai.usage.cache_read.input_tokens", "8"),
                ("gen_ai.usage.reasoning.output_tokens", "1"),
            ]
        )
    );
    assert_eq!(attributes(chats[2]), chat("30", "4", r#"["stop"]"#, &[]));

    let tool = |name: &str, id: &str, description: &str, error: Option<&str>| {
        let mut pairs = vec![
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", name),
            ("gen_ai.tool.call.id", id),
            ("gen_ai.tool.description", description),
            ("gen_ai.tool.type", "function"),
        ];
        if let Some(error) = error {
            pairs.push(("error.type", error));
        }
        expected(&pairs)
    };
    for (id, text) in [("c1", "one"), ("c2", "two")] {
        let span = find(&spans, "execute_tool echo", "gen_ai.tool.call.id", id);
        assert_eq!(span.span_kind, SpanKind::Internal);
        assert_eq!(span.status, Status::Unset);
        assert_eq!(
            attributes(span),
            tool("echo", id, "Repeat the text back.", None),
            "{text}"
        );
    }
    let failed = find(&spans, "execute_tool fail", "gen_ai.tool.call.id", "c3");
    assert_eq!(
        attributes(failed),
        tool("fail", "c3", "Fail always.", Some("tool_error"))
    );
    assert_eq!(
        failed.status,
        Status::error("Error executing fail: the disk is full")
    );
    let retried = find(&spans, "execute_tool flaky", "gen_ai.tool.call.id", "c4");
    assert_eq!(
        attributes(retried),
        tool("flaky", "c4", "Ask the model to try again.", Some("retry"))
    );
    assert!(matches!(retried.status, Status::Error { .. }));
    let denied = find(&spans, "execute_tool purge", "gen_ai.tool.call.id", "c5");
    assert_eq!(denied.span_kind, SpanKind::Internal);
    assert_eq!(
        attributes(denied),
        tool("purge", "c5", "Delete everything.", Some("denied"))
    );
    assert!(matches!(denied.status, Status::Error { .. }));
}

#[tokio::test]
async fn what_was_said_is_recorded_only_when_the_application_asks() {
    let content_keys = [
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
        "gen_ai.tool.definitions",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
    ];
    let without = traced();
    let dir = tempfile::tempdir().unwrap();
    let model = scenario();
    run_scenario(&scenario_agent(&model, dir.path(), Telemetry::new())).await;
    let spans = without.spans();
    assert_eq!(spans.len(), 10);
    for span in &spans {
        for key in content_keys {
            assert!(
                !attributes(span).contains_key(key),
                "{key} on {}",
                span.name
            );
        }
    }
    // No agent name: the turn's span is plain `invoke_agent`, with no `gen_ai.agent.name`.
    let turn = spans.last().unwrap();
    assert_eq!(turn.name, "invoke_agent");
    assert!(!attributes(turn).contains_key("gen_ai.agent.name"));
    drop(without);

    let with = traced();
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "echo", r#"{"text": "one"}"#),
        ScriptedResponse::text("Said one."),
    ]);
    let agent = Agent::new(
        model,
        AgentOptions::new()
            .root_dir(dir.path())
            .system_prompt("Be brief.")
            .registry(std::sync::Arc::new(tool_core::ToolRegistry::new()))
            .telemetry(Telemetry::new().capture_content(true)),
    );
    agent.add_tool(Echo).unwrap();
    agent.chat("say one").await.unwrap();
    let spans = with.spans();
    let by_name = |name: &str| -> Vec<BTreeMap<String, String>> {
        spans
            .iter()
            .filter(|span| span.name == name)
            .map(attributes)
            .collect()
    };
    let definitions = r#"[{"description":"Repeat the text back.","name":"echo","parameters":{"properties":{"text":{"type":"string"}},"required":["text"],"type":"object"},"type":"function"}]"#;
    let chats = by_name("chat scripted");
    assert_eq!(
        chats[0]["gen_ai.system_instructions"],
        r#"[{"content":"Be brief.","type":"text"}]"#
    );
    assert_eq!(
        chats[0]["gen_ai.input.messages"],
        r#"[{"parts":[{"content":"say one","type":"text"}],"role":"user"}]"#
    );
    assert_eq!(chats[0]["gen_ai.tool.definitions"], definitions);
    assert_eq!(
        chats[0]["gen_ai.output.messages"],
        r#"[{"finish_reason":"tool_call","parts":[{"arguments":{"text":"one"},"id":"c1","name":"echo","type":"tool_call"}],"role":"assistant"}]"#
    );
    assert_eq!(
        chats[1]["gen_ai.input.messages"],
        r#"[{"parts":[{"content":"say one","type":"text"}],"role":"user"},{"parts":[{"arguments":{"text":"one"},"id":"c1","name":"echo","type":"tool_call"}],"role":"assistant"},{"parts":[{"id":"c1","response":"one","type":"tool_call_response"}],"role":"tool"}]"#
    );
    assert_eq!(
        chats[1]["gen_ai.output.messages"],
        r#"[{"finish_reason":"stop","parts":[{"content":"Said one.","type":"text"}],"role":"assistant"}]"#
    );
    let tools = by_name("execute_tool echo");
    assert_eq!(tools[0]["gen_ai.tool.call.arguments"], r#"{"text": "one"}"#);
    assert_eq!(tools[0]["gen_ai.tool.call.result"], "one");
    let turns = by_name("invoke_agent");
    assert_eq!(
        turns[0]["gen_ai.input.messages"],
        r#"[{"parts":[{"content":"say one","type":"text"}],"role":"user"}]"#
    );
    assert_eq!(turns[0]["gen_ai.tool.definitions"], definitions);
    assert_eq!(
        turns[0]["gen_ai.output.messages"],
        r#"[{"finish_reason":"stop","parts":[{"content":"Said one.","type":"text"}],"role":"assistant"}]"#
    );
}

#[tokio::test]
async fn a_provider_over_http_reports_its_name_usage_and_answer() {
    let traced = traced();
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(whole_cached_turn()).await;
    let agent = Agent::new(
        client(provider_wires::anthropic)(&server),
        AgentOptions::new().root_dir(dir.path()),
    );
    let response = tokio::time::timeout(
        Duration::from_secs(30),
        agent.chat("What is in missing.txt?"),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(response.text, "Noted.");

    let spans = traced.spans();
    let names: Vec<&str> = spans.iter().map(|span| &*span.name).collect();
    assert_eq!(
        names,
        [
            "chat claude-test",
            "execute_tool read_file",
            "chat claude-test",
            "invoke_agent",
        ]
    );
    // Step 1: 3 uncached + 412 read, 48 out. Step 2: 4 uncached + 1200 written, 35 out.
    let chat = |id: &str, input: &str, output: &str, cache: (&str, &str), reason: &str| {
        expected(&[
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.provider.name", "anthropic"),
            ("gen_ai.request.model", "claude-test"),
            ("gen_ai.request.stream", "false"),
            ("gen_ai.response.id", id),
            ("gen_ai.response.model", "claude-sonnet-4-5-20250929"),
            ("gen_ai.usage.input_tokens", input),
            ("gen_ai.usage.output_tokens", output),
            (cache.0, cache.1),
            ("gen_ai.response.finish_reasons", reason),
        ])
    };
    assert_eq!(
        attributes(&spans[0]),
        chat(
            "msg_01R",
            "415",
            "48",
            ("gen_ai.usage.cache_read.input_tokens", "412"),
            r#"["tool_call"]"#
        )
    );
    assert_eq!(
        attributes(&spans[2]),
        chat(
            "msg_01W",
            "1204",
            "35",
            ("gen_ai.usage.cache_creation.input_tokens", "1200"),
            r#"["stop"]"#
        )
    );
    assert_eq!(spans[0].span_kind, SpanKind::Client);
    let turn = attributes(&spans[3]);
    assert_eq!(turn["gen_ai.usage.input_tokens"], "1619");
    assert_eq!(turn["gen_ai.usage.cache_read.input_tokens"], "412");
    assert_eq!(turn["gen_ai.usage.cache_creation.input_tokens"], "1200");
    // The model asked for a file that is not there: the tool failed.
    let read = attributes(&spans[1]);
    assert_eq!(read["gen_ai.tool.name"], "read_file");
    assert_eq!(read["error.type"], "tool_error");
}

/// A wire, a streamed answer, and the span name, response id and model it gives.
type Row = (
    fn() -> provider_wires::Wire,
    &'static [u8],
    &'static str,
    &'static str,
    &'static str,
);

#[tokio::test]
async fn a_streamed_call_reports_its_first_chunk_and_the_answers_id_and_model() {
    let rows: [Row; 3] = [
        (
            provider_wires::openai,
            include_bytes!("../transcripts/openai/text.sse"),
            "chat gpt-4o-mini",
            "chatcmpl-T1",
            "gpt-4o-mini-2024-07-18",
        ),
        (
            provider_wires::responses,
            include_bytes!("../transcripts/responses/text.sse"),
            "chat gpt-4o-mini",
            "resp_67ccd2bed1ec8190b14f964abc054267",
            "gpt-4o-mini-2024-07-18",
        ),
        (
            provider_wires::gemini,
            include_bytes!("../transcripts/gemini/cached_thoughts.sse"),
            "chat gemini-test",
            "resp-T5",
            "gemini-2.5-flash",
        ),
    ];
    for (wire, transcript, name, id, model) in rows {
        let traced = traced();
        let dir = tempfile::tempdir().unwrap();
        let server = Server::start(vec![Reply::sse(transcript)]).await;
        let agent = Agent::new(
            client(wire)(&server),
            AgentOptions::new().root_dir(dir.path()),
        );
        let events: Vec<_> = tokio::time::timeout(
            Duration::from_secs(30),
            agent.stream_chat("hello").collect::<Vec<_>>(),
        )
        .await
        .unwrap();
        assert!(events.iter().all(Result::is_ok), "{events:?}");

        let spans = traced.spans();
        assert_eq!(spans[0].name, name);
        let chat = attributes(&spans[0]);
        let first_chunk: f64 = chat["gen_ai.response.time_to_first_chunk"].parse().unwrap();
        assert!(first_chunk > 0.0 && first_chunk < 30.0, "{first_chunk}");
        assert_eq!(chat["gen_ai.request.stream"], "true", "{name}");
        assert_eq!(chat["gen_ai.response.id"], id, "{name}");
        assert_eq!(chat["gen_ai.response.model"], model, "{name}");
    }
}

/// The histograms of the scenario, read from the SDK's in-memory metric exporter.
#[tokio::test]
async fn the_three_histograms_are_recorded_with_the_conventions_attributes() {
    let exporter = InMemoryMetricExporter::default();
    let meters = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    let dir = tempfile::tempdir().unwrap();
    let model = scenario();
    let agent = scenario_agent(
        &model,
        dir.path(),
        Telemetry::new()
            .agent_name("helper")
            .meter_provider(&meters),
    );
    run_scenario(&agent).await;
    meters.force_flush().unwrap();

    // name -> (attributes -> (count, sum))
    let mut seen: BTreeMap<String, BTreeMap<String, (u64, f64)>> = BTreeMap::new();
    let mut units = BTreeMap::new();
    for resource in exporter.get_finished_metrics().unwrap() {
        for scope in resource.scope_metrics() {
            assert_eq!(scope.scope().name(), "tool-core");
            for metric in scope.metrics() {
                units.insert(metric.name().to_owned(), metric.unit().to_owned());
                let points = seen.entry(metric.name().to_owned()).or_default();
                match metric.data() {
                    AggregatedMetrics::U64(MetricData::Histogram(histogram)) => {
                        for point in histogram.data_points() {
                            points.insert(
                                key(point.attributes()),
                                (point.count(), point.sum() as f64),
                            );
                        }
                    }
                    AggregatedMetrics::F64(MetricData::Histogram(histogram)) => {
                        for point in histogram.data_points() {
                            points.insert(key(point.attributes()), (point.count(), 0.0));
                        }
                    }
                    _ => panic!("{} is not a histogram", metric.name()),
                }
            }
        }
    }
    assert_eq!(
        units,
        BTreeMap::from([
            (
                "gen_ai.client.operation.duration".to_owned(),
                "s".to_owned()
            ),
            ("gen_ai.client.token.usage".to_owned(), "{token}".to_owned()),
            ("gen_ai.execute_tool.duration".to_owned(), "s".to_owned()),
        ])
    );
    let chat =
        "gen_ai.operation.name=chat,gen_ai.provider.name=openai,gen_ai.request.model=scripted";
    assert_eq!(
        seen["gen_ai.client.token.usage"],
        BTreeMap::from([
            (format!("{chat},gen_ai.token.type=input"), (3, 60.0)),
            (format!("{chat},gen_ai.token.type=output"), (3, 9.0)),
        ])
    );
    assert_eq!(
        seen["gen_ai.client.operation.duration"],
        BTreeMap::from([(chat.to_owned(), (3, 0.0))])
    );
    let tool = |name: &str, error: Option<&str>| {
        let mut key = format!(
            "gen_ai.agent.name=helper,gen_ai.operation.name=execute_tool,gen_ai.tool.name={name},gen_ai.tool.type=function"
        );
        if let Some(error) = error {
            key = format!("error.type={error},{key}");
        }
        key
    };
    assert_eq!(
        seen["gen_ai.execute_tool.duration"],
        BTreeMap::from([
            (tool("echo", None), (2, 0.0)),
            (tool("fail", Some("tool_error")), (1, 0.0)),
            (tool("flaky", Some("retry")), (1, 0.0)),
            (tool("purge", Some("denied")), (1, 0.0)),
        ])
    );
}

fn key<'a>(attributes: impl Iterator<Item = &'a opentelemetry::KeyValue>) -> String {
    let mut pairs: Vec<String> = attributes
        .map(|pair| format!("{}={}", pair.key, pair.value))
        .collect();
    pairs.sort();
    pairs.join(",")
}
