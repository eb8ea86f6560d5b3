//! Registry benchmarks, each against a hand-written baseline in the same run:
//!
//! - dispatch: the model's argument text to the result string, for `#[tool]` fns taking a
//!   2-integer struct, a nested struct with `Vec` and `Option`, a 40-field struct, and a struct
//!   with bounds and a length the schema states and serde does not check. The limit ("typed") is
//!   a map of boxed closures that `serde_json::from_str` the text into the arguments type; the
//!   registry is timed on the text path (`execute_text`) and on the object path (`execute` on a
//!   parsed `JsonObject`), each with and without validation, and a snapshot of it on the text
//!   path (`RegistrySnapshot::execute_text`: what an agent's turn does, with no lock). The
//!   object path's own baselines: the text parsed into a `serde_json::Value` and `from_value`
//!   called ("value"), the same behind a map of boxed closures by tool name, as a hand-written
//!   dispatcher has it ("value_dispatch"), and a peer's, rmcp's `ToolRouter` (what an rmcp
//!   server runs for a `tools/call`; see `support/rmcp_router.rs`);
//! - parts: the 2-integer call's share spent in the tool itself and in the registry's lookup;
//! - first call: a tool's first call in a fresh registry (its argument checks are worked out
//!   then) against its later calls;
//! - definitions per request: the enabled tools of a 1,000-tool registry as JSON ready to send;
//! - scale: dispatch in a 1,000-tool registry against a 3-tool one, and building a 1,000-tool
//!   registry against filling a `HashMap`: one by one (`register_arc` against `insert`), and in
//!   bulk (`register_all` against `collect`, which sizes the map once).
//!
//! After criterion's own report, every ratio a target is set for is measured again with the
//! candidate and its baseline timed in alternating rounds (`support::Paired`), which holds
//! steady on a machine whose speed drifts between criterion's separate runs. The allocations
//! of each path are counted by the `dispatch_allocations` bench, apart from these timings
//! (counting makes every allocation dearer).
//!
//! With `REGISTRY_BENCH_REPEAT=<case>/<path>:<calls>` (a case of `CASES`; a path of `PATHS`,
//! or `typed`, `value`, `value_dispatch` or `rmcp` for the baselines) the bench makes only that call, that many
//! times, and exits: run it under `valgrind --tool=callgrind` with two call counts, and the
//! difference of the instruction counts over the difference of the calls is one call's
//! instructions, which a loaded machine does not blur.

use std::{collections::HashMap, hint::black_box, sync::Arc};

use criterion::{BatchSize, Criterion, criterion_group};
use tool_core::{ExecutableTool, Provider, RegistryOptions, TextCall, ToolRegistry};

#[path = "support/dispatch.rs"]
mod dispatch_cases;
#[path = "support/rmcp_router.rs"]
mod rmcp_router;
mod support;
use dispatch_cases::{
    CASES, PATHS, Path, Registries, TypedTool, cases, dispatch_object, dispatch_text,
    nested_result, registry, typed, value_dispatch,
};
use rmcp_router::RmcpRouter;

// --- dispatch --------------------------------------------------------------------------------

fn dispatch(c: &mut Criterion) {
    let registries = Registries::new();
    let rmcp = RmcpRouter::for_cases();
    for case in cases() {
        // Every path must agree before it is timed.
        let expected = (case.baseline_value)(&case.text);
        assert_eq!(typed(&case), expected);
        assert_eq!(value_dispatch(&case), expected);
        assert_eq!(rmcp.dispatch(case.name, &case.text), expected, "rmcp");
        for (label, path, validate) in PATHS {
            assert_eq!(
                registries.dispatch((path, validate), &case),
                expected,
                "{label}"
            );
        }

        let mut group = c.benchmark_group(format!("dispatch/{}", case.name));
        group.bench_function("baseline_fn_map", |b| b.iter(|| typed(&case)));
        group.bench_function("baseline_value_deserialize", |b| {
            b.iter(|| (case.baseline_value)(black_box(&case.text)));
        });
        group.bench_function("baseline_value_dispatch", |b| {
            b.iter(|| value_dispatch(&case));
        });
        group.bench_function("peer_rmcp_router", |b| {
            b.iter(|| rmcp.dispatch(black_box(case.name), black_box(&case.text)));
        });
        for (label, path, validate) in PATHS {
            group.bench_function(label, |b| {
                b.iter(|| registries.dispatch((path, validate), &case));
            });
        }
        group.finish();
    }
}

// --- where a call's time goes --------------------------------------------------------------

