use tool_core::{ExecutableTool, tool};

/// Add two integers.
#[tool(category = "math")]
async fn add(
    /// The first addend
    a: i64,
    /// The second addend
    b: i64,
) -> i64 {
    a + b
}

/// Search, with optional and renamed parameters.
#[tool]
async fn search(
    query: String,
    limit: Option<u32>,
    #[serde(default)] exact: bool,
    #[serde(rename = "type")] kind: String,
    #[schemars(range(min = 1, max = 10))] page: u8,
    mut extra: Vec<String>,
) -> Vec<String> {
    extra.push(format!("{query} {limit:?} {exact} {kind} {page}"));
    extra
}

fn main() {
    // The function stays callable as written.
    let _ = add(1, 2);
    assert_eq!(Add.name(), "add");
    assert_eq!(Search.name(), "search");
}
