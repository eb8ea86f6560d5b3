use tool_core::tool;

// An unknown key, a bad timeout and a non-async fn: every error is shown, and the function
// stays callable, so `main` has no error of its own.
#[tool(descripton = "Add.", timeout = "soon")]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {
    let _ = add(1, 2);
}