/// The parts of a registry call of the 2-integer tool: the tool's own text path with no
/// registry around it, and the registry's lookup (lock, map, shared entry).
fn parts(c: &mut Criterion) {
    let text = r#"{"a": 2, "b": 3}"#;
    let tool = dispatch_cases::add_tool();
    let registry = registry(RegistryOptions::new());
    let mut group = c.benchmark_group("parts");
    group.bench_function("tool_execute_text", |b| {
        b.iter(|| match tool.execute_text(black_box(text), None) {
            TextCall::Finished(Ok(result)) => result,
            _ => String::new(),
        });
    });
    group.bench_function("registry_get", |b| {
        b.iter(|| registry.get(black_box("add")));
    });
    group.bench_function("registry_execute_text", |b| {
        b.iter(|| dispatch_text(&registry, black_box("add"), black_box(text)));
    });
    group.finish();
}

// --- first call ------------------------------------------------------------------------------

/// A tool's first call in a fresh registry works out its argument checks (on the object path,
/// the JSON Schema validator); later calls reuse them.
fn first_call(c: &mut Criterion) {
    let mut group = c.benchmark_group("first_call");
    for case in cases() {
        for (path, text_path) in [("text", true), ("object", false)] {
            let run = |registry: &mut ToolRegistry| {
                if text_path {
                    dispatch_text(registry, case.name, &case.text)
                } else {
                    dispatch_object(registry, case.name, &case.text)
                }
            };
            group.bench_function(format!("{}_{path}_first", case.name), |b| {
                b.iter_batched_ref(
                    || registry(RegistryOptions::new()),
                    run,
                    BatchSize::SmallInput,
                );
            });
            group.bench_function(format!("{}_{path}_later", case.name), |b| {
                b.iter_batched_ref(
                    || {
                        let mut warm = registry(RegistryOptions::new());
                        run(&mut warm);
                        warm
                    },
                    run,
                    BatchSize::SmallInput,
                );
            });
        }
    }
    group.finish();
}

// --- definitions per request -----------------------------------------------------------------

fn thousand_tools() -> Vec<Arc<dyn ExecutableTool>> {
    (0..1000)
        .map(|i| {
            Arc::new(TypedTool::new(&format!("tool_{i}"), nested_result)) as Arc<dyn ExecutableTool>
        })
        .collect()
}

fn definitions(c: &mut Criterion) {
    let registry = ToolRegistry::new();
    for tool in thousand_tools() {
        registry
            .register_arc(tool)
            .unwrap_or_else(|error| panic!("{error}"));
    }
    let schemas = registry.get_enabled_schemas();
    let mut group = c.benchmark_group("definitions");
    group.bench_function("baseline_serialize_all", |b| {
        b.iter(|| serde_json::to_string(black_box(&schemas)).unwrap_or_default());
    });
    for provider in Provider::ALL {
        // Warm the per-tool caches, as any earlier request would have.
        registry.snapshot().provider_json(provider);
        group.bench_function(format!("unchanged_{provider}"), |b| {
            b.iter(|| registry.snapshot().provider_json(black_box(provider)));
        });
        group.bench_function(format!("one_change_{provider}"), |b| {
            b.iter(|| {
                black_box(registry.disable("tool_500"));
                black_box(registry.enable("tool_500"));
                registry.snapshot().provider_json(black_box(provider))
            });
        });
    }
    group.finish();
}

// --- scale -----------------------------------------------------------------------------------

fn scale(c: &mut Criterion) {
    let small = registry(RegistryOptions::new());
    let large = large_registry();
    let text = r#"{"a": 2, "b": 3}"#;
    let mut group = c.benchmark_group("scale");
    group.bench_function("dispatch_in_3_tools", |b| {
        b.iter(|| dispatch_text(&small, black_box("add"), black_box(text)));
    });
    group.bench_function("dispatch_in_1000_tools", |b| {
        b.iter(|| dispatch_text(&large, black_box("add"), black_box(text)));
    });

    let tools = thousand_tools();
    group.bench_function("baseline_hashmap_fill_1000", |b| {
        b.iter_batched(|| tools.clone(), fill_map, BatchSize::SmallInput);
    });
    group.bench_function("build_registry_1000", |b| {
        b.iter_batched(|| tools.clone(), register_each, BatchSize::SmallInput);
    });
    group.bench_function("baseline_hashmap_collect_1000", |b| {
        b.iter_batched(|| tools.clone(), collect_map, BatchSize::SmallInput);
    });
    group.bench_function("build_registry_1000_register_all", |b| {
        b.iter_batched(|| tools.clone(), register_all, BatchSize::SmallInput);
    });
    group.finish();
}

