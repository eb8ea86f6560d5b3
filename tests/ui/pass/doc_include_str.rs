use tool_core::{ExecutableTool, tool};

#[doc = include_str!("description.md")]
#[tool]
async fn get_weather(city: String) -> String {
    city
}

/// A description from the attribute wins over the doc comment.
#[tool(description = "Add two integers.")]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {
    assert_eq!(
        GetWeather.get_schema().description(),
        "Get the weather, with the description kept in a file."
    );
    assert_eq!(Add.get_schema().description(), "Add two integers.");
}
