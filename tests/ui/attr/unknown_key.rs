use tool_core::tool;

/// Add two integers.
#[tool(categroy = "math")]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {}
