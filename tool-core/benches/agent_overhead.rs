//! The agent's own overhead per turn: a turn on the scripted model (one step of four tool calls,
//! then the answer) against a loop that parses the same arguments and calls the same tool
//! directly, and against the same calls through `ToolRegistry::execute`. Prints the ratios.
//!
//! With `--features otel`, also the cost of the OpenTelemetry instrumentation: the same turn
//! with no subscriber (the feature compiled in, nobody listening: compare with `agent` of a run
//! without the feature) and with spans exported to the SDK's in-memory exporter, per span.

use std::{
    hint::black_box,
    sync::Arc,
    time::{Duration, Instant},
};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use tool_core::{
    Agent, AgentOptions, ChatTool, ExecutableTool, JsonObject, ToolError, ToolRegistry,
    model::{ScriptedModel, ScriptedResponse, ToolCall},
};

const CALLS: usize = 4;

struct Echo;

#[tool_core::async_trait]
impl ExecutableTool for Echo {
    fn name(&self) -> &str {
        "echo"
    }

    fn get_schema(&self) -> ChatTool {
        ChatTool::new(
            "echo",
            "Repeat the text back.",
            json!({
                "type": "object",
                "properties": { "text": { "type": "string" } },
                "required": ["text"]
            }),
        )
    }

    async fn execute(&self, args: JsonObject) -> Result<String, ToolError> {
        Ok(args
            .get("text")
            .and_then(|text| text.as_str())
            .unwrap_or_default()
            .to_owned())
    }
}

fn calls() -> Vec<ToolCall> {
    (0..CALLS)
        .map(|i| {
            ToolCall::new(
                format!("call_{i}"),
                "echo",
                format!(r#"{{"text": "hello number {i}"}}"#),
            )
        })
        .collect()
}

/// The baseline: parse each call's arguments and run the tool, collecting the results.
async fn direct(tool: &Echo, calls: &[ToolCall]) -> Vec<String> {
    let mut results = Vec::with_capacity(calls.len());
    for call in calls {
        let args: JsonObject = serde_json::from_str(&call.arguments).unwrap_or_default();
        results.push(tool.execute(args).await.unwrap_or_default());
    }
    results
}

/// The same calls through the registry (lookup, schema validation, panic guard).
async fn via_registry(registry: &ToolRegistry, calls: &[ToolCall]) -> Vec<String> {
    let mut results = Vec::with_capacity(calls.len());
    for call in calls {
        let args: JsonObject = serde_json::from_str(&call.arguments).unwrap_or_default();
        results.push(registry.execute(&call.name, args).await);
    }
    results
}

/// One agent turn: the model asks for the calls, the agent runs them, the model answers.
async fn agent_turn(agent: &Agent, model: &ScriptedModel, calls: &[ToolCall]) -> String {
    agent.clear_context();
    model.push(ScriptedResponse::tool_calls(calls.iter().cloned()));
    model.push(ScriptedResponse::text("done"));
    match agent.chat("go").await {
        Ok(reply) => reply.text,
        Err(error) => error.to_string(),
    }
}

struct Setup {
    runtime: tokio::runtime::Runtime,
    tool: Echo,
    registry: Arc<ToolRegistry>,
    agent: Agent,
    model: ScriptedModel,
    calls: Vec<ToolCall>,
}

fn setup() -> Setup {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|error| panic!("cannot build a runtime: {error}"));
    let registry = Arc::new(ToolRegistry::new());
    if let Err(error) = registry.register(Echo) {
        panic!("cannot register echo: {error}");
    }
    let model = ScriptedModel::new([]);
    let agent = Agent::new(
        model.clone(),
        AgentOptions::new().registry(registry.clone()),
    );
    Setup {
        runtime,
        tool: Echo,
        registry,
        agent,
        model,
        calls: calls(),
    }
}

