// A tool with a `#[context]` parameter is built with `new(..)`, not named as a unit value: the
// error leads to the constructor, not to a struct literal of its private field.
use tool_core::{ToolRegistry, tool};

/// Count the rows of the table.
#[tool]
async fn count_rows(#[context] table: &Vec<String>) -> usize {
    table.len()
}

fn main() {
    let registry = ToolRegistry::new();
    let _ = registry.register(CountRows);
}
