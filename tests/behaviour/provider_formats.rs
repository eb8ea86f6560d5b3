//! Provider formats (seed 002): tools converted to the OpenAI, Ollama, Gemini and Anthropic
//! shapes, OpenAI strict mode, and each provider's schema rules checked on the output.

use std::collections::{BTreeMap, HashMap};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::{
    ChatTool, ExecutableTool, FormatOptions, JsonObject, Provider, ToolError, ToolRegistry,
    async_trait, format_tool,
};

/// A tool whose schema comes from a typed args struct, as `#[tool]` generates it.
struct TypedTool {
    name: &'static str,
    description: &'static str,
    parameters: Value,
}

impl TypedTool {
    fn new<Args: JsonSchema>(name: &'static str, description: &'static str) -> Self {
        Self {
            name,
            description,
            parameters: tool_core::__private::schema_for::<Args>(),
        }
    }
}

#[async_trait]
impl ExecutableTool for TypedTool {
    fn name(&self) -> &str {
        self.name
    }

    fn get_schema(&self) -> ChatTool {
        ChatTool::new(self.name, self.description, self.parameters.clone())
    }

    async fn execute(&self, _args: JsonObject) -> Result<String, ToolError> {
        Ok(String::new())
    }
}

// --- The realistic tool set -----------------------------------------------------------------

#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum TemperatureUnit {
    Celsius,
    Fahrenheit,
}

#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
struct WeatherArgs {
    /// City name, e.g. "Paris".
    city: String,
    /// How many days ahead to forecast.
    #[schemars(range(min = 1, max = 10))]
    days: u32,
    /// Temperature unit; Celsius when left out.
    unit: Option<TemperatureUnit>,
}

/// Where an event takes place.
#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
struct Location {
    /// Latitude in degrees.
    #[schemars(range(min = -90.0, max = 90.0))]
    lat: f64,
    /// Longitude in degrees.
    #[schemars(range(min = -180.0, max = 180.0))]
    lon: f64,
    /// A human-readable label.
    label: Option<String>,
}

#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
struct Attendee {
    name: String,
    email: Option<String>,
}

/// When to remind the attendees.
#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Reminder {
    /// No reminder.
    Never,
    /// Some minutes before the start.
    MinutesBefore {
        /// Minutes before the start.
        minutes: u16,
    },
    /// At a fixed time.
    At(String),
}

#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
struct EventArgs {
    /// The event's title.
    title: String,
    /// Start time, RFC 3339.
    #[serde(rename = "startsAt")]
    starts_at: String,
    /// Where the event takes place.
    location: Location,
    /// Who is invited.
    attendees: Vec<Attendee>,
    /// An optional reminder.
    reminder: Option<Reminder>,
}

/// A shape to draw.
#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum Shape {
    /// A circle around the origin.
    Circle { radius: f64 },
    /// An axis-aligned rectangle.
    Rect { width: f64, height: f64 },
}

#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
struct DrawArgs {
    /// The shape.
    shape: Shape,
    /// Opacity from 0 to 1.
    #[serde(default = "opaque")]
    #[schemars(range(min = 0.0, max = 1.0))]
    opacity: f64,
    /// Tags to attach.
    #[serde(default)]
    tags: Vec<String>,
}

fn opaque() -> f64 {
    1.0
}

#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
struct ScoreArgs {
    /// Score per player name.
    scores: HashMap<String, i32>,
    /// Players per team.
    teams: BTreeMap<String, Vec<String>>,
}

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
struct TreeNode {
    value: i64,
    children: Vec<TreeNode>,
}

#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
struct TreeArgs {
    /// The tree to sum.
    root: TreeNode,
}

fn weather() -> TypedTool {
    TypedTool::new::<WeatherArgs>("get_weather", "Get the weather forecast for a city.")
}

fn event() -> TypedTool {
    TypedTool::new::<EventArgs>("create_event", "Create a calendar event.")
}

