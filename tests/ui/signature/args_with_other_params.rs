use tool_core::tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct WeatherArgs {
    city: String,
}

/// Get the weather.
#[tool]
async fn get_weather(#[args] args: WeatherArgs, days: u8) -> String {
    format!("{} for {days} days", args.city)
}

fn main() {}
