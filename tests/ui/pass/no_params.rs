use tool_core::{ExecutableTool, tool};

/// The current time.
#[tool]
async fn now() -> &'static str {
    "noon"
}

fn main() {
    assert_eq!(Now.get_schema().parameters()["type"], "object");
}
