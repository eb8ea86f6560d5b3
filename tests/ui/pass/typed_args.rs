use tool_core::{ExecutableTool, tool};

/// Arguments of `get_weather`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct WeatherArgs {
    /// The city.
    city: String,
}

/// Get the current weather for a city.
#[tool]
async fn get_weather(#[args] args: WeatherArgs) -> Result<String, std::io::Error> {
    Ok(format!("sunny in {}", args.city))
}

/// The same, with the parameter under another name.
#[tool(name = "get_weather_2")]
async fn get_weather_again(#[args] request: WeatherArgs) -> String {
    request.city
}

/// A parameter named `args` without `#[args]` is a plain argument like any other.
#[tool]
async fn shout(args: String) -> String {
    args.to_uppercase()
}

fn main() {
    assert_eq!(GetWeather.name(), "get_weather");
    assert_eq!(GetWeatherAgain.name(), "get_weather_2");
    let city = serde_json::json!({"type": "string", "description": "The city."});
    assert_eq!(GetWeather.get_schema().parameters()["properties"]["city"], city);
    assert_eq!(GetWeatherAgain.get_schema().parameters()["properties"]["city"], city);
    assert_eq!(
        Shout.get_schema().parameters()["properties"],
        serde_json::json!({"args": {"type": "string"}})
    );
    assert_eq!(Shout.get_schema().parameters()["required"], serde_json::json!(["args"]));
}
