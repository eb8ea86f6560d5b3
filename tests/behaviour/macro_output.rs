//! What the model sees of a tool's return value: strings as they are, other values as JSON text,
//! and a `Result`'s error as the tool's error.

use std::fmt;

use serde_json::json;
use tool_core::{JsonObject, ToolRegistry, tool};

/// A string.
#[tool]
async fn text() -> String {
    "plain \"quoted\" text".to_owned()
}

/// A static string.
#[tool]
async fn static_text() -> &'static str {
    "static"
}

/// An integer.
#[tool]
async fn integer() -> i32 {
    -7
}

/// A float.
#[tool]
async fn float() -> f64 {
    2.5
}

/// A boolean.
#[tool]
async fn boolean() -> bool {
    true
}

/// A JSON value.
#[tool]
async fn value() -> serde_json::Value {
    json!({"ok": true, "items": [1, 2]})
}

/// A report.
#[derive(serde::Serialize)]
struct WeatherReport {
    city: String,
    temperature: i32,
}

/// A serializable struct.
#[tool]
async fn report() -> WeatherReport {
    WeatherReport {
        city: "Oslo".to_owned(),
        temperature: -3,
    }
}

/// A name that serializes as a bare string.
#[derive(serde::Serialize)]
#[serde(transparent)]
struct Nickname(String);

/// A newtype around a string.
#[tool]
async fn name() -> Nickname {
    Nickname("Ada".to_owned())
}

/// Nothing.
#[tool]
async fn nothing() {}

/// A sky.
#[derive(serde::Serialize)]
#[serde(rename_all = "snake_case")]
enum Sky {
    PartlyCloudy,
}

/// An enum that serializes as a string.
#[tool(rename_struct = "SkyTool")]
async fn sky() -> Sky {
    Sky::PartlyCloudy
}

/// An optional string.
#[tool]
async fn maybe(present: bool) -> Option<String> {
    present.then(|| "here".to_owned())
}

/// Why the weather is unknown.
#[derive(Debug)]
struct WeatherError {
    city: String,
}

impl fmt::Display for WeatherError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no station near {}", self.city)
    }
}

/// A fallible tool.
#[tool]
async fn weather(city: String) -> Result<String, WeatherError> {
    if city == "Atlantis" {
        Err(WeatherError { city })
    } else {
        Ok(format!("sunny in {city}"))
    }
}

/// A fallible tool through an alias of `Result`.
#[tool]
async fn parse(text: String) -> std::result::Result<Vec<u32>, std::num::ParseIntError> {
    text.split(',').map(str::parse).collect()
}

fn registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    registry.register(Text).unwrap();
    registry.register(StaticText).unwrap();
    registry.register(Integer).unwrap();
    registry.register(Float).unwrap();
    registry.register(Boolean).unwrap();
    registry.register(Value).unwrap();
    registry.register(Report).unwrap();
    registry.register(Name).unwrap();
    registry.register(Nothing).unwrap();
    registry.register(SkyTool).unwrap();
    registry.register(Maybe).unwrap();
    registry.register(Weather).unwrap();
    registry.register(Parse).unwrap();
    registry
}

async fn run(registry: &ToolRegistry, name: &str, args: serde_json::Value) -> String {
    let args: JsonObject = args.as_object().unwrap().clone();
    registry.execute(name, args).await
}

#[tokio::test]
async fn strings_are_returned_unquoted() {
    let registry = registry();
    assert_eq!(
        run(&registry, "text", json!({})).await,
        "plain \"quoted\" text"
    );
    assert_eq!(run(&registry, "static_text", json!({})).await, "static");
    assert_eq!(run(&registry, "name", json!({})).await, "Ada");
    assert_eq!(run(&registry, "sky", json!({})).await, "partly_cloudy");
}

#[tokio::test]
async fn optional_string_is_returned_unquoted_and_none_is_null() {
    let registry = registry();
    assert_eq!(
        run(&registry, "maybe", json!({"present": true})).await,
        "here"
    );
    assert_eq!(
        run(&registry, "maybe", json!({"present": false})).await,
        "null"
    );
}

#[tokio::test]
async fn numbers_and_booleans_are_their_json_text() {
    let registry = registry();
    assert_eq!(run(&registry, "integer", json!({})).await, "-7");
    assert_eq!(run(&registry, "float", json!({})).await, "2.5");
    assert_eq!(run(&registry, "boolean", json!({})).await, "true");
    assert_eq!(run(&registry, "nothing", json!({})).await, "null");
}

#[tokio::test]
async fn values_and_serializable_types_are_json_text() {
    let registry = registry();
    let value: serde_json::Value =
        serde_json::from_str(&run(&registry, "value", json!({})).await).unwrap();
    assert_eq!(value, json!({"ok": true, "items": [1, 2]}));
    assert_eq!(
        run(&registry, "report", json!({})).await,
        r#"{"city":"Oslo","temperature":-3}"#
    );
}

#[tokio::test]
async fn result_error_text_becomes_the_tool_error() {
    let registry = registry();
    assert_eq!(
        run(&registry, "weather", json!({"city": "Paris"})).await,
        "sunny in Paris"
    );
    assert_eq!(
        run(&registry, "weather", json!({"city": "Atlantis"})).await,
        "Error executing weather: no station near Atlantis"
    );
    assert_eq!(
        run(&registry, "parse", json!({"text": "1,2"})).await,
        "[1,2]"
    );
    assert_eq!(
        run(&registry, "parse", json!({"text": "1,x"})).await,
        "Error executing parse: invalid digit found in string"
    );
}
