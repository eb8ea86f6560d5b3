//! The schema `#[tool]` derives: descriptions, required parameters, nested types, enums and
//! renamed fields, for the typed-struct, plain-parameter and no-parameter forms.

use serde_json::{Value, json};
use tool_core::{ExecutableTool, ToolRegistry, tool};

/// Units of temperature.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Unit {
    Celsius,
    Fahrenheit,
}

/// Where to look.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Place {
    /// The city's name.
    city: String,
    /// The country code, such as `FR`.
    #[allow(dead_code)]
    country: Option<String>,
}

/// Arguments of `get_weather`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct WeatherArgs {
    /// Where to look.
    place: Place,
    /// The unit of the temperatures.
    #[allow(dead_code)]
    unit: Unit,
    /// How many days ahead.
    #[serde(rename = "daysAhead", default)]
    days_ahead: u8,
}

/// Get the current weather for a place.
///
/// Temperatures are whole degrees.
#[tool]
async fn get_weather(#[args] args: WeatherArgs) -> String {
    format!("{} in {}", args.days_ahead, args.place.city)
}

/// Add two integers.
#[tool]
async fn add(
    /// The first addend
    a: i64,
    /// The second addend
    b: i64,
    /// Round the result to this many digits
    round: Option<u8>,
    /// Where the `type` keyword is a parameter name
    #[serde(rename = "type", default)]
    kind: String,
) -> i64 {
    let _ = (round, kind);
    a + b
}

/// Shout a text back.
#[tool]
async fn shout(
    /// The text to shout
    args: String,
) -> String {
    args.to_uppercase()
}

/// Roll a die.
#[tool]
async fn roll() -> u8 {
    4
}

fn schema_of(registry: &ToolRegistry, name: &str) -> Value {
    let tool = registry.get(name).unwrap();
    let schema = tool.get_schema();
    assert_eq!(schema.name(), name);
    schema.parameters().clone()
}

fn registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    registry.register(GetWeather).unwrap();
    registry.register(Add).unwrap();
    registry.register(Roll).unwrap();
    registry.register(Shout).unwrap();
    registry
}

#[test]
fn description_is_the_doc_comment_with_lines_joined_and_trimmed() {
    let registry = registry();
    let schema = registry.get("get_weather").unwrap().get_schema();
    assert_eq!(
        schema.description(),
        "Get the current weather for a place.\n\nTemperatures are whole degrees."
    );
    assert_eq!(
        registry.get("add").unwrap().get_schema().description(),
        "Add two integers."
    );
}

#[test]
fn typed_args_schema_has_field_docs_required_nested_types_enums_and_renames() {
    let schema = schema_of(&registry(), "get_weather");
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["place", "unit"]));
    let properties = &schema["properties"];
    assert_eq!(
        properties["unit"]["description"],
        "The unit of the temperatures."
    );
    assert_eq!(
        properties["daysAhead"]["description"],
        "How many days ahead."
    );
    assert!(properties.get("days_ahead").is_none());

    // Nested types and enums live in `$defs`, as schemars writes them.
    let place = &schema["$defs"]["Place"];
    assert_eq!(
        place["properties"]["city"]["description"],
        "The city's name."
    );
    assert_eq!(place["required"], json!(["city"]));
    let unit = &schema["$defs"]["Unit"];
    assert_eq!(unit["enum"], json!(["celsius", "fahrenheit"]));
}

#[test]
fn plain_parameters_schema_takes_parameter_docs_and_optional_parameters() {
    let schema = schema_of(&registry(), "add");
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["a", "b"]));
    let properties = &schema["properties"];
    assert_eq!(properties["a"]["description"], "The first addend");
    assert_eq!(properties["a"]["type"], "integer");
    assert_eq!(
        properties["round"]["description"],
        "Round the result to this many digits"
    );
    assert_eq!(
        properties["type"]["description"],
        "Where the `type` keyword is a parameter name"
    );
    // The hidden arguments struct lends the schema no title.
    assert!(schema.get("title").is_none());
}

#[test]
fn a_parameter_named_args_without_the_marker_is_a_plain_parameter() {
    let schema = schema_of(&registry(), "shout");
    assert_eq!(
        schema,
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {"args": {"type": "string", "description": "The text to shout"}},
            "required": ["args"],
        })
    );
}

#[tokio::test]
async fn a_parameter_named_args_without_the_marker_takes_the_argument_named_args() {
    let registry = registry();
    let call = |args: Value| serde_json::from_value(args).unwrap();
    assert_eq!(
        registry.execute("shout", call(json!({"args": "hi"}))).await,
        "HI"
    );
    assert_eq!(
        registry.execute("shout", call(json!({"text": "hi"}))).await,
        "Error: invalid arguments for shout: missing required argument 'args'"
    );
}

#[test]
fn tool_without_parameters_has_an_empty_object_schema() {
    let schema = schema_of(&registry(), "roll");
    assert_eq!(schema, json!({"type": "object", "properties": {}}));
}

#[test]
fn schema_is_built_once_and_shared() {
    let first = Add.get_schema();
    let second = Add.get_schema();
    assert!(std::sync::Arc::ptr_eq(
        &first.function.parameters,
        &second.function.parameters
    ));
}

#[tokio::test]
async fn generated_function_stays_callable() {
    assert_eq!(add(2, 3, None, String::new()).await, 5);
    assert_eq!(roll().await, 4);
}
