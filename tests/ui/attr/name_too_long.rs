use tool_core::tool;

/// Get the weather.
#[tool(name = "get_the_current_weather_for_a_city_with_a_very_long_tool_name_abc")]
async fn get_weather(city: String) -> String {
    city
}

fn main() {}