fn draw() -> TypedTool {
    TypedTool::new::<DrawArgs>("draw_shape", "Draw a shape on the canvas.")
}

fn scores() -> TypedTool {
    TypedTool::new::<ScoreArgs>("record_scores", "Record the scores of a game.")
}

fn ping() -> TypedTool {
    TypedTool::new::<NoArgs>("ping", "Check that the service answers.")
}

fn tree() -> TypedTool {
    TypedTool::new::<TreeArgs>("sum_tree", "Sum the values of a tree.")
}

/// Every tool of the realistic set, in this order.
fn registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    for tool in [weather(), event(), draw(), scores(), ping()] {
        registry.register(tool).unwrap();
    }
    registry
}

const STRICT_CAPABLE: &[&str] = &["get_weather", "create_event", "draw_shape", "ping"];

fn names(tools: &Value) -> Vec<&str> {
    let list = match tools.get("functionDeclarations") {
        Some(list) => list,
        None => tools,
    };
    list.as_array()
        .unwrap()
        .iter()
        .map(|tool| {
            tool.pointer("/function/name")
                .or_else(|| tool.get("name"))
                .and_then(Value::as_str)
                .unwrap()
        })
        .collect()
}

// --- Seed 002 scenarios ---------------------------------------------------------------------

#[test]
fn convert_to_openai_format() {
    let registry = registry();
    let tools = registry.tools_for_provider(Provider::OpenAi, None);
    let tools = tools.as_array().unwrap();
    assert_eq!(tools.len(), 5);
    for (tool, source) in tools.iter().zip(registry.get_enabled_schemas()) {
        let keys: Vec<&str> = tool
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["function", "type"]);
        assert_eq!(tool["type"], "function");
        let function = tool["function"].as_object().unwrap();
        let keys: Vec<&str> = function.keys().map(String::as_str).collect();
        assert_eq!(keys, ["description", "name", "parameters"]);
        assert_eq!(function["name"], source.name());
        assert_eq!(function["description"], source.description());
        // The canonical schema as is, minus `$schema`, the root `title` and the Rust-only
        // numeric formats (their bounds stay).
        let mut expected = source.parameters().clone();
        let root = expected.as_object_mut().unwrap();
        assert!(root.remove("$schema").is_some());
        assert!(root.remove("title").is_some());
        drop_numeric_formats(&mut expected);
        assert_eq!(function["parameters"], expected);
        assert_eq!(function["parameters"]["type"], "object");
    }
}

/// Removes the numeric formats schemars writes for Rust types from every object in `value` (the
/// tools here have no property named `format`, so every `format` key is a keyword).
fn drop_numeric_formats(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let numeric = map
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|format| {
                    [
                        "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                        "uint", "int", "float", "double",
                    ]
                    .contains(&format)
                });
            if numeric {
                map.remove("format");
            }
            map.values_mut().for_each(drop_numeric_formats);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_numeric_formats),
        _ => {}
    }
}

#[test]
fn convert_to_ollama_format() {
    let registry = registry();
    let ollama = registry.tools_for_provider(Provider::Ollama, None);
    assert_eq!(ollama, registry.tools_for_provider(Provider::OpenAi, None));
    assert_eq!(
        names(&ollama),
        [
            "get_weather",
            "create_event",
            "draw_shape",
            "record_scores",
            "ping"
        ]
    );
    // Strict mode is OpenAI's alone: Ollama ignores it.
    let strict = registry
        .snapshot()
        .try_tools_for_provider(Provider::Ollama, None, &FormatOptions::new().strict(true))
        .unwrap();
    assert_eq!(strict, ollama);
}

