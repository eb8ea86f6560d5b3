use tool_core::tool;

/// Get the weather.
#[tool(name = "get weather")]
async fn get_weather(city: String) -> String {
    city
}

fn main() {}
