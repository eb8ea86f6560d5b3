//! The agent's own overhead per turn: a turn on the scripted model (one step of four tool calls,
//! then the answer) against a loop that parses the same arguments and calls the same tool
//! directly, and against the same calls through `ToolRegistry::execute`. After criterion's
//! report it prints the agent's cost against each baseline (timed in alternating rounds, see
//! `support::Paired`), criterion's mean time per turn and the allocations of one turn of each.
//!
//! The OpenTelemetry instrumentation's cost takes two builds of this bench, since the `otel`
//! feature is chosen at compile time:
//!
//! - without the feature (the baseline): `nice cargo bench -p tool-core --bench agent_overhead`;
//! - with it: `nice cargo bench -p tool-core --bench agent_overhead --features otel`. Its
//!   `agent` turn is the feature on with no subscriber (an application that installs no
//!   OpenTelemetry); `otel_in_memory` is a turn whose spans go through `tracing-opentelemetry`
//!   into the SDK's in-memory span exporter and whose metrics into an SDK meter provider with
//!   the in-memory metric exporter.
//!
//! Each build reports its turn against the same direct baseline, so the two builds' ratios
//! compare even on a machine whose speed drifts. For figures that do not drift at all,
//! `AGENT_OVERHEAD_CASE=<direct|registry|agent|otel_in_memory> AGENT_OVERHEAD_TURNS=<n>` runs
//! that case `n` times and nothing else, for `valgrind --tool=callgrind`: the difference
//! between two turn counts is the instructions of that many turns.
//! `tool-core/benches/agent_overhead_otel.sh` does all of this and prints the table.
//!
//! The bench runs on `stats_alloc`'s counting allocator (for the allocation figures), which
//! makes every allocation of every case a little dearer.

use std::{hint::black_box, sync::Arc};

use criterion::{Criterion, criterion_group};
use serde_json::json;
use tool_core::{
    Agent, AgentOptions, ChatTool, ExecutableTool, JsonObject, ToolError, ToolRegistry,
    model::{ScriptedModel, ScriptedResponse, ToolCall},
};

#[path = "support/counting.rs"]
mod counting;
mod support;

const CALLS: usize = 4;

/// Whether this build has the instrumentation, for the report.
const BUILD: &str = if cfg!(feature = "otel") {
    "otel on"
} else {
    "otel off"
};

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
    #[cfg(feature = "otel")]
    traced: otel::InMemory,
}

impl Setup {
    fn new() -> Self {
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
        Self {
            runtime,
            tool: Echo,
            #[cfg(feature = "otel")]
            traced: otel::InMemory::new(registry.clone()),
            registry,
            agent,
            model,
            calls: calls(),
        }
    }

    fn direct(&self) -> Vec<String> {
        self.runtime
            .block_on(direct(&self.tool, black_box(&self.calls)))
    }

    fn registry(&self) -> Vec<String> {
        self.runtime
            .block_on(via_registry(&self.registry, black_box(&self.calls)))
    }

    fn agent(&self) -> String {
        self.runtime
            .block_on(agent_turn(&self.agent, &self.model, black_box(&self.calls)))
    }

    /// Runs `case` (`direct`, `registry`, `agent`, or `otel_in_memory` with the feature)
    /// once; `None` for a case this build does not have.
    fn run(&self, case: &str) -> Option<()> {
        match case {
            "direct" => drop(black_box(self.direct())),
            "registry" => drop(black_box(self.registry())),
            "agent" => drop(black_box(self.agent())),
            #[cfg(feature = "otel")]
            "otel_in_memory" => drop(black_box(self.traced.turn(self))),
            _ => return None,
        }
        Some(())
    }
}

/// The cases this build times, in the report's order.
const CASES: &[&str] = &[
    "direct",
    "registry",
    "agent",
    #[cfg(feature = "otel")]
    "otel_in_memory",
];

fn bench(c: &mut Criterion) {
    let s = Setup::new();
    // Every path answers before it is timed.
    assert_eq!(s.direct().len(), CALLS);
    assert_eq!(s.registry(), s.direct());
    assert_eq!(s.agent(), "done");
    #[cfg(feature = "otel")]
    assert_eq!(s.traced.turn(&s), "done");
    let mut group = c.benchmark_group("agent_overhead");
    for case in CASES {
        group.bench_function(*case, |b| b.iter(|| s.run(case)));
    }
    group.finish();
}