#[test]
fn convert_to_gemini_format() {
    let registry = registry();
    let tools = registry.tools_for_provider(Provider::Gemini, None);
    let root = tools.as_object().unwrap();
    assert_eq!(root.keys().collect::<Vec<_>>(), ["functionDeclarations"]);
    let declarations = tools["functionDeclarations"].as_array().unwrap();
    assert_eq!(declarations.len(), 5);
    for (declaration, source) in declarations.iter().zip(registry.get_enabled_schemas()) {
        let keys: Vec<&str> = declaration
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["description", "name", "parameters"]);
        assert_eq!(declaration["name"], source.name());
        assert_eq!(declaration["description"], source.description());
        assert_eq!(declaration["parameters"]["type"], "object");
        check_gemini_schema(&declaration["parameters"], source.name());
    }
}

#[test]
fn convert_to_anthropic_format() {
    let registry = registry();
    let tools = registry.tools_for_provider(Provider::Anthropic, None);
    let openai = registry.tools_for_provider(Provider::OpenAi, None);
    for (tool, openai) in tools
        .as_array()
        .unwrap()
        .iter()
        .zip(openai.as_array().unwrap())
    {
        let keys: Vec<&str> = tool
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["description", "input_schema", "name"]);
        assert_eq!(tool["name"], openai["function"]["name"]);
        assert_eq!(tool["description"], openai["function"]["description"]);
        assert_eq!(tool["input_schema"], openai["function"]["parameters"]);
    }
}

#[test]
fn filter_by_allowed_tools() {
    let registry = registry();
    // The allow-list's own order and unknown names do not matter: registration order is kept.
    let allowed = ["ping", "no_such_tool", "get_weather", "draw_shape"];
    for provider in Provider::ALL {
        let tools = registry.tools_for_provider(provider, Some(&allowed));
        assert_eq!(
            names(&tools),
            ["get_weather", "draw_shape", "ping"],
            "{provider}"
        );
    }
    let none = registry.tools_for_provider(Provider::OpenAi, Some(&[]));
    assert_eq!(none, json!([]));
}

#[test]
fn unknown_provider_format() {
    let error = "cohere".parse::<Provider>().unwrap_err();
    assert_eq!(error.name, "cohere");
    let message = error.to_string();
    assert!(message.contains("`cohere`"), "{message}");
    assert!(
        message.contains("not") || message.contains("unsupported"),
        "{message}"
    );
    assert!("".parse::<Provider>().is_err());
    assert!("open ai".parse::<Provider>().is_err());
}

#[test]
fn provider_names_parse_in_any_case() {
    for (name, provider) in [
        ("openai", Provider::OpenAi),
        ("OpenAI", Provider::OpenAi),
        ("OLLAMA", Provider::Ollama),
        ("Gemini", Provider::Gemini),
        ("gEmInI", Provider::Gemini),
        ("Anthropic", Provider::Anthropic),
    ] {
        assert_eq!(name.parse::<Provider>().unwrap(), provider, "{name}");
    }
    for provider in Provider::ALL {
        assert_eq!(provider.to_string().parse::<Provider>().unwrap(), provider);
    }
}

#[test]
fn disabled_tools_are_left_out_of_every_format() {
    let registry = registry();
    assert!(registry.disable("create_event"));
    for provider in Provider::ALL {
        let tools = registry.tools_for_provider(provider, None);
        assert_eq!(
            names(&tools),
            ["get_weather", "draw_shape", "record_scores", "ping"],
            "{provider}"
        );
        // An allow-list cannot bring a disabled tool back.
        let tools = registry.tools_for_provider(provider, Some(&["create_event", "ping"]));
        assert_eq!(names(&tools), ["ping"], "{provider}");
    }
    assert!(registry.enable("create_event"));
    assert_eq!(
        names(&registry.tools_for_provider(Provider::Gemini, None)).len(),
        5
    );
}

// --- Stable output --------------------------------------------------------------------------

#[test]
fn conversions_are_byte_identical() {
    for provider in Provider::ALL {
        let first = registry().tools_for_provider(provider, None).to_string();
        let second = registry().tools_for_provider(provider, None).to_string();
        assert_eq!(first, second, "{provider}");
    }
    let tool = event().get_schema();
    for options in [FormatOptions::new(), FormatOptions::new().strict(true)] {
        for provider in Provider::ALL {
            let first = format_tool(provider, &tool, &options).unwrap().to_string();
            let second = format_tool(provider, &tool, &options).unwrap().to_string();
            assert_eq!(first, second, "{provider}");
        }
    }
}

