use tool_core::{ExecutableTool, tool};

// A half-typed parameter is rustc's one error; a stub of the tool type keeps `main` free of
// errors of its own.
/// Add two integers.
#[tool]
async fn add(a: i64 b: i64) -> i64 {
    a + b
}

fn main() {
    let registry = tool_core::ToolRegistry::new();
    let _ = registry.register(Add);
    let _ = Add.name();
}
