// An enum taken as a plain parameter must describe its schema, as an `#[args]` type must.
use tool_core::tool;

#[derive(serde::Deserialize)]
enum Unit {
    Celsius,
    Fahrenheit,
}

/// Get the weather.
#[tool]
async fn get_weather(city: String, unit: Unit) -> String {
    let _ = unit;
    city
}

fn main() {}