#[test]
fn keys_come_out_sorted_at_every_level() {
    fn check(value: &Value, path: &str) {
        match value {
            Value::Object(map) => {
                let keys: Vec<&String> = map.keys().collect();
                let mut sorted = keys.clone();
                sorted.sort();
                assert_eq!(keys, sorted, "at {path}");
                for (key, value) in map {
                    check(value, &format!("{path}/{key}"));
                }
            }
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    check(item, &format!("{path}/{index}"));
                }
            }
            _ => {}
        }
    }
    let tool = event().get_schema();
    for provider in Provider::ALL {
        let text = format_tool(provider, &tool, &FormatOptions::new())
            .unwrap()
            .to_string();
        // Parse the text back without reordering anything: serde_json's map is ordered by key
        // only without `preserve_order`, so check the text itself.
        let reparsed: Value = serde_json::from_str(&text).unwrap();
        check(&reparsed, "");
        assert_eq!(reparsed.to_string(), text, "{provider}");
    }
}

// --- Snapshots ------------------------------------------------------------------------------

#[test]
fn openai_format_snapshot() {
    insta::assert_json_snapshot!(
        "openai",
        registry().tools_for_provider(Provider::OpenAi, None)
    );
}

#[test]
fn ollama_format_snapshot() {
    insta::assert_json_snapshot!(
        "ollama",
        registry().tools_for_provider(Provider::Ollama, None)
    );
}

#[test]
fn gemini_format_snapshot() {
    insta::assert_json_snapshot!(
        "gemini",
        registry().tools_for_provider(Provider::Gemini, None)
    );
}

#[test]
fn anthropic_format_snapshot() {
    insta::assert_json_snapshot!(
        "anthropic",
        registry().tools_for_provider(Provider::Anthropic, None)
    );
}

#[test]
fn openai_strict_format_snapshot() {
    let registry = registry();
    registry.register(tree()).unwrap();
    let mut allowed = STRICT_CAPABLE.to_vec();
    allowed.push("sum_tree");
    let tools = registry
        .snapshot()
        .try_tools_for_provider(
            Provider::OpenAi,
            Some(&allowed),
            &FormatOptions::new().strict(true),
        )
        .unwrap();
    insta::assert_json_snapshot!("openai_strict", tools);
}

// --- Provider rules, checked on the output --------------------------------------------------

/// The fields of Gemini's `Schema` object (https://ai.google.dev/api/caching#Schema).
const GEMINI_FIELDS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
];

const GEMINI_TYPES: &[&str] = &["string", "number", "integer", "boolean", "array", "object"];

