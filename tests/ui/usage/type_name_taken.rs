// The type `#[tool]` generates is named after the function, here `Weather`, which is taken: one
// error, which says how to pick another name.
use tool_core::tool;

pub struct Weather {
    pub sunny: bool,
}

/// Get the weather.
#[tool]
async fn weather(city: String) -> String {
    city
}

fn main() {}
