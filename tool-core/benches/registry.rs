//! Registry benchmarks, each against a hand-written baseline in the same run:
//!
//! - dispatch: the model's argument text to the result string, for a 2-integer tool, a nested
//!   struct with `Vec` and `Option`, and a 40-field struct;
//! - definitions per request: the enabled tools of a 1,000-tool registry as JSON ready to send;
//! - scale: dispatch in a 1,000-tool registry against a 3-tool one, and building a 1,000-tool
//!   registry against filling a `HashMap`: one by one (`register_arc` against `insert`), and in
//!   bulk (`register_all` against `collect`, which sizes the map once).
//!
//! After criterion's own report, every ratio a target is set for is measured again with the
//! candidate and its baseline timed in alternating rounds (`support::Paired`), which holds
//! steady on a machine whose speed drifts between criterion's separate runs.

use std::{collections::HashMap, hint::black_box, marker::PhantomData, sync::Arc};

use criterion::{BatchSize, Criterion, criterion_group};
use schemars::JsonSchema;
use serde::{Deserialize, de::DeserializeOwned};
use serde_json::Value;
use tool_core::{
    __private, ChatTool, ExecutableTool, JsonObject, Provider, RegistryOptions, ToolError,
    ToolRegistry, async_trait,
};

mod support;

// --- the tools ------------------------------------------------------------------------------

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
}

fn add(args: AddArgs) -> String {
    (args.a + args.b).to_string()
}

#[derive(Deserialize, JsonSchema)]
struct Address {
    street: String,
    city: String,
    zip: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
struct NestedArgs {
    name: String,
    address: Address,
    tags: Vec<String>,
    note: Option<String>,
}

fn nested(args: NestedArgs) -> String {
    format!(
        "{} lives on {} in {} ({} tags{}{})",
        args.name,
        args.address.street,
        args.address.city,
        args.tags.len(),
        args.address.zip.as_deref().unwrap_or(""),
        args.note.as_deref().unwrap_or("")
    )
}

macro_rules! wide_args {
    ($($s:ident)*; $($i:ident)*; $($b:ident)*; $($f:ident)*) => {
        #[derive(Deserialize, JsonSchema)]
        struct WideArgs {
            $($s: String,)*
            $($i: i64,)*
            $($b: bool,)*
            $($f: f64,)*
        }

        fn wide(args: WideArgs) -> String {
            let mut total = 0.0;
            $(total += args.$s.len() as f64;)*
            $(total += args.$i as f64;)*
            $(total += f64::from(u8::from(args.$b));)*
            $(total += args.$f;)*
            total.to_string()
        }

        fn wide_text() -> String {
            let mut object = serde_json::Map::new();
            $(object.insert(stringify!($s).to_owned(), Value::from("some text"));)*
            $(object.insert(stringify!($i).to_owned(), Value::from(42));)*
            $(object.insert(stringify!($b).to_owned(), Value::from(true));)*
            $(object.insert(stringify!($f).to_owned(), Value::from(1.5));)*
            Value::Object(object).to_string()
        }
    };
}

wide_args!(
    s0 s1 s2 s3 s4 s5 s6 s7 s8 s9;
    i0 i1 i2 i3 i4 i5 i6 i7 i8 i9;
    b0 b1 b2 b3 b4 b5 b6 b7 b8 b9;
    f0 f1 f2 f3 f4 f5 f6 f7 f8 f9
);

/// A tool shaped like the code `#[tool]` generates: narrow the arguments, call the function.
struct TypedTool<A> {
    name: String,
    schema: ChatTool,
    function: fn(A) -> String,
    args: PhantomData<fn(A)>,
}

impl<A: JsonSchema> TypedTool<A> {
    fn new(name: &str, function: fn(A) -> String) -> Self {
        Self {
            name: name.to_owned(),
            schema: ChatTool::new(name, "A benchmark tool.", __private::schema_for::<A>()),
            function,
            args: PhantomData,
        }
    }
}

#[async_trait]
impl<A: DeserializeOwned + Send + 'static> ExecutableTool for TypedTool<A> {
    fn name(&self) -> &str {
        &self.name
    }

    fn get_schema(&self) -> ChatTool {
        self.schema.clone()
    }

    async fn execute(&self, args: JsonObject) -> Result<String, ToolError> {
        let args: A = __private::narrow_with(&self.name, args, || self.schema.clone())?;
        Ok((self.function)(args))
    }
}

/// The limit: a map of boxed closures that parse straight into the typed arguments.
type FnMap = HashMap<String, Box<dyn Fn(&str) -> String>>;

struct Case {
    name: &'static str,
    text: String,
    baseline_map: FnMap,
    baseline_value: fn(&str) -> String,
}

fn through_value<A: DeserializeOwned>(text: &str, function: fn(A) -> String) -> String {
    let value: Value = serde_json::from_str(text).unwrap_or_default();
    match A::deserialize(value) {
        Ok(args) => function(args),
        Err(error) => error.to_string(),
    }
}

fn direct<A: DeserializeOwned>(text: &str, function: fn(A) -> String) -> String {
    match serde_json::from_str::<A>(text) {
        Ok(args) => function(args),
        Err(error) => error.to_string(),
    }
}