fn check_gemini_schema(schema: &Value, path: &str) {
    let schema = schema
        .as_object()
        .unwrap_or_else(|| panic!("{path}: a Gemini schema must be an object, got {schema}"));
    for (key, value) in schema {
        assert!(
            GEMINI_FIELDS.contains(&key.as_str()),
            "{path}: `{key}` is not a Gemini schema field"
        );
        match key.as_str() {
            "type" => {
                let kind = value
                    .as_str()
                    .unwrap_or_else(|| panic!("{path}: `type` must be one string, got {value}"));
                assert!(GEMINI_TYPES.contains(&kind), "{path}: unknown type {kind}");
            }
            "enum" => {
                let values = value.as_array().unwrap();
                assert!(!values.is_empty(), "{path}: empty enum");
                assert!(
                    values.iter().all(Value::is_string),
                    "{path}: Gemini enums hold strings only, got {value}"
                );
                assert_eq!(
                    schema.get("type"),
                    Some(&json!("string")),
                    "{path}: enum on a non-string"
                );
            }
            "format" => {
                let format = value.as_str().unwrap();
                let known = match schema.get("type").and_then(Value::as_str) {
                    Some("integer") => ["int32", "int64"].contains(&format),
                    Some("number") => ["float", "double"].contains(&format),
                    Some("string") => ["enum", "date-time"].contains(&format),
                    _ => false,
                };
                assert!(known, "{path}: format `{format}` is not one Gemini knows");
            }
            "nullable" => assert_eq!(value, &json!(true), "{path}"),
            "properties" => {
                let properties = value.as_object().unwrap();
                assert!(
                    !properties.is_empty(),
                    "{path}: Gemini rejects empty `properties`"
                );
                for (name, property) in properties {
                    check_gemini_schema(property, &format!("{path}/properties/{name}"));
                }
            }
            "items" => check_gemini_schema(value, &format!("{path}/items")),
            "anyOf" => {
                for (index, branch) in value.as_array().unwrap().iter().enumerate() {
                    check_gemini_schema(branch, &format!("{path}/anyOf/{index}"));
                }
            }
            "required" => {
                let properties = schema.get("properties").and_then(Value::as_object);
                for name in value.as_array().unwrap() {
                    let name = name.as_str().unwrap();
                    assert!(
                        properties.is_some_and(|p| p.contains_key(name)),
                        "{path}: required `{name}` is not a property"
                    );
                }
            }
            "description" | "title" | "pattern" => assert!(value.is_string(), "{path}: {key}"),
            _ => {}
        }
    }
    let text = Value::Object(schema.clone()).to_string();
    assert!(!text.contains("\"$ref\""), "{path}: a `$ref` is left");
    assert!(!text.contains("\"$defs\""), "{path}: `$defs` are left");
}

fn check_strict_schema(schema: &Value, path: &str) {
    let Some(schema) = schema.as_object() else {
        panic!("{path}: a strict schema must be an object, got {schema}");
    };
    assert!(
        !schema.contains_key("default"),
        "{path}: `default` in a strict schema"
    );
    assert!(
        !schema.contains_key("oneOf") && !schema.contains_key("allOf"),
        "{path}: strict mode takes `anyOf` only"
    );
    if schema.contains_key("$ref") {
        assert_eq!(schema.len(), 1, "{path}: keywords beside `$ref`");
    }
    let is_object = match schema.get("type") {
        Some(Value::String(kind)) => kind == "object",
        Some(Value::Array(kinds)) => kinds.contains(&json!("object")),
        _ => false,
    };
    if is_object {
        assert_eq!(
            schema.get("additionalProperties"),
            Some(&json!(false)),
            "{path}: every object needs `additionalProperties: false`"
        );
        let properties = schema["properties"].as_object().unwrap();
        let mut keys: Vec<&str> = properties.keys().map(String::as_str).collect();
        keys.sort_unstable();
        let mut required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|name| name.as_str().unwrap())
            .collect();
        required.sort_unstable();
        assert_eq!(
            required, keys,
            "{path}: `required` must list every property"
        );
        for (name, property) in properties {
            check_strict_schema(property, &format!("{path}/properties/{name}"));
        }
    }
    if let Some(items) = schema.get("items") {
        check_strict_schema(items, &format!("{path}/items"));
    }
    if let Some(Value::Array(branches)) = schema.get("anyOf") {
        for (index, branch) in branches.iter().enumerate() {
            check_strict_schema(branch, &format!("{path}/anyOf/{index}"));
        }
    }
    if let Some(Value::Object(definitions)) = schema.get("$defs") {
        for (name, definition) in definitions {
            check_strict_schema(definition, &format!("{path}/$defs/{name}"));
        }
    }
}

#[test]
fn gemini_output_uses_only_gemini_schema_fields() {
    let tools = registry().tools_for_provider(Provider::Gemini, None);
    for declaration in tools["functionDeclarations"].as_array().unwrap() {
        let name = declaration["name"].as_str().unwrap();
        check_gemini_schema(&declaration["parameters"], name);
    }
}

