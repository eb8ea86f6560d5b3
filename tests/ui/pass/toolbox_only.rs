//! A toolbox whose file imports `tool` only for the methods: the import counts as used.
#![deny(warnings)]

use std::sync::Arc;

use tool_core::{ExecutableTool, tool, toolbox};

struct Clock;

#[toolbox]
impl Clock {
    /// The current hour.
    #[tool]
    async fn hour(&self) -> u8 {
        12
    }
}

fn main() {
    let tools = Arc::new(Clock).tools();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name(), "hour");
}