/// The 3 benchmark tools and 1,000 more.
fn large_registry() -> ToolRegistry {
    let large = registry(RegistryOptions::new());
    for tool in thousand_tools() {
        large
            .register_arc(tool)
            .unwrap_or_else(|error| panic!("{error}"));
    }
    large
}

/// The one-by-one baseline.
fn fill_map(tools: Vec<Arc<dyn ExecutableTool>>) -> HashMap<String, Arc<dyn ExecutableTool>> {
    let mut map = HashMap::new();
    for tool in tools {
        map.insert(tool.name().to_owned(), tool);
    }
    map
}

fn register_each(tools: Vec<Arc<dyn ExecutableTool>>) -> ToolRegistry {
    let registry = ToolRegistry::new();
    for tool in tools {
        let _ = registry.register_arc(tool);
    }
    registry
}

/// The bulk baseline: `collect` sizes the map once, as `register_all` does the registry.
fn collect_map(tools: Vec<Arc<dyn ExecutableTool>>) -> HashMap<String, Arc<dyn ExecutableTool>> {
    tools
        .into_iter()
        .map(|tool| (tool.name().to_owned(), tool))
        .collect()
}

fn register_all(tools: Vec<Arc<dyn ExecutableTool>>) -> ToolRegistry {
    let registry = ToolRegistry::new();
    let errors = registry.register_all(tools);
    debug_assert!(errors.is_empty());
    registry
}

criterion_group!(benches, dispatch, parts, first_call, definitions, scale);

/// `REGISTRY_BENCH_REPEAT`'s calls (see the module docs); `false` when it is not set.
fn repeat_only() -> bool {
    let Ok(spec) = std::env::var("REGISTRY_BENCH_REPEAT") else {
        return false;
    };
    let (which, calls) = spec.split_once(':').unwrap_or((spec.as_str(), "1"));
    let calls: usize = calls.parse().unwrap_or(1);
    let (name, path) = which
        .split_once('/')
        .unwrap_or((which, "registry_validated"));
    let case = cases()
        .into_iter()
        .find(|case| case.name == name)
        .unwrap_or_else(|| panic!("no case {name}; cases: {CASES:?}"));
    let registries = Registries::new();
    let rmcp = RmcpRouter::for_cases();
    let call: Box<dyn Fn() -> String> = match path {
        "typed" => Box::new(|| typed(&case)),
        "value" => Box::new(|| (case.baseline_value)(black_box(&case.text))),
        "value_dispatch" => Box::new(|| value_dispatch(&case)),
        "rmcp" => Box::new(|| rmcp.dispatch(black_box(case.name), black_box(&case.text))),
        label => {
            let (_, path, validate) = PATHS
                .into_iter()
                .find(|(known, _, _)| *known == label)
                .unwrap_or_else(|| panic!("no path {label}"));
            Box::new(move || registries.dispatch((path, validate), &case))
        }
    };
    for _ in 0..calls {
        black_box(call());
    }
    true
}