#[test]
fn gemini_keeps_meaning_as_fields_or_description_notes() {
    let tools = registry().tools_for_provider(Provider::Gemini, None);
    let find = |name: &str| {
        tools["functionDeclarations"]
            .as_array()
            .unwrap()
            .iter()
            .find(|tool| tool["name"] == name)
            .unwrap()["parameters"]
            .clone()
    };
    let weather = find("get_weather");
    // `Option<Enum>` → the enum, nullable, with the field's own description.
    assert_eq!(
        weather["properties"]["unit"],
        json!({
            "description": "Temperature unit; Celsius when left out.",
            "enum": ["celsius", "fahrenheit"],
            "nullable": true,
            "type": "string"
        })
    );
    // Range bounds stay; the `uint32` format becomes its bound.
    assert_eq!(weather["properties"]["days"]["minimum"], 1);
    assert_eq!(weather["properties"]["days"]["maximum"], 10);
    assert!(weather["properties"]["days"].get("format").is_none());

    let scores = find("record_scores");
    // Maps keep their value type in the description.
    let description = scores["properties"]["scores"]["description"]
        .as_str()
        .unwrap();
    assert!(
        description.starts_with("Score per player name. (an object with any keys"),
        "{description}"
    );
    assert!(
        description.contains("\"type\":\"integer\""),
        "{description}"
    );

    let event = find("create_event");
    // A data-carrying enum becomes an `anyOf` of its variants; `Option` makes it nullable.
    let reminder = &event["properties"]["reminder"];
    assert_eq!(reminder["nullable"], true);
    assert_eq!(reminder["anyOf"].as_array().unwrap().len(), 3);
    // Renamed fields keep the wire name.
    assert!(event["properties"].get("startsAt").is_some());
    assert!(event["properties"]["location"]["properties"]["lat"].is_object());

    let ping = find("ping");
    assert_eq!(ping, json!({ "type": "object" }));
}

#[test]
fn gemini_rejects_recursive_types() {
    let registry = registry();
    registry.register(tree()).unwrap();
    let error = registry
        .snapshot()
        .try_tools_for_provider(Provider::Gemini, None, &FormatOptions::new())
        .unwrap_err();
    assert_eq!(error.tool, "sum_tree");
    assert_eq!(error.provider, Provider::Gemini);
    let message = error.to_string();
    assert!(
        message.starts_with("tool `sum_tree` cannot be sent to gemini"),
        "{message}"
    );
    assert!(message.contains("recursive"), "{message}");
    // The lenient call leaves the tool out and keeps the others.
    let tools = registry.tools_for_provider(Provider::Gemini, None);
    assert_eq!(names(&tools).len(), 5);
    assert!(!names(&tools).contains(&"sum_tree"));
    // Every other provider takes recursion through `$ref`.
    for provider in [Provider::OpenAi, Provider::Ollama, Provider::Anthropic] {
        assert!(names(&registry.tools_for_provider(provider, None)).contains(&"sum_tree"));
    }
}

