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
#![warn(clippy::pedantic)]
// The exceptions to clippy::pedantic, each for a reason:
#![allow(
    // `#[must_use]` marks what is a bug to ignore (every `Result`, the builders, registry
    // changes); on every getter it would be noise.
    clippy::must_use_candidate,
    // Each error type documents when each of its variants happens; a `# Errors` section on
    // every function that returns it would repeat that.
    clippy::missing_errors_doc,
    // Owned arguments are part of the contract (`create_default_tool_registry(context)`) and
    // let callers hand over values they no longer need.
    clippy::needless_pass_by_value
)]

#[allow(unused_extern_crates)]
extern crate self as tool_core;

pub mod agent;
pub mod builtin;
pub mod call;
pub mod config;
pub mod context;
pub mod execute;
#[cfg(feature = "mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp")))]
pub mod mcp;
pub mod model;
pub mod registry;
pub mod schema;
pub mod session;
pub mod store;
pub mod tool;

#[doc(hidden)]
pub mod __private;

/// Internals that the crate's own benchmarks and tests reach; not part of the API, and free to
/// change in any release.
#[doc(hidden)]
#[cfg(feature = "http")]
pub mod __bench {
    use futures::Stream;

    use crate::model::ModelStream;

    /// Declares, for each wire, a function decoding a streamed body of that wire (for example
    /// a recorded one) into model events.
    macro_rules! decoders {
        ($($(#[$doc:meta])* $feature:literal $name:ident: $wire:ty;)*) => {$(
            $(#[$doc])*
            #[cfg(feature = $feature)]
            pub fn $name<S, B, E>(body: S) -> ModelStream
            where
                S: Stream<Item = Result<B, E>> + Send + 'static,
                B: Into<bytes::Bytes>,
                E: std::fmt::Display,
            {
                crate::model::client::decode_stream::<$wire, _, _, _>(body)
            }
        )*};
    }

    decoders! {
        /// Decodes an Anthropic Messages SSE body into model events.
        "anthropic" decode_anthropic: crate::model::anthropic::Messages;
        /// Decodes a Gemini `streamGenerateContent?alt=sse` body into model events.
        "gemini" decode_gemini: crate::model::gemini::GenerateContent;
        /// Decodes an Ollama `/api/chat` NDJSON body into model events.
        "ollama" decode_ollama: crate::model::ollama::OllamaChat;
        /// Decodes an OpenAI Chat Completions SSE body into model events.
        "openai" decode_openai: crate::model::openai::ChatCompletions;
        /// Decodes an OpenAI Responses SSE body into model events.
        "openai" decode_responses: crate::model::responses::Responses;
    }
}

pub use agent::{Agent, AgentError, AgentEvent, AgentOptions, AgentResponse};
pub use async_trait::async_trait;
pub use builtin::create_default_tool_registry;
pub use call::{CallContext, Deps, MissingDependency, Progress};
pub use config::{HandlerTable, LoadReport, ToolConfig};
pub use context::{Conversation, ToolContext, ToolContextOptions};
pub use execute::ExecuteError;
pub use model::{ChatModel, Message, ProviderError, ToolCall};
pub use registry::{
    RegistryError, RegistryEvent, RegistryOptions, RegistrySnapshot, ToolInfo, ToolRegistry,
    ToolToggles,
};
pub use schema::{FormatOptions, Provider, SchemaError, UnknownProvider, format_tool};
#[cfg(feature = "file-store")]
pub use session::FilePreferenceStore;
pub use session::{ChatSession, MemoryPreferenceStore, PreferenceStore, Preferences};
pub use tool::{
    ChatTool, ExecutableTool, FunctionDefinition, JsonObject, TextCall, ToolError, ToolFuture,
    ToolHints, ToolKind, ToolMetadata,
};
/// Turns an `async fn` into a tool a model can call.
///
/// `#[tool]` keeps the function as written and generates, beside it, a type named after the
/// function in PascalCase (`get_weather` → `GetWeather`) that implements [`ExecutableTool`]: its
/// name, its description, the JSON Schema of its arguments, the conversion of the model's
/// untyped arguments into typed ones, and the conversion of the result into the text the model
/// reads. Register that type in a [`ToolRegistry`].
///
/// ```toml
/// [dependencies]
/// tool-core = "0.1"  # the `macros` feature is on by default
/// serde = { version = "1", features = ["derive"] }  # only for the typed-struct form
/// schemars = "1"                                     # only for the typed-struct form
/// ```
///
/// # Example
///
/// ```
/// use tool_core::{ToolRegistry, tool};
///
/// /// The arguments of `get_weather`.
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct WeatherArgs {
///     /// The city, such as `Paris`.
///     city: String,
/// }
///
/// /// Get the current weather for a city.
/// #[tool(read_only, timeout = "10s")]
/// async fn get_weather(#[args] args: WeatherArgs) -> Result<String, std::io::Error> {
///     Ok(format!("sunny in {}", args.city))
/// }
///
/// /// Add two integers.
/// #[tool(category = "math")]
/// async fn add(
///     /// The first addend
///     a: i64,
///     /// The second addend
///     b: i64,
/// ) -> i64 {
///     a + b
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let registry = ToolRegistry::new();
/// registry.register(GetWeather).unwrap();
/// registry.register(Add).unwrap();
///
/// let args = serde_json::from_str(r#"{"a": 2, "b": 3}"#).unwrap();
/// assert_eq!(registry.execute("add", args).await, "5");
/// let args = serde_json::from_str(r#"{"city": "Paris"}"#).unwrap();
/// assert_eq!(registry.execute("get_weather", args).await, "sunny in Paris");
///
/// // The functions stay callable, so they can be unit tested as they are.
/// assert_eq!(add(2, 3).await, 5);
/// # });
/// ```
///
/// # Behaviour
///
/// - **Arguments**, in one of three forms:
///   - *one typed struct*: the parameter marked `#[args]`, whose type implements
///     `Deserialize` and `JsonSchema`; the model's argument object is that struct, and its
///     field docs describe the parameters. Only the marker selects this form, never a name:
///     an unmarked `args: String` is a plain parameter named `args`;
///   - *plain parameters*: `#[tool]` gathers them into a hidden struct deriving `Deserialize`
///     and `JsonSchema` (through tool-core's own serde and schemars, so the plain form needs no
///     other dependency); a parameter's doc comment is its description, `Option<T>` parameters
///     are optional, and `#[serde(...)]` / `#[schemars(...)]` on a parameter pass through
///     (`default`, `rename`, `range`, ...);
///   - *no parameters*: the schema is an empty object schema and the arguments are ignored.
/// - **Schema**: derived by schemars, built once per tool type and cached; its root is an
///   object. `Option<T>` and `#[serde(default)]` fields are not required, by the same rule for
///   the schema and for deserialization. Unknown extra arguments are ignored unless the type
///   denies them (`#[serde(deny_unknown_fields)]`).
/// - **Narrowing**: the model's [`JsonObject`] is moved into the deserializer, not cloned. A bad
///   argument is an error the model can act on: `invalid arguments for get_weather: at /city:
///   expected a string, got 42`, or `missing required argument 'city'`.
/// - **Name**: the function's name, or `name = "..."`; checked at compile time against
///   `^[a-zA-Z0-9_-]{1,64}$`.
/// - **Description**: the doc comment, lines joined with newlines and trimmed;
///   `#[doc = include_str!("..")]` works; or `description = "..."`. A tool without one does not
///   compile.
/// - **Return type**: `T` or `Result<T, E>` (also through aliases such as `io::Result<T>`),
///   where `T` is `String`, `&'static str`, a number, `bool`, `serde_json::Value` or any
///   `Serialize` type, and `E: Display`. A string (or anything serializing to one) is returned as
///   is; any other value as JSON text; the error's text becomes the tool's error, which the model
///   reads as `Error executing {name}: {text}`.
/// - **Context**: one parameter may be marked `#[context]` (`ctx: &ToolContext`,
///   `db: &Database`, `client: Arc<Client>`). The generated type then holds that value (`T` for
///   a `&T` parameter) and is built with `GetWeather::new(value)`; a by-value context is cloned
///   for each call. The context never appears in the schema. For state shared by several tools,
///   see [`toolbox`].
/// - **The generated type** has the function's visibility and docs; without a context it is a
///   unit struct (`Clone`, `Copy`, `Debug`, `Default`). It names only `::tool_core` paths, so a
///   `struct Result;` in scope does not break it.
/// - **Errors** are spanned on the offending tokens and all shown at once; the function itself
///   is still emitted, and so is a stub of the generated type implementing [`ExecutableTool`],
///   so neither the function's callers nor the type's users fail in a cascade. A syntax error
///   in the function is left to rustc, which reports it once.
///
/// # Attribute arguments
///
/// | argument | value | effect |
/// |---|---|---|
/// | `name` | `"get_weather"` | the tool's name (default: the function's name) |
/// | `description` | `"..."` or `include_str!("..")` | the description (default: the doc comment) |
/// | `rename_struct` | `"WeatherTool"` | the generated type's name (default: PascalCase name) |
/// | `title` | `"Get the weather"` | [`ToolMetadata::title`] |
/// | `category` | `"weather"` | [`ToolMetadata::category`] |
/// | `icon` | `"https://..."` | [`ToolMetadata::icon`] |
/// | `enabled` | `false` | registered disabled ([`ToolMetadata::default_enabled`]) |
/// | `read_only`, `destructive`, `idempotent`, `open_world` | bare, or `= true`/`= false` | [`ToolHints`] |
/// | `sequential` | bare, or `= true`/`= false` | [`ToolMetadata::sequential`] |
/// | `timeout` | `"500ms"`, `"30s"`, `"5m"`, `"1h"` | [`ToolMetadata::timeout`] |
/// | `lenient` | bare, or `= true`/`= false` | [`ToolMetadata::lenient_arguments`]: `"30"` read as `30`, a stringified object as the object, … (`false` keeps the tool strict in a lenient registry) |
///
/// Parameter attributes: `#[context]` (the injected value), `#[args]` (the whole argument
/// object), docs, `#[serde(...)]` and `#[schemars(...)]`.
///
/// # Limitations
///
/// - The function must be `async`, not generic, and its parameters plain names with owned,
///   concrete types (no `impl Trait`, no `&str`: use `String`).
/// - A typed-struct tool takes no other parameter than the struct (and the context).
/// - Which return types are `Result`s is decided by type, so a `Result` whose error is not
///   `Display` is rejected rather than serialized.
///
/// # Misuses caught at compile time
///
/// A function that is not `async`:
///
/// ```compile_fail
/// /// Add two integers.
/// #[tool_core::tool]
/// fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
/// ```
///
/// A tool without a description:
///
/// ```compile_fail
/// #[tool_core::tool]
/// async fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
/// ```
///
/// A name the providers reject:
///
/// ```compile_fail
/// /// Add two integers.
/// #[tool_core::tool(name = "math.add")]
/// async fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
/// ```
///
/// An arguments type without a schema (the error underlines `WeatherArgs`):
///
/// ```compile_fail,E0277
/// #[derive(serde::Deserialize)]
/// struct WeatherArgs {
///     city: String,
/// }
///
/// /// Get the weather.
/// #[tool_core::tool]
/// async fn get_weather(#[args] args: WeatherArgs) -> String {
///     args.city
/// }
/// ```
///
/// A return type that is not serializable:
///
/// ```compile_fail,E0277
/// struct Forecast;
///
/// /// Get the weather.
/// #[tool_core::tool]
/// async fn get_weather(city: String) -> Forecast {
///     Forecast
/// }
/// ```
#[cfg(feature = "macros")]
#[cfg_attr(docsrs, doc(cfg(feature = "macros")))]
pub use tool_macros::tool;

/// Turns the `#[tool]` methods of an impl block into tools that share `&self` as their state.
///
/// Put `#[toolbox]` on an inherent `impl` block and `#[tool]` on the methods the model may call;
/// each takes `&self` and otherwise follows the rules of [`tool`](macro@tool) (plain parameters or one typed
/// struct, the same attribute arguments). The block gains
/// `fn tools(self: Arc<Self>) -> Vec<Arc<dyn ExecutableTool>>`, which yields every tool holding
/// the shared state, ready for [`ToolRegistry::register_all`]. Other methods stay as they are,
/// and the tool methods stay callable.
///
/// ```
/// use std::sync::{Arc, Mutex};
///
/// use tool_core::{ToolRegistry, tool, toolbox};
///
/// #[derive(Default)]
/// struct Notebook {
///     notes: Mutex<Vec<String>>,
/// }
///
/// #[toolbox]
/// impl Notebook {
///     /// Write a note.
///     #[tool]
///     async fn write_note(
///         &self,
///         /// The note's text
///         text: String,
///     ) -> usize {
///         let mut notes = self.notes.lock().unwrap();
///         notes.push(text);
///         notes.len()
///     }
///
///     /// Read every note.
///     #[tool(name = "read_notes", read_only)]
///     async fn read(&self) -> Vec<String> {
///         self.notes.lock().unwrap().clone()
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let registry = ToolRegistry::new();
/// let errors = registry.register_all(Arc::new(Notebook::default()).tools());
/// assert!(errors.is_empty());
/// let args = serde_json::from_str(r#"{"text": "buy milk"}"#).unwrap();
/// assert_eq!(registry.execute("write_note", args).await, "1");
/// let args = serde_json::from_str("{}").unwrap();
/// assert_eq!(registry.execute("read_notes", args).await, r#"["buy milk"]"#);
/// # });
/// ```
///
/// - The block must be an inherent impl of a concrete (non-generic) type, and have at least one
///   `#[tool]` method.
/// - The methods are marked with the `tool` attribute itself, so import it beside `toolbox`.
/// - Tool methods take `&self` (use interior mutability for state that changes); `#[context]`
///   is not used there, since `self` is the state.
/// - Two tools of one toolbox cannot share a name (a compile error).
/// - The generated tool types are hidden; the block's type must not define `tools` itself.
#[cfg(feature = "macros")]
#[cfg_attr(docsrs, doc(cfg(feature = "macros")))]
pub use tool_macros::toolbox;

/// The README's Rust snippets, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeSnippets;