fn main() {
    if repeat_only() {
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();

    let mut pairs = Vec::new();
    let groups: Vec<String> = CASES
        .iter()
        .map(|name| format!("dispatch/{name}"))
        .collect();
    for group in &groups {
        for (label, _, _) in PATHS {
            pairs.push((group.as_str(), label, "baseline_fn_map"));
        }
        pairs.push((
            group.as_str(),
            "registry_text_validated",
            "registry_text_unvalidated",
        ));
        pairs.push((
            group.as_str(),
            "registry_validated",
            "baseline_value_deserialize",
        ));
        pairs.push((
            group.as_str(),
            "peer_rmcp_router",
            "baseline_value_deserialize",
        ));
        pairs.push((
            group.as_str(),
            "registry_validated",
            "baseline_value_dispatch",
        ));
        pairs.push((
            group.as_str(),
            "peer_rmcp_router",
            "baseline_value_dispatch",
        ));
        pairs.push((group.as_str(), "registry_validated", "peer_rmcp_router"));
    }
    let providers: Vec<(String, String)> = Provider::ALL
        .iter()
        .map(|provider| {
            (
                format!("unchanged_{provider}"),
                format!("one_change_{provider}"),
            )
        })
        .collect();
    for (unchanged, changed) in &providers {
        pairs.push(("definitions", unchanged.as_str(), "baseline_serialize_all"));
        pairs.push(("definitions", changed.as_str(), "baseline_serialize_all"));
    }
    pairs.push(("scale", "dispatch_in_1000_tools", "dispatch_in_3_tools"));
    pairs.push(("scale", "build_registry_1000", "baseline_hashmap_fill_1000"));
    pairs.push((
        "scale",
        "build_registry_1000_register_all",
        "baseline_hashmap_collect_1000",
    ));
    pairs.push(("parts", "tool_execute_text", "registry_execute_text"));
    pairs.push(("parts", "registry_get", "registry_execute_text"));
    support::print_ratios("registry", &pairs);
    print_first_calls();
    paired_ratios();
}

/// What a tool's first call costs more than its later ones, from criterion's estimates.
fn print_first_calls() {
    println!("\n== registry: first call in a fresh registry, against later calls (mean time) ==");
    for name in CASES {
        for path in ["text", "object"] {
            let first = support::mean_ns("first_call", &format!("{name}_{path}_first"));
            let later = support::mean_ns("first_call", &format!("{name}_{path}_later"));
            match (first, later) {
                (Some(first), Some(later)) => println!(
                    "first_call/{name} ({path} path): first {:.2} µs, later {:.2} µs, +{:.2} µs",
                    first / 1000.0,
                    later / 1000.0,
                    (first - later) / 1000.0
                ),
                _ => println!("first_call/{name} ({path} path): not measured in this run"),
            }
        }
    }
}

/// The targets' ratios again, each pair timed in alternating rounds (see `support::Paired`).
fn paired_ratios() {
    println!("\n== registry: paired ratios (candidate / baseline, alternating rounds) ==");
    let registries = Registries::new();
    let rmcp = RmcpRouter::for_cases();
    for case in cases() {
        for (label, path, validate) in PATHS {
            let paired = support::Paired::measure(
                || registries.dispatch((path, validate), &case),
                || typed(&case),
            );
            support::print_paired(&format!("dispatch/{}: {label} / typed", case.name), &paired);
        }
        let paired = support::Paired::measure(
            || registries.dispatch((Path::Text, true), &case),
            || registries.dispatch((Path::Text, false), &case),
        );
        support::print_paired(
            &format!(
                "dispatch/{}: registry_text_validated / registry_text_unvalidated",
                case.name
            ),
            &paired,
        );
        let paired = support::Paired::measure(
            || registries.dispatch((Path::Object, true), &case),
            || (case.baseline_value)(black_box(&case.text)),
        );
        support::print_paired(
            &format!(
                "dispatch/{}: registry_validated / baseline_value_deserialize",
                case.name
            ),
            &paired,
        );
        let paired = support::Paired::measure(
            || rmcp.dispatch(black_box(case.name), black_box(&case.text)),
            || (case.baseline_value)(black_box(&case.text)),
        );
        support::print_paired(
            &format!(
                "dispatch/{}: peer_rmcp_router / baseline_value_deserialize",
                case.name
            ),
            &paired,
        );
        let paired = support::Paired::measure(
            || registries.dispatch((Path::Object, true), &case),
            || value_dispatch(&case),
        );
        support::print_paired(
            &format!(
                "dispatch/{}: registry_validated / baseline_value_dispatch",
                case.name
            ),
            &paired,
        );
        let paired = support::Paired::measure(
            || rmcp.dispatch(black_box(case.name), black_box(&case.text)),
            || value_dispatch(&case),
        );
        support::print_paired(
            &format!(
                "dispatch/{}: peer_rmcp_router / baseline_value_dispatch",
                case.name
            ),
            &paired,
        );
        let paired = support::Paired::measure(
            || registries.dispatch((Path::Object, true), &case),
            || rmcp.dispatch(black_box(case.name), black_box(&case.text)),
        );
        support::print_paired(
            &format!(
                "dispatch/{}: registry_validated / peer_rmcp_router",
                case.name
            ),
            &paired,
        );
    }

    let large = large_registry();
    let text = r#"{"a": 2, "b": 3}"#;
    let paired = support::Paired::measure(
        || dispatch_text(&large, black_box("add"), black_box(text)),
        || dispatch_text(&registries.validated, black_box("add"), black_box(text)),
    );
    support::print_paired(
        "scale: dispatch_in_1000_tools / dispatch_in_3_tools",
        &paired,
    );

    let tools = thousand_tools();
    let paired = support::Paired::measure_batched(|| tools.clone(), register_each, fill_map);
    support::print_paired(
        "scale: build_registry_1000 / baseline_hashmap_fill_1000",
        &paired,
    );
    let paired = support::Paired::measure_batched(|| tools.clone(), register_all, collect_map);
    support::print_paired(
        "scale: build_registry_1000_register_all / baseline_hashmap_collect_1000",
        &paired,
    );
}