fn bench(c: &mut Criterion) {
    let s = setup();
    let mut group = c.benchmark_group("agent_overhead");
    group.bench_function("direct_tool_calls", |b| {
        b.iter(|| s.runtime.block_on(direct(&s.tool, black_box(&s.calls))));
    });
    group.bench_function("registry_execute", |b| {
        b.iter(|| {
            s.runtime
                .block_on(via_registry(&s.registry, black_box(&s.calls)))
        });
    });
    group.bench_function("agent_turn_scripted", |b| {
        b.iter(|| {
            s.runtime
                .block_on(agent_turn(&s.agent, &s.model, black_box(&s.calls)))
        });
    });
    #[cfg(feature = "otel")]
    {
        let traced = otel::InMemory::new();
        group.bench_function("agent_turn_otel_in_memory", |b| {
            b.iter(|| traced.turn(&s));
        });
    }
    group.finish();
    print_ratios(&s);
}

/// A subscriber that turns the agent's spans into OpenTelemetry spans kept in memory.
#[cfg(feature = "otel")]
mod otel {
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
    use tracing_subscriber::layer::SubscriberExt as _;

    use super::{Setup, agent_turn};

    /// The spans of one turn: the turn, its two model calls and its four tool calls.
    pub(super) const SPANS_PER_TURN: u32 = 7;

    pub(super) struct InMemory {
        exporter: InMemorySpanExporter,
        _provider: SdkTracerProvider,
        dispatch: tracing::Dispatch,
    }

    impl InMemory {
        pub(super) fn new() -> Self {
            let exporter = InMemorySpanExporter::default();
            let provider = SdkTracerProvider::builder()
                .with_simple_exporter(exporter.clone())
                .build();
            let subscriber = tracing_subscriber::registry()
                .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("bench")));
            Self {
                exporter,
                _provider: provider,
                dispatch: tracing::Dispatch::new(subscriber),
            }
        }

        /// One turn with this subscriber; the exported spans are dropped after it, so memory
        /// stays flat however many turns run.
        pub(super) fn turn(&self, s: &Setup) -> String {
            let reply = tracing::dispatcher::with_default(&self.dispatch, || {
                s.runtime.block_on(agent_turn(&s.agent, &s.model, &s.calls))
            });
            self.exporter.reset();
            reply
        }
    }
}

/// Times the three paths in the same run and prints the agent's cost relative to each
/// baseline.
fn print_ratios(s: &Setup) {
    fn time(iterations: u32, mut run: impl FnMut()) -> Duration {
        for _ in 0..iterations / 10 {
            run();
        }
        let start = Instant::now();
        for _ in 0..iterations {
            run();
        }
        start.elapsed() / iterations
    }
    let iterations = 2_000;
    let direct_time = time(iterations, || {
        black_box(s.runtime.block_on(direct(&s.tool, &s.calls)));
    });
    let registry_time = time(iterations, || {
        black_box(s.runtime.block_on(via_registry(&s.registry, &s.calls)));
    });
    let agent_time = time(iterations, || {
        black_box(s.runtime.block_on(agent_turn(&s.agent, &s.model, &s.calls)));
    });
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64().max(1e-12);
    #[cfg(feature = "otel")]
    {
        let traced = otel::InMemory::new();
        let exported = time(iterations, || {
            black_box(traced.turn(s));
        });
        println!(
            "agent_overhead (otel): turn with no subscriber {agent_time:?} (compare `agent` of \
             a run without the feature), with the in-memory exporter {exported:?}: \
             {:?} per span ({} spans a turn)",
            exported.saturating_sub(agent_time) / otel::SPANS_PER_TURN,
            otel::SPANS_PER_TURN,
        );
    }
    println!(
        "agent_overhead: {CALLS} tool calls per turn (2 model steps): direct {direct_time:?}, \
         registry {registry_time:?}, agent {agent_time:?}; agent/direct = {:.1}x, \
         agent/registry = {:.1}x, agent overhead per step = {:?}",
        ratio(agent_time, direct_time),
        ratio(agent_time, registry_time),
        agent_time.saturating_sub(registry_time) / 2,
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
