// Registering the function rather than the type `#[tool]` generates for it: the error names the
// type to register.
use tool_core::{ToolRegistry, tool};

/// Add two numbers.
#[tool]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {
    let registry = ToolRegistry::new();
    let _ = registry.register(add);
}