#[test]
fn check_names_every_tool_a_provider_cannot_take_and_why() {
    let registry = registry();
    registry.register(tree()).unwrap();
    let failing = |provider, options: &FormatOptions| -> Vec<(String, Provider)> {
        match registry.check(provider, options) {
            Ok(()) => Vec::new(),
            Err(error) => error
                .errors
                .iter()
                .map(|error| (error.tool.clone(), error.provider))
                .collect(),
        }
    };
    for provider in [Provider::OpenAi, Provider::Ollama, Provider::Anthropic] {
        assert_eq!(registry.check(provider, &FormatOptions::new()), Ok(()));
    }
    assert_eq!(
        failing(Provider::Gemini, &FormatOptions::new()),
        [("sum_tree".to_owned(), Provider::Gemini)]
    );
    assert_eq!(
        failing(Provider::OpenAi, &FormatOptions::new().strict(true)),
        [("record_scores".to_owned(), Provider::OpenAi)]
    );
    // The reason is the one the request path would have logged, tool by tool.
    let error = registry
        .check(Provider::Gemini, &FormatOptions::new())
        .unwrap_err();
    let expected = registry
        .snapshot()
        .try_tools_for_provider(Provider::Gemini, None, &FormatOptions::new())
        .unwrap_err();
    assert_eq!(error.errors, std::slice::from_ref(&expected));
    assert_eq!(error.to_string(), expected.to_string());

    // A disabled tool can be turned on at any time, so the registry still checks it; a
    // snapshot checks what it would send.
    assert!(registry.disable("sum_tree"));
    assert!(
        registry
            .check(Provider::Gemini, &FormatOptions::new())
            .is_err()
    );
    assert_eq!(
        registry
            .snapshot()
            .check(Provider::Gemini, &FormatOptions::new()),
        Ok(())
    );
    assert!(registry.enable("sum_tree"));
    assert_eq!(
        registry
            .snapshot()
            .check(Provider::Gemini, &FormatOptions::new())
            .unwrap_err()
            .errors,
        [expected]
    );
}

#[test]
fn check_reports_every_failing_tool_at_once() {
    let registry = registry();
    registry.register(tree()).unwrap();
    registry
        .register(TypedTool::new::<TreeArgs>(
            "sum_other_tree",
            "Sum another tree.",
        ))
        .unwrap();
    let error = registry
        .check(Provider::Gemini, &FormatOptions::new())
        .unwrap_err();
    let tools: Vec<&str> = error
        .errors
        .iter()
        .map(|error| error.tool.as_str())
        .collect();
    assert_eq!(tools, ["sum_tree", "sum_other_tree"]);
    let message = error.to_string();
    assert!(
        message.starts_with("tool `sum_tree` cannot be sent to gemini: ")
            && message.contains("; tool `sum_other_tree` cannot be sent to gemini: "),
        "{message}"
    );
}

#[test]
fn strict_openai_output_follows_structured_output_rules() {
    let registry = registry();
    registry.register(tree()).unwrap();
    let mut allowed = STRICT_CAPABLE.to_vec();
    allowed.push("sum_tree");
    let tools = registry
        .snapshot()
        .try_tools_for_provider(
            Provider::OpenAi,
            Some(&allowed),
            &FormatOptions::new().strict(true),
        )
        .unwrap();
    assert_eq!(names(&tools).len(), 5);
    for tool in tools.as_array().unwrap() {
        let name = tool["function"]["name"].as_str().unwrap();
        assert_eq!(tool["function"]["strict"], true, "{name}");
        let parameters = &tool["function"]["parameters"];
        assert_eq!(
            parameters["type"], "object",
            "{name}: the root must be an object"
        );
        assert!(
            parameters.get("anyOf").is_none(),
            "{name}: the root must not be a union"
        );
        check_strict_schema(parameters, name);
    }
}

#[test]
fn strict_makes_optional_fields_nullable() {
    let tool = draw().get_schema();
    let strict = format_tool(Provider::OpenAi, &tool, &FormatOptions::new().strict(true)).unwrap();
    let opacity = &strict["function"]["parameters"]["properties"]["opacity"];
    // `#[serde(default)]`: required now, but null is allowed and the default is described.
    assert_eq!(opacity["type"], json!(["number", "null"]));
    assert!(
        opacity["description"]
            .as_str()
            .unwrap()
            .contains("default: 1.0"),
        "{opacity}"
    );
    assert_eq!(opacity["minimum"], 0.0);
    assert_eq!(opacity["maximum"], 1.0);
    // Not strict: no `strict` key and the schema as is.
    let plain = format_tool(Provider::OpenAi, &tool, &FormatOptions::new()).unwrap();
    assert!(plain["function"].get("strict").is_none());
    assert_eq!(
        plain["function"]["parameters"]["properties"]["opacity"]["default"],
        1.0
    );
}

