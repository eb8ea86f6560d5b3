use tool_core::{ExecutableTool, tool};

// A half-typed line in the body is rustc's one error; the tool type is still generated, so
// `main` has no error of its own.
/// Add two integers.
#[tool]
async fn add(a: i64, b: i64) -> i64 {
    let sum = a + ;
    sum
}

fn main() {
    assert_eq!(Add.name(), "add");
}
