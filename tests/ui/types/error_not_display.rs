use tool_core::tool;

#[derive(Debug)]
struct WeatherError;

/// Get the weather.
#[tool]
async fn get_weather(city: String) -> Result<String, WeatherError> {
    if city.is_empty() { Err(WeatherError) } else { Ok(city) }
}

fn main() {}
