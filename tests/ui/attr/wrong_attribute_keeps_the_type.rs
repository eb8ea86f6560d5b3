use tool_core::{ExecutableTool, ToolRegistry, tool};

// Each wrong attribute is one error: the tool type is emitted as a stub, so its uses in `main`
// (construction, registration, trait methods) have no errors of their own.
/// Add two integers.
#[tool(categroy = "math")]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Count calls.
#[tool(timeout = "soon")]
async fn count(#[context] counter: std::sync::Arc<std::sync::atomic::AtomicU32>) -> u32 {
    counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

fn main() {
    let registry = ToolRegistry::new();
    let _ = registry.register(Add);
    let _ = registry.register(Count::new(Default::default()));
    let _ = Add.get_schema().name().len();
}
