use tool_core::{ExecutableTool, tool};

/// Arguments of `get_weather`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct WeatherArgs {
    /// The city.
    city: String,
}

/// Get the current weather for a city.
#[tool]
async fn get_weather(args: WeatherArgs) -> Result<String, std::io::Error> {
    Ok(format!("sunny in {}", args.city))
}

/// The same, with the struct under another name, marked `#[args]`.
#[tool(name = "get_weather_2")]
async fn get_weather_again(#[args] request: WeatherArgs) -> String {
    request.city
}

fn main() {
    assert_eq!(GetWeather.name(), "get_weather");
    assert_eq!(GetWeatherAgain.name(), "get_weather_2");
}
