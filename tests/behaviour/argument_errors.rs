//! The words the model reads when a value is not one a tool accepts: the allowed values of an
//! enum in every shape schemars writes (plain, `Option`, variants with doc comments), and a
//! whole number written with a fraction for an integer, each at its place, alike through
//! `execute` and `execute_text`, with and without schema validation in the registry.

use serde::Deserialize;
use tool_core::{RegistryOptions, ToolRegistry, tool};

/// How a job runs.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Mode {
    Fast,
    Slow,
}

/// How a job runs, each way explained to the model.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Speed {
    /// As quickly as it can.
    Fast,
    /// Carefully.
    Slow,
}

/// Set the mode, or leave it as it is.
#[tool]
async fn set_mode(mode: Option<Mode>) -> String {
    format!("{mode:?}")
}

/// Set the mode.
#[tool]
async fn set_plain_mode(mode: Mode) -> String {
    format!("{mode:?}")
}

/// Set the speed.
#[tool]
async fn set_speed(speed: Speed) -> String {
    format!("{speed:?}")
}

/// Set the speed, or leave it as it is.
#[tool]
async fn set_optional_speed(speed: Option<Speed>) -> String {
    format!("{speed:?}")
}

/// Forecast the weather for some days.
#[tool]
async fn forecast(days: i64) -> String {
    format!("{days} days")
}

/// One leg of a trip.
#[derive(Deserialize, schemars::JsonSchema)]
struct Leg {
    /// The nights spent.
    nights: u8,
    /// The price, in any unit.
    price: f64,
}

/// A trip.
#[derive(Deserialize, schemars::JsonSchema)]
struct Trip {
    /// The legs, in order.
    legs: Vec<Leg>,
}

/// Plan a trip.
#[tool]
async fn plan(#[args] trip: Trip) -> String {
    let nights: u32 = trip.legs.iter().map(|leg| u32::from(leg.nights)).sum();
    let price: f64 = trip.legs.iter().map(|leg| leg.price).sum();
    format!("{nights} nights for {price}")
}

fn registry(options: RegistryOptions) -> ToolRegistry {
    let registry = ToolRegistry::with_options(options);
    registry.register(SetMode).unwrap();
    registry.register(SetPlainMode).unwrap();
    registry.register(SetSpeed).unwrap();
    registry.register(SetOptionalSpeed).unwrap();
    registry.register(Forecast).unwrap();
    registry.register(Plan).unwrap();
    registry
}

/// Runs every case through `execute` and `execute_text`, validated and not.
async fn assert_cases(cases: &[(&str, &str, &str)]) {
    for options in [
        RegistryOptions::new(),
        RegistryOptions::new().validate_arguments(false),
    ] {
        let registry = registry(options);
        for (name, text, expected) in cases {
            let serde_json::Value::Object(args) = serde_json::from_str(text).unwrap() else {
                panic!("{text} is not an object");
            };
            assert_eq!(
                registry.execute(name, args).await,
                *expected,
                "execute {name} {text}"
            );
            assert_eq!(
                registry.execute_text(name, text).await,
                *expected,
                "execute_text {name} {text}"
            );
        }
    }
}

#[tokio::test]
async fn a_bad_enum_value_is_answered_with_the_allowed_values() {
    assert_cases(&[
        ("set_mode", r#"{"mode": "fast"}"#, "Some(Fast)"),
        ("set_mode", r#"{"mode": null}"#, "None"),
        (
            "set_mode",
            r#"{"mode": "medium"}"#,
            r#"Error: invalid arguments for set_mode: at /mode: expected one of "fast", "slow" (or null), got "medium""#,
        ),
        (
            "set_mode",
            r#"{"mode": 3}"#,
            r#"Error: invalid arguments for set_mode: at /mode: expected one of "fast", "slow" (or null), got 3"#,
        ),
        (
            "set_plain_mode",
            r#"{"mode": "medium"}"#,
            r#"Error: invalid arguments for set_plain_mode: at /mode: expected one of "fast", "slow", got "medium""#,
        ),
        ("set_speed", r#"{"speed": "slow"}"#, "Slow"),
        (
            "set_speed",
            r#"{"speed": "medium"}"#,
            r#"Error: invalid arguments for set_speed: at /speed: expected one of "fast", "slow", got "medium""#,
        ),
        (
            "set_optional_speed",
            r#"{"speed": "medium"}"#,
            r#"Error: invalid arguments for set_optional_speed: at /speed: expected one of "fast", "slow" (or null), got "medium""#,
        ),
    ])
    .await;
}

#[tokio::test]
async fn a_fraction_for_an_integer_is_placed_and_named() {
    assert_cases(&[
        ("forecast", r#"{"days": 30}"#, "30 days"),
        (
            "forecast",
            r#"{"days": 30.0}"#,
            "Error: invalid arguments for forecast: at /days: expected an integer, got 30.0",
        ),
        (
            "forecast",
            r#"{"days": 2.5}"#,
            "Error: invalid arguments for forecast: at /days: expected an integer, got 2.5",
        ),
        (
            "plan",
            r#"{"legs": [{"nights": 2, "price": 3.0}, {"nights": 3.0, "price": 3.0}]}"#,
            "Error: invalid arguments for plan: at /legs/1/nights: expected an integer from 0 to 255, got 3.0",
        ),
        (
            "plan",
            r#"{"legs": [{"nights": 2, "price": 3.0}]}"#,
            "2 nights for 3",
        ),
    ])
    .await;
}
