use std::sync::Arc;

use tool_core::{CallContext, Deps, ExecutableTool, ToolError, tool, toolbox};

struct UserId(u64);

/// Greet the user this call serves.
#[tool(needs_approval, max_retries = 2)]
async fn greet(call: &CallContext, name: String) -> Result<String, ToolError> {
    let user: &UserId = call.dep()?;
    Ok(format!("hello {name} from {} in {}", user.0, call.call_id()))
}

/// Count the dependencies, beside a construction-time context and a typed struct.
#[tool]
async fn count_deps(deps: &Deps, #[context] prefix: Arc<String>) -> String {
    format!("{prefix}{}", deps.is_empty())
}

struct Shop;

#[toolbox]
impl Shop {
    /// Buy something for the user of this call.
    #[tool]
    async fn buy(&self, call: &CallContext, item: String) -> String {
        format!("{item} for call {}", call.call_id())
    }
}

fn main() {
    assert_eq!(Greet.name(), "greet");
    assert!(Greet.metadata().needs_approval);
    assert_eq!(Greet.metadata().max_retries, Some(2));
    assert_eq!(CountDeps::new(Arc::new("n".to_owned())).name(), "count_deps");
    assert_eq!(Arc::new(Shop).tools().len(), 1);
}
