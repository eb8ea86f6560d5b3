//! Turning the model's untyped arguments into a tool's typed arguments, and the errors the model
//! sees when they do not fit, with and without schema validation in the registry.

use serde_json::json;
use tool_core::{JsonObject, RegistryOptions, ToolRegistry, tool};

/// Arguments of `get_weather`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct WeatherArgs {
    /// The city.
    city: String,
    /// How many days ahead.
    #[serde(default)]
    days: u8,
}

/// Get the weather.
#[tool]
async fn get_weather(#[args] args: WeatherArgs) -> String {
    format!("sunny in {} in {} days", args.city, args.days)
}

/// Strict arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct StrictArgs {
    /// The text.
    text: String,
}

/// Echo strictly.
#[tool]
async fn echo(#[args] args: StrictArgs) -> String {
    args.text
}

/// Add two integers.
#[tool]
async fn add(a: i64, b: i64, scale: Option<i64>) -> i64 {
    (a + b) * scale.unwrap_or(1)
}

fn args(value: serde_json::Value) -> JsonObject {
    value.as_object().unwrap().clone()
}

fn unvalidated() -> ToolRegistry {
    let registry = ToolRegistry::with_options(RegistryOptions::new().validate_arguments(false));
    registry.register(GetWeather).unwrap();
    registry.register(Echo).unwrap();
    registry.register(Add).unwrap();
    registry
}

#[tokio::test]
async fn wrong_argument_type_names_tool_path_expected_and_got() {
    let registry = unvalidated();
    assert_eq!(
        registry
            .execute("get_weather", args(json!({"city": 42})))
            .await,
        "Error: invalid arguments for get_weather: at /city: expected a string, got 42"
    );
}

#[tokio::test]
async fn missing_required_argument_is_named() {
    let registry = unvalidated();
    assert_eq!(
        registry
            .execute("get_weather", args(json!({"days": 2})))
            .await,
        "Error: invalid arguments for get_weather: missing required argument 'city'"
    );
    assert_eq!(
        registry.execute("add", args(json!({"a": 1}))).await,
        "Error: invalid arguments for add: missing required argument 'b'"
    );
}

#[tokio::test]
async fn plain_parameters_narrow_with_optional_ones_left_out() {
    let registry = unvalidated();
    assert_eq!(
        registry.execute("add", args(json!({"a": 2, "b": 3}))).await,
        "5"
    );
    assert_eq!(
        registry
            .execute("add", args(json!({"a": 2, "b": 3, "scale": 10})))
            .await,
        "50"
    );
    assert_eq!(
        registry
            .execute("add", args(json!({"a": 2, "b": "three"})))
            .await,
        "Error: invalid arguments for add: at /b: expected an integer, got \"three\""
    );
}

#[tokio::test]
async fn unknown_arguments_are_ignored_unless_the_type_denies_them() {
    let registry = unvalidated();
    assert_eq!(
        registry
            .execute(
                "get_weather",
                args(json!({"city": "Paris", "mood": "happy"}))
            )
            .await,
        "sunny in Paris in 0 days"
    );
    assert_eq!(
        registry
            .execute("echo", args(json!({"text": "hi", "mood": "happy"})))
            .await,
        "Error: invalid arguments for echo: unknown argument 'mood' is not allowed"
    );
}

#[tokio::test]
async fn several_unknown_arguments_are_named_in_one_sentence() {
    let registry = ToolRegistry::new();
    registry.register(Echo).unwrap();
    assert_eq!(
        registry
            .execute("echo", args(json!({"text": "hi", "mood": "happy"})))
            .await,
        "Error: invalid arguments for echo: unknown argument 'mood' is not allowed"
    );
    assert_eq!(
        registry
            .execute(
                "echo",
                args(json!({"text": "hi", "mood": "happy", "tone": "dry"}))
            )
            .await,
        "Error: invalid arguments for echo: unknown arguments 'mood' and 'tone' are not allowed"
    );
    assert_eq!(
        registry
            .execute(
                "echo",
                args(json!({"text": "hi", "mood": "happy", "pitch": 3, "tone": "dry"}))
            )
            .await,
        "Error: invalid arguments for echo: unknown arguments 'mood', 'pitch' and 'tone' are not \
         allowed"
    );
}

