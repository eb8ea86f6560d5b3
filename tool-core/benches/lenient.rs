//! Lenient arguments: what they cost.
//!
//! - `execute`: a call with well-typed arguments through a strict registry and through a lenient
//!   one (the walk that finds nothing to change), and a call whose arguments drifted through the
//!   lenient registry;
//! - `walk`: `coerce_arguments` over an array of 100, 1,000 and 10,000 numeric strings, to show
//!   the time grows with the arguments and no faster.

use std::hint::black_box;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use futures::executor::block_on;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::{
    __private, ChatTool, ExecutableTool, JsonObject, RegistryOptions, ToolError, ToolRegistry,
    async_trait, schema::coerce_arguments,
};

#[derive(Deserialize, JsonSchema)]
struct Address {
    street: String,
    city: String,
    zip: Option<u32>,
}

#[derive(Deserialize, JsonSchema)]
struct TripArgs {
    name: String,
    days: u32,
    address: Address,
    tags: Vec<String>,
    budget: Option<f64>,
}

struct Trip {
    schema: ChatTool,
}

#[async_trait]
impl ExecutableTool for Trip {
    fn name(&self) -> &str {
        "trip"
    }

    fn get_schema(&self) -> ChatTool {
        self.schema.clone()
    }

    async fn execute(&self, args: JsonObject) -> Result<String, ToolError> {
        let args: TripArgs = __private::narrow_with("trip", args, || self.schema.clone())?;
        Ok(format!(
            "{} for {} days at {}, {} ({:?}), {} tags, {:?}",
            args.name,
            args.days,
            args.address.street,
            args.address.city,
            args.address.zip,
            args.tags.len(),
            args.budget
        ))
    }
}

fn registry(lenient: bool) -> ToolRegistry {
    let registry = ToolRegistry::with_options(RegistryOptions::new().lenient_arguments(lenient));
    let schema = ChatTool::new("trip", "Plan a trip.", __private::schema_for::<TripArgs>());
    if let Err(error) = registry.register(Trip { schema }) {
        panic!("the benchmark tool is valid: {error}");
    }
    registry
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

fn execute(c: &mut Criterion) {
    let typed = object(json!({
        "name": "Ada",
        "days": 3,
        "address": { "street": "1 Main St", "city": "Oslo", "zip": 150 },
        "tags": ["sea", "hills", "food"],
        "budget": 1200.5
    }));
    let drifted = object(json!({
        "name": "Ada",
        "days": "3",
        "address": "{\"street\": \"1 Main St\", \"city\": \"Oslo\", \"zip\": \"150\"}",
        "tags": "sea",
        "budget": "1200.5"
    }));
    let strict = registry(false);
    let lenient = registry(true);
    let mut group = c.benchmark_group("lenient/execute");
    for (name, registry, args) in [
        ("strict, well-typed", &strict, &typed),
        ("lenient, well-typed", &lenient, &typed),
        ("lenient, drifted", &lenient, &drifted),
    ] {
        group.bench_function(name, |b| {
            b.iter_batched(
                || args.clone(),
                |args| block_on(registry.execute("trip", black_box(args))),
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

fn walk(c: &mut Criterion) {
    let schema = json!({
        "type": "object",
        "properties": { "ids": { "type": "array", "items": { "type": "integer" } } }
    });
    let mut group = c.benchmark_group("lenient/walk");
    for n in [100_u64, 1_000, 10_000] {
        let ids: Vec<Value> = (0..n).map(|i| Value::String(i.to_string())).collect();
        let args = object(json!({ "ids": ids }));
        group.throughput(Throughput::Elements(n));
        group.bench_with_input(BenchmarkId::from_parameter(n), &args, |b, args| {
            b.iter_batched(
                || args.clone(),
                |mut args| coerce_arguments(&schema, black_box(&mut args)),
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, execute, walk);
criterion_main!(benches);
