use tool_core::tool;

#[derive(serde::Deserialize)]
struct WeatherArgs {
    city: String,
}

/// Get the weather.
#[tool]
async fn get_weather(#[args] args: WeatherArgs) -> String {
    args.city
}

fn main() {}
