use tool_core::tool;

struct Forecast {
    sunny: bool,
}

/// Get the weather.
#[tool]
async fn get_weather(city: String) -> Forecast {
    Forecast { sunny: city.is_empty() }
}

fn main() {}
