use tool_core::tool;

/// Add two integers.
#[tool]
async fn add((a, b): (i32, i32)) -> i32 {
    a + b
}

fn main() {}
