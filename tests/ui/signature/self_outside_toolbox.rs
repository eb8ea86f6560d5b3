use tool_core::tool;

struct Weather;

impl Weather {
    /// Get the weather.
    #[tool]
    async fn get_weather(&self, city: String) -> String {
        city
    }
}

fn main() {}
