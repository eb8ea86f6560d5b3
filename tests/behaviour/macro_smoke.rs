use std::sync::Arc;

use tool_core::{ExecutableTool, ToolRegistry, tool, toolbox};

/// Add two integers.
#[tool(category = "math", timeout = "30s")]
async fn add(
    /// The first addend
    a: i64,
    /// The second addend
    b: i64,
) -> i64 {
    a + b
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct WeatherArgs {
    /// The city.
    city: String,
}

/// Get the weather.
#[tool]
async fn get_weather(args: WeatherArgs) -> Result<String, std::io::Error> {
    Ok(format!("sunny in {}", args.city))
}

/// Say hi.
#[tool]
async fn hello() -> &'static str {
    "hi"
}

struct State {
    greeting: String,
}

/// Greet.
#[tool]
async fn greet(#[context] state: &State, name: Option<String>) -> String {
    format!("{} {}", state.greeting, name.unwrap_or_default())
}

struct Weather;

#[toolbox]
impl Weather {
    /// Forecast.
    #[tool]
    async fn forecast(&self, days: u8) -> Vec<u8> {
        vec![days]
    }
}

#[tokio::test]
async fn smoke() {
    let registry = ToolRegistry::new();
    registry.register(Add).unwrap();
    registry.register(GetWeather).unwrap();
    registry.register(Hello).unwrap();
    registry
        .register(Greet::new(State {
            greeting: "hello".into(),
        }))
        .unwrap();
    assert!(registry.register_all(Arc::new(Weather).tools()).is_empty());
    let args = serde_json::json!({"a": 1, "b": 2})
        .as_object()
        .unwrap()
        .clone();
    assert_eq!(registry.execute("add", args).await, "3");
    println!(
        "{}",
        serde_json::to_string_pretty(&registry.get_enabled_schemas()).unwrap()
    );
    let _ = Add.get_schema();
}
