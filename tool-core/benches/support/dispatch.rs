//! The dispatch cases the registry benchmarks share: `#[tool]` fns, their hand-written
//! baselines, and the paths from the model's argument text to the result.

#![allow(dead_code)]

use std::{collections::HashMap, hint::black_box, marker::PhantomData, sync::Arc};

use schemars::JsonSchema;
use serde::{Deserialize, de::DeserializeOwned};
use serde_json::Value;
use tool_core::{
    __private, ChatTool, ExecutableTool, JsonObject, RegistryOptions, RegistrySnapshot, ToolError,
    ToolRegistry, async_trait, tool,
};

use crate::support;

#[derive(Deserialize, JsonSchema)]
pub(crate) struct AddArgs {
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
}

pub(crate) fn add_result(args: AddArgs) -> String {
    (args.a + args.b).to_string()
}

/// Add two integers.
#[tool]
async fn add(#[args] args: AddArgs) -> i64 {
    args.a + args.b
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct Address {
    street: String,
    city: String,
    zip: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct NestedArgs {
    name: String,
    address: Address,
    tags: Vec<String>,
    note: Option<String>,
}

pub(crate) fn nested_result(args: NestedArgs) -> String {
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

/// Describe a person.
#[tool]
async fn nested(#[args] args: NestedArgs) -> String {
    nested_result(args)
}

macro_rules! wide_args {
    ($($s:ident)*; $($i:ident)*; $($b:ident)*; $($f:ident)*) => {
        #[derive(Deserialize, JsonSchema)]
        pub(crate) struct WideArgs {
            $($s: String,)*
            $($i: i64,)*
            $($b: bool,)*
            $($f: f64,)*
        }

        pub(crate) fn wide_result(args: WideArgs) -> String {
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

/// Sum forty fields.
#[tool]
async fn wide(#[args] args: WideArgs) -> String {
    wide_result(args)
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct BoundedArgs {
    #[schemars(length(min = 2, max = 40))]
    city: String,
    #[schemars(range(min = 1, max = 14))]
    days: u8,
    units: String,
}

pub(crate) fn bounded_result(args: BoundedArgs) -> String {
    format!("{} days in {} ({})", args.days, args.city, args.units)
}

/// A forecast, with bounds.
#[tool]
async fn bounded(#[args] args: BoundedArgs) -> String {
    bounded_result(args)
}

/// A hand-written tool shaped like a typed one: narrow the object, call the function. The
/// 1,000-tool registries are made of these.
pub(crate) struct TypedTool<A> {
    name: String,
    schema: ChatTool,
    function: fn(A) -> String,
    args: PhantomData<fn(A)>,
}

impl<A: JsonSchema> TypedTool<A> {
    pub(crate) fn new(name: &str, function: fn(A) -> String) -> Self {
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

/// The limit ("typed"): a map of boxed closures that parse straight into the typed arguments.
pub(crate) type FnMap = HashMap<String, Box<dyn Fn(&str) -> String>>;

/// The object path's hand-written dispatcher: boxed closures by tool name, each calling
/// `from_value` on the parsed arguments.
pub(crate) type ValueMap = HashMap<String, Box<dyn Fn(Value) -> String>>;

pub(crate) struct Case {
    pub(crate) name: &'static str,
    pub(crate) text: String,
    pub(crate) baseline_map: FnMap,
    pub(crate) baseline_value: fn(&str) -> String,
    pub(crate) value_map: ValueMap,
}

pub(crate) fn through_value<A: DeserializeOwned>(text: &str, function: fn(A) -> String) -> String {
    let value: Value = serde_json::from_str(text).unwrap_or_default();
    match A::deserialize(value) {
        Ok(args) => function(args),
        Err(error) => error.to_string(),
    }
}

pub(crate) fn direct<A: DeserializeOwned>(text: &str, function: fn(A) -> String) -> String {
    match serde_json::from_str::<A>(text) {
        Ok(args) => function(args),
        Err(error) => error.to_string(),
    }
}

pub(crate) fn from_value<A: DeserializeOwned>(value: Value, function: fn(A) -> String) -> String {
    match A::deserialize(value) {
        Ok(args) => function(args),
        Err(error) => error.to_string(),
    }
}

pub(crate) fn value_map() -> ValueMap {
    let mut map: ValueMap = HashMap::new();
    map.insert(
        "add".into(),
        Box::new(|value| from_value(value, add_result)),
    );
    map.insert(
        "nested".into(),
        Box::new(|value| from_value(value, nested_result)),
    );
    map.insert(
        "wide".into(),
        Box::new(|value| from_value(value, wide_result)),
    );
    map.insert(
        "bounded".into(),
        Box::new(|value| from_value(value, bounded_result)),
    );
    map
}

/// The object path's dispatcher baseline: the text parsed into a `serde_json::Value` (as the
/// registry's object path parses it into a `JsonObject`), the tool found by name, `from_value`.
pub(crate) fn value_dispatch(case: &Case) -> String {
    let value: Value = serde_json::from_str(black_box(&case.text)).unwrap_or_default();
    match case.value_map.get(black_box(case.name)) {
        Some(function) => function(value),
        None => String::new(),
    }
}

pub(crate) fn baseline_map() -> FnMap {
    let mut map: FnMap = HashMap::new();
    map.insert("add".into(), Box::new(|text| direct(text, add_result)));
    map.insert(
        "nested".into(),
        Box::new(|text| direct(text, nested_result)),
    );
    map.insert("wide".into(), Box::new(|text| direct(text, wide_result)));
    map.insert(
        "bounded".into(),
        Box::new(|text| direct(text, bounded_result)),
    );
    map
}

/// The cases' names, in the order they are reported.
pub(crate) const CASES: [&str; 4] = ["add", "nested", "wide", "bounded"];

pub(crate) fn cases() -> Vec<Case> {
    let nested_text = r#"{"name":"Ada","address":{"street":"1 Main St","city":"Oslo","zip":null},"tags":["a","b","c"],"note":"hi"}"#;
    vec![
        Case {
            name: "add",
            text: r#"{"a": 2, "b": 3}"#.to_owned(),
            baseline_map: baseline_map(),
            baseline_value: |text| through_value(text, add_result),
            value_map: value_map(),
        },
        Case {
            name: "nested",
            text: nested_text.to_owned(),
            baseline_map: baseline_map(),
            baseline_value: |text| through_value(text, nested_result),
            value_map: value_map(),
        },
        Case {
            name: "wide",
            text: wide_text(),
            baseline_map: baseline_map(),
            baseline_value: |text| through_value(text, wide_result),
            value_map: value_map(),
        },
        Case {
            name: "bounded",
            text: r#"{"city": "Oslo", "days": 3, "units": "metric"}"#.to_owned(),
            baseline_map: baseline_map(),
            baseline_value: |text| through_value(text, bounded_result),
            value_map: value_map(),
        },
    ]
}

pub(crate) fn registry(options: RegistryOptions) -> ToolRegistry {
    let registry = ToolRegistry::with_options(options);
    registry
        .register(Add)
        .and_then(|()| registry.register(Nested))
        .and_then(|()| registry.register(Wide))
        .and_then(|()| registry.register(Bounded))
        .unwrap_or_else(|error| panic!("benchmark tools must register: {error}"));
    registry
}

/// The object path: the text parsed into a `JsonObject`, then `execute`.
pub(crate) fn dispatch_object(registry: &ToolRegistry, name: &str, text: &str) -> String {
    let args: JsonObject = serde_json::from_str(text).unwrap_or_default();
    support::run_now(registry.execute(name, args))
}

/// The text path: `execute_text`, as an agent calls a tool.
pub(crate) fn dispatch_text(registry: &ToolRegistry, name: &str, text: &str) -> String {
    support::run_now(registry.execute_text(name, text))
}

pub(crate) fn typed(case: &Case) -> String {
    let function = &case.baseline_map[black_box(case.name)];
    function(black_box(&case.text))
}

/// How a benchmark reaches a tool.
#[derive(Clone, Copy)]
pub(crate) enum Path {
    /// `ToolRegistry::execute_text`.
    Text,
    /// The text parsed into a `JsonObject`, then `ToolRegistry::execute`.
    Object,
    /// `RegistrySnapshot::execute_text`: what an agent's turn does.
    SnapshotText,
}

/// The registry paths of a case: (label, path, validated?).
pub(crate) const PATHS: [(&str, Path, bool); 5] = [
    ("registry_text_validated", Path::Text, true),
    ("registry_text_unvalidated", Path::Text, false),
    ("snapshot_text_validated", Path::SnapshotText, true),
    ("registry_validated", Path::Object, true),
    ("registry_unvalidated", Path::Object, false),
];

/// The registries a case runs in: with and without validation, and a snapshot of the first.
pub(crate) struct Registries {
    pub validated: ToolRegistry,
    pub unchecked: ToolRegistry,
    pub snapshot: Arc<RegistrySnapshot>,
}

impl Registries {
    pub(crate) fn new() -> Self {
        let validated = registry(RegistryOptions::new());
        let snapshot = validated.snapshot();
        Self {
            validated,
            unchecked: registry(RegistryOptions::new().validate_arguments(false)),
            snapshot,
        }
    }

    /// The result of `case` reached through `path`.
    pub(crate) fn dispatch(&self, (path, validate): (Path, bool), case: &Case) -> String {
        let registry = if validate {
            &self.validated
        } else {
            &self.unchecked
        };
        let (name, text) = (black_box(case.name), black_box(case.text.as_str()));
        match path {
            Path::Text => dispatch_text(registry, name, text),
            Path::Object => dispatch_object(registry, name, text),
            Path::SnapshotText => support::run_now(self.snapshot.execute_text(name, text)),
        }
    }
}

/// The 2-integer `#[tool]`, on its own.
pub(crate) fn add_tool() -> impl ExecutableTool {
    Add
}
