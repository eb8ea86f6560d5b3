// A context that is not `Sync`: one error on its type where the tool is defined (not one per
// generated item), and the registration, which needs a thread-safe tool, says why it cannot.
use std::cell::Cell;

use tool_core::{ToolRegistry, tool};

/// Read the value.
#[tool]
async fn peek(#[context] value: Cell<u32>) -> u32 {
    value.get()
}

fn main() {
    let registry = ToolRegistry::new();
    let _ = registry.register(Peek::new(Cell::new(1)));
}
