use std::sync::Arc;

use tool_core::{ToolRegistry, toolbox};

struct Notes;

// A half-typed line in a method is rustc's one error; a stub `tools()` keeps `main` free of
// errors of its own.
#[toolbox]
impl Notes {
    /// Count the notes.
    #[tool]
    async fn count(&self) -> usize {
        let n = 1 + ;
        n
    }
}

fn main() {
    let registry = ToolRegistry::new();
    let _ = registry.register_all(Arc::new(Notes).tools());
}