fn baseline_map() -> FnMap {
    let mut map: FnMap = HashMap::new();
    map.insert("add".into(), Box::new(|text| direct(text, add)));
    map.insert("nested".into(), Box::new(|text| direct(text, nested)));
    map.insert("wide".into(), Box::new(|text| direct(text, wide)));
    map
}

fn cases() -> Vec<Case> {
    let nested_text = r#"{"name":"Ada","address":{"street":"1 Main St","city":"Oslo","zip":null},"tags":["a","b","c"],"note":"hi"}"#;
    vec![
        Case {
            name: "add",
            text: r#"{"a": 2, "b": 3}"#.to_owned(),
            baseline_map: baseline_map(),
            baseline_value: |text| through_value(text, add),
        },
        Case {
            name: "nested",
            text: nested_text.to_owned(),
            baseline_map: baseline_map(),
            baseline_value: |text| through_value(text, nested),
        },
        Case {
            name: "wide",
            text: wide_text(),
            baseline_map: baseline_map(),
            baseline_value: |text| through_value(text, wide),
        },
    ]
}

fn registry(options: RegistryOptions) -> ToolRegistry {
    let registry = ToolRegistry::with_options(options);
    registry
        .register(TypedTool::new("add", add))
        .and_then(|()| registry.register(TypedTool::new("nested", nested)))
        .and_then(|()| registry.register(TypedTool::new("wide", wide)))
        .unwrap_or_else(|error| panic!("benchmark tools must register: {error}"));
    registry
}

fn dispatch_text(registry: &ToolRegistry, name: &str, text: &str) -> String {
    let args: JsonObject = serde_json::from_str(text).unwrap_or_default();
    support::run_now(registry.execute(name, args))
}

// --- dispatch --------------------------------------------------------------------------------

fn dispatch(c: &mut Criterion) {
    let unchecked = registry(RegistryOptions::new().validate_arguments(false));
    let validated = registry(RegistryOptions::new());
    for case in cases() {
        // Every path must agree before it is timed.
        let expected = (case.baseline_value)(&case.text);
        assert_eq!(dispatch_text(&unchecked, case.name, &case.text), expected);
        assert_eq!(dispatch_text(&validated, case.name, &case.text), expected);
        assert_eq!((case.baseline_map[case.name])(&case.text), expected);

        let mut group = c.benchmark_group(format!("dispatch/{}", case.name));
        group.bench_function("baseline_fn_map", |b| {
            b.iter(|| {
                let function = &case.baseline_map[black_box(case.name)];
                function(black_box(&case.text))
            });
        });
        group.bench_function("baseline_value_deserialize", |b| {
            b.iter(|| (case.baseline_value)(black_box(&case.text)));
        });
        group.bench_function("registry_unvalidated", |b| {
            b.iter(|| dispatch_text(&unchecked, black_box(case.name), black_box(&case.text)));
        });
        group.bench_function("registry_validated", |b| {
            b.iter(|| dispatch_text(&validated, black_box(case.name), black_box(&case.text)));
        });
        group.finish();
    }
}

// --- definitions per request -----------------------------------------------------------------

fn thousand_tools() -> Vec<Arc<dyn ExecutableTool>> {
    (0..1000)
        .map(|i| Arc::new(TypedTool::new(&format!("tool_{i}"), nested)) as Arc<dyn ExecutableTool>)
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

criterion_group!(benches, dispatch, definitions, scale);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();

    let mut pairs = Vec::new();
    let groups: Vec<String> = ["add", "nested", "wide"]
        .iter()
        .map(|name| format!("dispatch/{name}"))
        .collect();
    for group in &groups {
        pairs.push((
            group.as_str(),
            "registry_unvalidated",
            "baseline_value_deserialize",
        ));
        pairs.push((
            group.as_str(),
            "registry_validated",
            "baseline_value_deserialize",
        ));
        pairs.push((group.as_str(), "registry_unvalidated", "baseline_fn_map"));
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
    support::print_ratios("registry", &pairs);
    paired_ratios();
}

/// The targets' ratios again, each pair timed in alternating rounds (see `support::Paired`).
fn paired_ratios() {
    println!("\n== registry: paired ratios (candidate / baseline, alternating rounds) ==");
    let unchecked = registry(RegistryOptions::new().validate_arguments(false));
    let validated = registry(RegistryOptions::new());
    for case in cases() {
        for (label, registry) in [
            ("registry_unvalidated", &unchecked),
            ("registry_validated", &validated),
        ] {
            let paired = support::Paired::measure(
                || dispatch_text(registry, black_box(case.name), black_box(&case.text)),
                || (case.baseline_value)(black_box(&case.text)),
            );
            support::print_paired(
                &format!(
                    "dispatch/{}: {label} / baseline_value_deserialize",
                    case.name
                ),
                &paired,
            );
        }
    }

    let large = large_registry();
    let text = r#"{"a": 2, "b": 3}"#;
    let paired = support::Paired::measure(
        || dispatch_text(&large, black_box("add"), black_box(text)),
        || dispatch_text(&validated, black_box("add"), black_box(text)),
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
