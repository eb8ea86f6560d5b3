//! Typed tools for large language models.
//!
//! Put `#[tool]` on an `async fn` and get a tool a model can call: a name, a description from the
//! doc comment, a JSON Schema derived from the arguments, and the conversion of the model's
//! untyped JSON into those arguments. Register tools in a [`ToolRegistry`] (enable, disable,
//! list, convert to each provider's format, execute without ever crashing the caller) and hand
//! the registry to an agent that runs the tool-call loop against real model providers.
//!
//! ```
//! use tool_core::{ChatTool, ExecutableTool, JsonObject, ToolError, ToolRegistry, async_trait};
//!
//! struct Add;
//!
//! #[async_trait]
//! impl ExecutableTool for Add {
//!     fn name(&self) -> &str {
//!         "add"
//!     }
//!
//!     fn get_schema(&self) -> ChatTool {
//!         ChatTool::new(
//!             "add",
//!             "Add two integers.",
//!             serde_json::json!({
//!                 "type": "object",
//!                 "properties": { "a": { "type": "integer" }, "b": { "type": "integer" } },
//!                 "required": ["a", "b"]
//!             }),
//!         )
//!     }
//!
//!     async fn execute(&self, args: JsonObject) -> Result<String, ToolError> {
//!         let a = args["a"].as_i64().unwrap_or_default();
//!         let b = args["b"].as_i64().unwrap_or_default();
//!         Ok((a + b).to_string())
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let registry = ToolRegistry::new();
//! registry.register(Add).unwrap();
//! let args = serde_json::from_str(r#"{"a": 2, "b": 3}"#).unwrap();
//! assert_eq!(registry.execute("add", args).await, "5");
//!
//! let args = serde_json::from_str(r#"{"a": "two", "b": 3}"#).unwrap();
//! assert_eq!(
//!     registry.execute("add", args).await,
//!     "Error: invalid arguments for add: at /a: expected an integer, got \"two\""
//! );
//! # });
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]

#[allow(unused_extern_crates)]
extern crate self as tool_core;

pub mod builtin;
pub mod context;
pub mod execute;
pub mod model;
pub mod registry;
pub mod schema;
pub mod tool;

#[doc(hidden)]
pub mod __private;

pub use async_trait::async_trait;
pub use builtin::create_default_tool_registry;
pub use context::{SessionContext, ToolContext, ToolContextOptions};
pub use execute::ExecuteError;
pub use registry::{
    RegistryError, RegistryEvent, RegistryOptions, RegistrySnapshot, ToolInfo, ToolRegistry,
    ToolToggles,
};
pub use schema::{FormatOptions, Provider, SchemaError, UnknownProvider};
pub use tool::{
    ChatTool, ExecutableTool, FunctionDefinition, JsonObject, ToolError, ToolHints, ToolKind,
    ToolMetadata,
};
#[cfg(feature = "macros")]
pub use tool_macros::{tool, toolbox};
