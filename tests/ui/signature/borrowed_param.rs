use tool_core::tool;

/// Shout a text.
#[tool]
async fn shout(text: &str) -> String {
    text.to_uppercase()
}

fn main() {}