/// A subscriber that turns the agent's spans into OpenTelemetry spans kept in memory, and an
/// agent whose metrics go to an SDK meter provider with the in-memory metric exporter.
#[cfg(feature = "otel")]
mod otel {
    use std::sync::Arc;

    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_sdk::{
        metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider},
        trace::{InMemorySpanExporter, SdkTracerProvider},
    };
    use tool_core::{Agent, AgentOptions, ToolRegistry, model::ScriptedModel, otel::Telemetry};
    use tracing_subscriber::layer::SubscriberExt as _;

    use super::{Setup, agent_turn};

    /// The spans of one turn: the turn, its two model calls and its four tool calls.
    pub(super) const SPANS_PER_TURN: u32 = 7;

    pub(super) struct InMemory {
        exporter: InMemorySpanExporter,
        _provider: SdkTracerProvider,
        _meters: SdkMeterProvider,
        dispatch: tracing::Dispatch,
        agent: Agent,
        model: ScriptedModel,
    }

    impl InMemory {
        pub(super) fn new(registry: Arc<ToolRegistry>) -> Self {
            let exporter = InMemorySpanExporter::default();
            let provider = SdkTracerProvider::builder()
                .with_simple_exporter(exporter.clone())
                .build();
            let subscriber = tracing_subscriber::registry()
                .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("bench")));
            let meters = SdkMeterProvider::builder()
                .with_reader(PeriodicReader::builder(InMemoryMetricExporter::default()).build())
                .build();
            let model = ScriptedModel::new([]);
            let agent = Agent::new(
                model.clone(),
                AgentOptions::new()
                    .registry(registry)
                    .telemetry(Telemetry::new().meter_provider(&meters)),
            );
            Self {
                exporter,
                _provider: provider,
                _meters: meters,
                dispatch: tracing::Dispatch::new(subscriber),
                agent,
                model,
            }
        }

        /// One turn with this subscriber; the exported spans are dropped after it, so memory
        /// stays flat however many turns run.
        pub(super) fn turn(&self, s: &Setup) -> String {
            let reply = tracing::dispatcher::with_default(&self.dispatch, || {
                s.runtime
                    .block_on(agent_turn(&self.agent, &self.model, &s.calls))
            });
            self.exporter.reset();
            reply
        }
    }
}

/// After criterion: the agent against its baselines in alternating rounds, criterion's mean
/// per turn, and each case's allocations per turn.
fn report() {
    let s = Setup::new();
    println!("\n== agent_overhead ({BUILD}): {CALLS} tool calls per turn, 2 model steps ==");
    for case in CASES {
        let per_turn = support::mean_ns("agent_overhead", case).map_or_else(
            || "not timed".to_owned(),
            |ns| format!("{:.1} µs", ns / 1e3),
        );
        // The first turns make what later turns reuse.
        for _ in 0..10 {
            s.run(case);
        }
        let turns = 100;
        let (count, bytes) = counting::allocations(|| {
            for _ in 0..turns {
                s.run(case);
            }
        });
        println!(
            "{case}: {per_turn} a turn (criterion mean), {} allocations ({} bytes) a turn",
            count / turns,
            bytes / turns
        );
    }
    support::print_paired(
        &format!("agent / direct ({BUILD})"),
        &support::Paired::measure(|| s.agent(), || s.direct()),
    );
    support::print_paired(
        &format!("agent / registry ({BUILD})"),
        &support::Paired::measure(|| s.agent(), || s.registry()),
    );
    #[cfg(feature = "otel")]
    {
        let paired = support::Paired::measure(|| s.traced.turn(&s), || s.agent());
        support::print_paired("otel_in_memory / agent (no subscriber)", &paired);
        if let Some(agent) = support::mean_ns("agent_overhead", "agent") {
            println!(
                "the in-memory exporter adds about {:.2} µs a span ({} spans a turn)",
                agent * (paired.median - 1.0) / 1e3 / f64::from(otel::SPANS_PER_TURN),
                otel::SPANS_PER_TURN
            );
        }
    }
}

/// `AGENT_OVERHEAD_CASE` and `AGENT_OVERHEAD_TURNS`, when both are set.
fn count_mode() -> Option<(String, usize)> {
    let case = std::env::var("AGENT_OVERHEAD_CASE").ok()?;
    let turns = std::env::var("AGENT_OVERHEAD_TURNS").ok()?;
    let turns = turns
        .parse()
        .unwrap_or_else(|_| panic!("AGENT_OVERHEAD_TURNS is not a count: {turns}"));
    Some((case, turns))
}

criterion_group!(benches, bench);

fn main() {
    if let Some((case, turns)) = count_mode() {
        let s = Setup::new();
        for _ in 0..turns {
            if s.run(&case).is_none() {
                panic!("no case {case} in this build ({BUILD}); cases: {CASES:?}");
            }
        }
        return;
    }
    let listing = std::env::args().any(|arg| arg == "--list" || arg == "--test");
    benches();
    Criterion::default().configure_from_args().final_summary();
    if !listing {
        report();
    }
}