#[test]
fn maps_cannot_be_strict() {
    let registry = registry();
    let error = registry
        .snapshot()
        .try_tools_for_provider(Provider::OpenAi, None, &FormatOptions::new().strict(true))
        .unwrap_err();
    assert_eq!(error.tool, "record_scores");
    assert_eq!(error.provider, Provider::OpenAi);
    let message = error.to_string();
    assert!(
        message.starts_with("tool `record_scores` cannot be sent to openai"),
        "{message}"
    );
    assert!(message.contains("/properties/scores"), "{message}");
    assert!(message.contains("a map"), "{message}");
    // Without strict the same tool converts fine.
    assert!(
        registry
            .snapshot()
            .try_tools_for_provider(Provider::OpenAi, None, &FormatOptions::new())
            .is_ok()
    );
}

/// `draw_shape` that really reads its arguments.
struct DrawTool;

#[async_trait]
impl ExecutableTool for DrawTool {
    fn name(&self) -> &str {
        "draw_shape"
    }

    fn get_schema(&self) -> ChatTool {
        draw().get_schema()
    }

    async fn execute(&self, args: JsonObject) -> Result<String, ToolError> {
        let args: DrawArgs = tool_core::__private::narrow("draw_shape", args)?;
        Ok(format!(
            "opacity {}, {} tags",
            args.opacity,
            args.tags.len()
        ))
    }
}

#[tokio::test]
async fn strict_nulls_for_defaulted_fields_count_as_left_out() {
    let registry = ToolRegistry::new();
    registry.register(DrawTool).unwrap();
    // What a model under strict mode sends for the two `#[serde(default)]` fields it skips.
    let args =
        json!({ "shape": { "kind": "circle", "radius": 2.0 }, "opacity": null, "tags": null });
    let result = registry
        .execute("draw_shape", args.as_object().unwrap().clone())
        .await;
    assert_eq!(result, "opacity 1, 0 tags");
    // A null for a required field is still an error the model can fix.
    let args = json!({ "shape": null });
    let result = registry
        .execute("draw_shape", args.as_object().unwrap().clone())
        .await;
    assert!(
        result.starts_with("Error: invalid arguments for draw_shape"),
        "{result}"
    );
    assert!(result.contains("/shape"), "{result}");
}

/// Log lines written while `run` converts, at `debug` and above.
fn captured_logs(run: impl FnOnce()) -> String {
    crate::logs::capture(run).1
}

#[test]
fn gemini_logs_every_keyword_it_cannot_keep() {
    let tool = ChatTool::new(
        "lookup",
        "Look a record up.",
        json!({
            "type": "object",
            "properties": {
                "id": { "type": "string", "format": "uuid" },
                "code": { "type": "string", "not": { "const": "" } }
            },
            "required": ["id"]
        }),
    );
    let mut converted = Value::Null;
    let logs = captured_logs(|| {
        converted = format_tool(Provider::Gemini, &tool, &FormatOptions::new()).unwrap();
    });
    // Known but unsupported: moved into the description, logged at debug.
    assert_eq!(
        converted["parameters"]["properties"]["id"],
        json!({ "type": "string", "description": "format: uuid" })
    );
    let format_line = logs
        .lines()
        .find(|line| line.contains("keyword=\"format\""))
        .unwrap_or_else(|| panic!("no log for `format`:\n{logs}"));
    assert!(format_line.contains("DEBUG"), "{format_line}");
    assert!(format_line.contains("tool=\"lookup\""), "{format_line}");
    assert!(format_line.contains("/properties/id"), "{format_line}");
    // Not understood: still in the description, and a warning.
    assert_eq!(
        converted["parameters"]["properties"]["code"]["description"],
        "not: {\"const\":\"\"}"
    );
    let not_line = logs
        .lines()
        .find(|line| line.contains("keyword=\"not\""))
        .unwrap_or_else(|| panic!("no log for `not`:\n{logs}"));
    assert!(not_line.contains("WARN"), "{not_line}");
    assert!(not_line.contains("tool=\"lookup\""), "{not_line}");
}