#[tokio::test]
async fn with_validation_on_the_schema_reports_the_same_shape() {
    let registry = ToolRegistry::new();
    registry.register(GetWeather).unwrap();
    assert_eq!(
        registry
            .execute("get_weather", args(json!({"city": 42})))
            .await,
        "Error: invalid arguments for get_weather: at /city: expected a string, got 42"
    );
    assert_eq!(
        registry.execute("get_weather", args(json!({}))).await,
        "Error: invalid arguments for get_weather: missing required argument 'city'"
    );
    assert_eq!(
        registry
            .execute("get_weather", args(json!({"city": "Oslo", "days": 3})))
            .await,
        "sunny in Oslo in 3 days"
    );
}

/// Arguments with a bounded string read before the fields that go wrong.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct TripArgs {
    /// The city.
    #[schemars(length(min = 2))]
    city: String,
    /// How many nights.
    nights: u8,
    /// A note.
    note: String,
    /// Places to see.
    #[schemars(length(min = 1))]
    sights: Vec<String>,
}

/// Plan a trip.
#[tool]
async fn trip(#[args] args: TripArgs) -> String {
    format!(
        "{} nights in {} ({}; {})",
        args.nights,
        args.city,
        args.note,
        args.sights.join(", ")
    )
}

#[tokio::test]
async fn strings_read_before_a_mismatch_are_not_reported_as_wrong() {
    // The object path moves the strings it reads into the arguments; when a later field does
    // not fit, what the model is told is about that field alone, on every way in.
    let object = args(json!({
        "city": "Oslo",
        "nights": "three",
        "note": "quiet",
        "sights": ["fjord"],
    }));
    let expected = "at /nights: expected an integer, got \"three\"";
    for registry in [
        ToolRegistry::new(),
        ToolRegistry::with_options(RegistryOptions::new().validate_arguments(false)),
    ] {
        registry.register(Trip).unwrap();
        assert_eq!(
            registry.execute("trip", object.clone()).await,
            format!("Error: invalid arguments for trip: {expected}")
        );
    }
    let error = tool_core::ExecutableTool::execute(&Trip, object)
        .await
        .unwrap_err();
    assert!(error.is_invalid_arguments());
    assert_eq!(
        error.message(),
        format!("invalid arguments for trip: {expected}")
    );
}

#[tokio::test]
async fn every_wrong_field_is_named_after_strings_were_read() {
    let registry = unvalidated();
    registry.register(Trip).unwrap();
    assert_eq!(
        registry
            .execute(
                "trip",
                args(json!({"city": "Oslo", "nights": "three", "note": 5, "sights": ["fjord"]}))
            )
            .await,
        "Error: invalid arguments for trip: at /nights: expected an integer, got \"three\"; \
         at /note: expected a string, got 5"
    );
    // A number the schema takes and the type does not keeps serde's words, at its place.
    assert_eq!(
        registry
            .execute(
                "trip",
                args(json!({"city": "Oslo", "nights": 2.0, "note": "", "sights": [""]}))
            )
            .await,
        "Error: invalid arguments for trip: at /nights: expected an integer from 0 to 255, got 2.0"
    );
    assert_eq!(
        registry
            .execute(
                "trip",
                args(json!({"city": "Oslo", "nights": 2, "note": "quiet", "sights": ["fjord"]}))
            )
            .await,
        "2 nights in Oslo (quiet; fjord)"
    );
}

#[test]
fn a_tool_whose_body_never_waits_finishes_when_its_object_call_is_made() {
    use tool_core::{ExecutableTool, TextCall};

    let call = Trip.execute_object(
        args(json!({"city": "Oslo", "nights": 2, "note": "quiet", "sights": ["fjord"]})),
        None,
    );
    assert!(
        matches!(&call, TextCall::Finished(Ok(text)) if text == "2 nights in Oslo (quiet; fjord)"),
        "{call:?}"
    );
    let call = Trip.execute_object(args(json!({"city": "Oslo"})), None);
    assert!(
        matches!(&call, TextCall::Finished(Err(error)) if error.message()
            == "invalid arguments for trip: missing required argument 'nights'; \
                missing required argument 'note'; missing required argument 'sights'"),
        "{call:?}"
    );
}
