// A tool with a `#[context]` parameter whose type name is taken: one error, as for a tool
// without one.
use tool_core::tool;

pub struct CountRows;

/// Count the rows of the table.
#[tool]
async fn count_rows(#[context] table: &Vec<String>) -> usize {
    table.len()
}

fn main() {}
