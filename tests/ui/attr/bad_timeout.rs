use tool_core::tool;

/// Get the weather.
#[tool(timeout = "30 seconds")]
async fn get_weather(city: String) -> String {
    city
}

fn main() {}
