//! The built-in tools: `read_file`, `write_file` and `save_session_context`, and
//! [`create_default_tool_registry`].

mod atomic;
mod confined;
mod files;
mod session;

pub(crate) use atomic::write_atomic;
#[cfg(feature = "file-store")]
pub(crate) use atomic::write_atomic_blocking;
pub use files::{ReadFile, ReadFileArgs, WriteFile, WriteFileArgs};
pub use session::{SaveSessionContext, SaveSessionContextArgs};

use crate::{context::ToolContext, registry::ToolRegistry};

/// A registry with the three built-in tools, all enabled: `read_file`, `write_file` and
/// `save_session_context`, sharing `context`.
///
/// ```
/// use tool_core::{ToolContext, create_default_tool_registry};
///
/// let registry = create_default_tool_registry(ToolContext::default());
/// assert_eq!(
///     registry.get_tool_names(),
///     ["read_file", "write_file", "save_session_context"]
/// );
/// ```
pub fn create_default_tool_registry(context: ToolContext) -> ToolRegistry {
    let registry = ToolRegistry::new();
    register_builtins(&registry, &context);
    registry
}

/// Registers the built-in tools in an existing registry; tools whose names are taken are
/// skipped with a warning.
pub fn register_builtins(registry: &ToolRegistry, context: &ToolContext) {
    let results = [
        registry.register(ReadFile::new(context.clone())),
        registry.register(WriteFile::new(context.clone())),
        registry.register(SaveSessionContext::new(context.clone())),
    ];
    for error in results.into_iter().filter_map(Result::err) {
        tracing::warn!(%error, "built-in tool not registered");
    }
}
