//! Typed tools for large language models.
//!
//! Put [`#[tool]`](macro@tool) on an `async fn` and get a tool a model can call: a name, a
//! description from the doc comment, a JSON Schema derived from the arguments, and the
//! conversion of the model's untyped JSON into those arguments. Register tools in a
//! [`ToolRegistry`] (enable, disable, list, convert to each provider's format, execute without
//! ever crashing the caller) and hand the registry to an [`Agent`] that runs the tool-call loop
//! against real model providers.
//!
//! ```
//! use tool_core::{ToolRegistry, tool};
//!
//! /// Add two integers.
//! #[tool]
//! async fn add(
//!     /// The first addend
//!     a: i64,
//!     /// The second addend
//!     b: i64,
//! ) -> i64 {
//!     a + b
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let registry = ToolRegistry::new();
//! registry.register(Add).unwrap(); // `Add`: the type `#[tool]` generated beside `add`
//!
//! // A model's call: the tool's name and its arguments as JSON text.
//! assert_eq!(registry.execute_text("add", r#"{"a": 2, "b": 3}"#).await, "5");
//! assert_eq!(
//!     registry.execute_text("add", r#"{"a": "two", "b": 3}"#).await,
//!     r#"Error: invalid arguments for add: at /a: expected an integer, got "two""#
//! );
//! # });
//! ```
//!
//! Where to go next:
//!
//! - [`tool`](macro@tool) is the reference of the attribute: argument forms, the values a tool
//!   can receive from its call ([`CallContext`], [`Deps`]), return types, every attribute
//!   argument. [`toolbox`] makes the methods of one state into tools.
//! - [`ExecutableTool`] is what a tool is; implement it by hand for a tool whose definition is
//!   only known at run time.
//! - [`ToolRegistry`] holds the tools; [`Provider`] and [`format_tool`] give their definitions
//!   in the OpenAI, Ollama, Gemini and Anthropic shapes.
//! - [`Agent`] runs the tool-call loop over a [`ChatModel`]: the provider clients and the
//!   offline [`TestModel`](model::TestModel) and [`ScriptedModel`](model::ScriptedModel) are
//!   in [`model`]; approval, retries and events are in [`agent`].
//! - [`config`] loads tools from JSON or TOML files; [`session`] and [`store`] keep per-chat
//!   tool switches, preferences and saved conversations.
//! - `mcp` serves a registry over the Model Context Protocol and brings an MCP server's tools
//!   into one (the opt-in `mcp` and `mcp-client` features).
//!
//! # Modules, bottom floor first
//!
//! Each module uses only those listed before it; a test keeps it so, and `ARCHITECTURE.md`
//! says what each must not depend on. A tool call travels the other way: from a model's
//! answer, through the agent, the registry and execution, down to the tool.
//!
//! | module | holds |
//! |---|---|
//! | [`message`] | the conversation's parts in no provider's shape: [`Message`], [`ToolCall`], [`Usage`](message::Usage), [`FinishReason`](message::FinishReason); it uses nothing else of the crate |
//! | [`context`] | the agent's live state a tool may read: [`ToolContext`] and the [`Conversation`] |
//! | [`call`] | what one call gives a tool: [`CallContext`], the application's [`Deps`], cancellation, progress |
//! | [`tool`](mod@tool) | what a tool is: [`ExecutableTool`], [`ChatTool`], [`ToolMetadata`], [`ToolError`] |
//! | [`schema`] | JSON Schema: the canonical form, the provider formats ([`Provider`], [`format_tool`]), lenient arguments, and [`ToolList`](schema::ToolList), tools as a model request carries them |
//! | [`execute`] | one call: its arguments read and validated, the tool run under a panic guard and a timeout, the exact error texts |
//! | [`registry`] | the tools: [`ToolRegistry`], its checks, a [`RegistrySnapshot`] per agent step, per-session [`ToolToggles`] |
//! | [`builtin`] | `read_file`, `write_file`, `save_session_context` and [`create_default_tool_registry`] |
//! | [`config`] | tools defined in JSON or TOML files |
//! | [`session`], [`store`] | per-chat tool switches, preferences and saved conversations (files, SQLite, PostgreSQL) |
//! | [`model`] | [`ChatModel`] and its clients: four providers over shared HTTP plumbing, the offline test and scripted models; the tools come as data, never as the registry |
//! | `otel` | spans and metrics that follow the OpenTelemetry GenAI and MCP conventions (the opt-in `otel` feature) |
//! | [`agent`] | the tool-call loop: [`Agent`], its events, approvals and retries |
//! | `mcp` | the MCP server, and the client that brings an MCP server's tools into a registry |
//! | `gateway` | one MCP endpoint in front of many MCP servers, with each user's own tool switches |

#![cfg_attr(docsrs, feature(doc_cfg))]
// Some docs link to the stores of opt-in features (`FilePreferenceStore`, `SqlStore`); those
// links resolve where every feature is documented (docs.rs, `cargo doc --workspace` in CI) and
// are plain text in a build without them.
#![cfg_attr(
    not(all(feature = "file-store", any(feature = "sqlite", feature = "postgres"))),
    allow(rustdoc::broken_intra_doc_links)
)]
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
#[cfg(feature = "gateway")]
#[cfg_attr(docsrs, doc(cfg(feature = "gateway")))]
pub mod gateway;
#[cfg(feature = "http-server")]
#[cfg_attr(docsrs, doc(cfg(feature = "http-server")))]
pub mod http_server;
#[cfg(feature = "mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp")))]
pub mod mcp;
pub mod message;
pub mod model;
#[cfg(feature = "otel")]
#[cfg_attr(docsrs, doc(cfg(feature = "otel")))]
pub mod otel;
pub mod registry;
pub mod schema;
pub mod search;
mod secrets;
pub mod session;
pub mod store;
#[cfg(any(feature = "http", feature = "mcp-client"))]
mod tls;
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
                crate::model::wire::client::decode_stream::<$wire, _, _, _>(body)
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
/// The `futures` crate tool-core's streams are built on, for [`StreamExt`](futures::StreamExt)
/// and friends without a `futures` dependency of your own:
/// `use tool_core::futures::StreamExt;` then `while let Some(event) = events.next().await`.
pub use futures;
pub use message::{Message, ToolCall};
pub use model::{ChatModel, ProviderError};
pub use registry::{
    RegistryError, RegistryEvent, RegistryOptions, RegistrySnapshot, ToolInfo, ToolRegistry,
    ToolToggles,
};
pub use schema::{
    FormatOptions, Provider, SchemaError, ToolCheckError, UnknownProvider, format_tool,
};
/// The `schemars` crate tool-core derives schemas with, so that a tool's `#[args]` struct or
/// output type derives `JsonSchema` without a `schemars` dependency of your own; see
/// [`tool`](macro@tool) for the one line the derive then needs.
pub use schemars;
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
/// # only for an `#[args]` struct or a result with an output schema:
/// serde = { version = "1", features = ["derive"] }
/// ```
///
/// No `schemars` dependency is needed: an `#[args]` struct or an output type derives
/// `JsonSchema` through tool-core's re-export, [`tool_core::schemars`](crate::schemars). Bring
/// it into scope with `use tool_core::schemars;` (the derive's output names `schemars::…`, which
/// then resolves to it), or put `#[schemars(crate = "tool_core::schemars")]` on the type.
///
/// # Example
///
/// ```
/// use tool_core::{ToolRegistry, schemars, tool};
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
/// assert_eq!(registry.execute_text("add", r#"{"a": 2, "b": 3}"#).await, "5");
/// assert_eq!(
///     registry.execute_text("get_weather", r#"{"city": "Paris"}"#).await,
///     "sunny in Paris"
/// );
/// assert_eq!(
///     registry.execute_text("get_weather", r#"{"city": 42}"#).await,
///     "Error: invalid arguments for get_weather: at /city: expected a string, got 42"
/// );
///
/// // The functions stay callable, so they can be unit tested as they are.
/// assert_eq!(add(2, 3).await, 5);
/// # });
/// ```
///
/// # Behaviour
///
/// - **The generated type** has the function's visibility and docs; without a `#[context]` it
///   is a unit struct (`Clone`, `Copy`, `Debug`, `Default`). It names only `::tool_core` paths,
///   so a `struct Result;` in scope does not break it. The function itself is unchanged.
///   The type is defined in a hidden module beside the function (`__tool_get_weather`) and
///   brought in by a glob import, so compiler messages name it `__tool_get_weather::GetWeather`;
///   a type of the same name already in scope is one error that asks for `rename_struct`, and
///   one another glob import brings in (`use weather::*;` with a `weather::GetWeather`) is an
///   "is ambiguous" error on the function's name.
/// - **Name**: the function's name (without `r#`), or `name = "..."`; checked at compile time
///   against `^[a-zA-Z0-9_-]{1,64}$`.
/// - **Description**: the doc comment, lines joined with newlines and trimmed;
///   `#[doc = include_str!("..")]` works; or `description = "..."`. A tool without one does not
///   compile.
/// - **Arguments** come from the parameters (see [Parameters](#parameters)): plain parameters
///   are gathered into a hidden struct deriving `Deserialize` and `JsonSchema` through
///   tool-core's own serde and schemars (so that form needs no other dependency); an `#[args]`
///   parameter's type is the arguments struct itself; with neither, the schema is an empty
///   object schema and the arguments are ignored.
/// - **Schema**: derived by schemars, built once per tool type and cached; its root is an
///   object. `Option<T>` and `#[serde(default)]` fields are not required, by the same rule for
///   the schema and for deserialization. Unknown extra arguments are ignored unless the type
///   denies them (`#[serde(deny_unknown_fields)]`).
/// - **Narrowing**: the model's argument text is read straight into the typed arguments
///   ([`ToolRegistry::execute_text`], and every call an agent makes), and a [`JsonObject`] is
///   moved into the deserializer, not cloned. A bad argument is an error the model can act on:
///   `invalid arguments for get_weather: at /city: expected a string, got 42`, or `missing
///   required argument 'city'`.
/// - **Result**: see [Return types](#return-types). A body with no `.await` runs at once, with
///   no boxed future.
/// - **Metadata**: the attribute's arguments (see [Attribute arguments](#attribute-arguments))
///   become the tool's [`ToolMetadata`], with the output schema of the return type.
/// - **Errors** are spanned on the offending tokens and all shown at once; the function itself
///   is still emitted, and so is a stub of the generated type implementing [`ExecutableTool`],
///   so neither the function's callers nor the type's users fail in a cascade. A syntax error
///   in the function is left to rustc, which reports it once.
///
/// # Parameters
///
/// Each parameter is one of these kinds, told apart by a marker or by its type, never by its
/// name:
///
/// | parameter | kind | what it receives |
/// |---|---|---|
/// | `city: String` | plain | one argument of the model; the parameter's doc comment is its description, an `Option<T>` is optional, and `#[serde(...)]` / `#[schemars(...)]` on it pass through (`default`, `rename`, `range`, ...) |
/// | `#[args] request: WeatherArgs` | `#[args]` | the model's whole argument object, as one type implementing `Deserialize` and `JsonSchema` whose field docs describe the arguments; the tool takes no other argument of the model. Only the marker selects this: an unmarked `args: String` is a plain argument named `args` |
/// | `#[context] notes: &Notes`, `#[context] db: Arc<Db>` | `#[context]` | a value the generated type holds, given to its constructor (`SaveNote::new(value)`, `T` for a `&T` parameter) and never in the schema; a `&T` is lent to each call, an owned value is cloned for each call; it must be `Send + Sync + 'static` |
/// | `call: &CallContext` | from the call | the call being served: [`call_id`](CallContext::call_id), tool name, step and turn, the conversation so far, [`cancellation`](CallContext::cancellation) and [`report_progress`](CallContext::report_progress) |
/// | `deps: &Deps` | from the call | the application's typed values for this call ([`AgentOptions::deps`], `TurnOptions::deps`, or [`CallContext::with_deps`]); never in a schema |
///
/// `&CallContext` and `&Deps` are recognised by their type (through a trait, so an alias or a
/// full path works): any other `&T` that is neither `#[context]` nor `#[args]` is a compile
/// error naming `T`. A tool that reads its call is given it by
/// [`ExecutableTool::execute_with`] (the agent, an MCP server and
/// [`ToolRegistry::execute_with`] call that); called through plain
/// [`execute`](ExecutableTool::execute) it gets an empty context, with no dependencies.
///
/// ```
/// use std::sync::{Arc, Mutex};
///
/// use tool_core::{CallContext, Deps, ToolError, ToolRegistry, tool};
///
/// /// The application's notes, shared with the tool.
/// #[derive(Default)]
/// struct Notes(Mutex<Vec<String>>);
///
/// /// Who the chat belongs to: a per-call value of the application.
/// struct User(String);
///
/// /// Save a note for the user of this chat.
/// #[tool(needs_approval)]
/// async fn save_note(
///     #[context] notes: Arc<Notes>,
///     call: &CallContext,
///     deps: &Deps,
///     /// The note's text
///     text: String,
/// ) -> Result<String, ToolError> {
///     let user: &User = deps.get().ok_or("no user for this call")?;
///     notes.0.lock().unwrap().push(format!("{}: {text}", user.0));
///     Ok(format!("saved (call {})", call.call_id()))
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let notes = Arc::new(Notes::default());
/// let registry = ToolRegistry::new();
/// registry.register(SaveNote::new(notes.clone())).unwrap();
///
/// let call = CallContext::new("call_1", "save_note")
///     .with_deps(Deps::new().with(User("ada".into())));
/// let args = serde_json::from_str(r#"{"text": "buy milk"}"#).unwrap();
/// assert_eq!(
///     registry.execute_with("save_note", args, call).await,
///     "saved (call call_1)"
/// );
/// assert_eq!(*notes.0.lock().unwrap(), ["ada: buy milk"]);
///
/// // Without the application's `User`, the tool's error reaches the model.
/// assert_eq!(
///     registry.execute_text("save_note", r#"{"text": "x"}"#).await,
///     "Error executing save_note: no user for this call"
/// );
/// # });
/// ```
///
/// # Return types
///
/// - `T` or `Result<T, E>` (also through aliases such as `io::Result<T>`), where `T` is
///   `String`, `&'static str`, a number, `bool`, `()`, `serde_json::Value` or any `Serialize`
///   type, and `E: Display`.
/// - A string (or anything serializing to one) is returned as is; any other value as JSON text.
/// - The error's `Display` text becomes the tool's error, which the model reads as
///   `Error executing {name}: {text}`. A [`ToolError`] is kept as it is, so
///   [`ToolError::retry`] asks the model to try again instead of failing.
/// - **Output schema**: when `T` (or the `Result`'s success type) also implements
///   `JsonSchema` and its schema is an object, the tool's metadata carries it
///   ([`ToolMetadata::output_schema`]); an MCP server lists it as the tool's `outputSchema`
///   and sends each result as `structuredContent` beside the text. Strings, numbers, `bool`
///   and `()` never have one.
///
/// ```
/// use tool_core::{ExecutableTool, ToolRegistry, schemars, tool};
///
/// /// A forecast.
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Forecast {
///     /// Degrees Celsius.
///     temperature: f64,
///     summary: String,
/// }
///
/// /// Get the forecast for a city.
/// #[tool]
/// async fn get_forecast(city: String) -> Result<Forecast, std::io::Error> {
///     Ok(Forecast { temperature: 21.5, summary: format!("sunny in {city}") })
/// }
///
/// let schema = GetForecast.metadata().output_schema.unwrap();
/// assert_eq!(schema["type"], "object");
/// assert_eq!(schema["properties"]["temperature"]["type"], "number");
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let registry = ToolRegistry::new();
/// registry.register(GetForecast).unwrap();
/// assert_eq!(
///     registry.execute_text("get_forecast", r#"{"city": "Paris"}"#).await,
///     r#"{"temperature":21.5,"summary":"sunny in Paris"}"#
/// );
/// # });
/// ```
///
/// # Attribute arguments
///
/// | argument | value | effect |
/// |---|---|---|
/// | `name` | `"get_weather"` | the tool's name (default: the function's name) |
/// | `description` | `"..."`, `include_str!("..")` or `concat!(..)` | the description (default: the doc comment) |
/// | `rename_struct` | `"WeatherTool"` | the generated type's name (default: PascalCase name) |
/// | `title` | `"Get the weather"` | [`ToolMetadata::title`] |
/// | `category` | `"weather"` | [`ToolMetadata::category`] |
/// | `icon` | `"https://..."` | [`ToolMetadata::icon`] |
/// | `enabled` | `= false` | registered disabled ([`ToolMetadata::default_enabled`]) |
/// | `read_only`, `destructive`, `idempotent`, `open_world` | bare, or `= true`/`= false` | [`ToolHints`], MCP's tool annotations; an [`ApprovalPolicy`](agent::ApprovalPolicy) can ask before every `destructive` tool |
/// | `sequential` | bare, or `= true`/`= false` | [`ToolMetadata::sequential`]: an agent runs its calls alone |
/// | `needs_approval` | bare, or `= true`/`= false` | [`ToolMetadata::needs_approval`]: an agent asks the application before each call |
/// | `max_retries` | `= 3` (a whole number) | [`ToolMetadata::max_retries`]: steps in a row in which a call of the tool may fail (invalid arguments, [`ToolError::retry`]) in one turn, a step counting once however many of its calls failed (default: [`AgentOptions::max_tool_retries`]) |
/// | `timeout` | `"500ms"`, `"30s"`, `"5m"`, `"1h"` | [`ToolMetadata::timeout`] (default: the registry's) |
/// | `lenient` | bare, or `= true`/`= false` | [`ToolMetadata::lenient_arguments`]: `"30"` read as `30`, a stringified object as the object, … (`false` keeps the tool strict in a lenient registry) |
/// | `defer_loading` | bare, or `= true`/`= false` | [`ToolMetadata::defer_loading`]: an agent leaves the definition out of requests until a search loads it |
///
/// An unknown or repeated argument is a compile error (a misspelt one names the closest
/// argument). Parameter attributes: `#[context]`, `#[args]` (neither takes arguments), docs,
/// `#[serde(...)]` and `#[schemars(...)]`; any other attribute stays on the function's
/// parameter.
///
/// ```
/// use std::time::Duration;
///
/// use tool_core::{ExecutableTool, tool};
///
/// /// Delete a note.
/// #[tool(
///     name = "delete_note",
///     title = "Delete a note",
///     category = "notes",
///     icon = "https://example.com/trash.svg",
///     destructive,
///     needs_approval,
///     max_retries = 1,
///     timeout = "5s",
///     sequential,
///     lenient = false,
///     defer_loading,
///     enabled = false,
/// )]
/// async fn remove(title: String) -> String {
///     format!("deleted {title}")
/// }
///
/// let metadata = Remove.metadata();
/// assert_eq!(Remove.name(), "delete_note");
/// assert_eq!(metadata.title.as_deref(), Some("Delete a note"));
/// assert_eq!(metadata.hints.destructive, Some(true));
/// assert!(metadata.needs_approval && metadata.sequential && !metadata.default_enabled);
/// assert_eq!(metadata.max_retries, Some(1));
/// assert_eq!(metadata.timeout, Some(Duration::from_secs(5)));
/// assert_eq!(metadata.lenient_arguments, Some(false));
/// assert!(metadata.defer_loading);
/// ```
///
/// # Limitations
///
/// - The function must be `async`, and not generic, `const`, `unsafe` or `extern`; it cannot
///   return `impl Trait`.
/// - Arguments of the model are plain names with owned, concrete types (no patterns, no
///   `impl Trait`, no `&str`: use `String`); the only borrowed parameters are `&CallContext`,
///   `&Deps` and a `&T` `#[context]`, never `&mut`.
/// - At most one `#[context]` and one `#[args]` parameter, never both on one parameter; an
///   `#[args]` tool takes no other argument of the model. Several values of state go in one
///   struct, or in a [`toolbox`], where `&self` is the state and `#[context]` is not used.
/// - Which return types are `Result`s is decided by type, so a `Result` whose error is not
///   `Display` is rejected rather than serialized; a return type written with `Self` or
///   `impl Trait` gets no output schema.
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
/// A misspelt attribute argument (the error suggests `category`):
///
/// ```compile_fail
/// /// Add two integers.
/// #[tool_core::tool(categroy = "math")]
/// async fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
/// ```
///
/// A borrowed argument (the error underlines `str` and says to take a `String`):
///
/// ```compile_fail,E0277
/// /// Shout a text.
/// #[tool_core::tool]
/// async fn shout(text: &str) -> String {
///     text.to_uppercase()
/// }
/// ```
///
/// An `#[args]` struct beside another argument of the model:
///
/// ```compile_fail
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct WeatherArgs {
///     city: String,
/// }
///
/// /// Get the weather.
/// #[tool_core::tool]
/// async fn get_weather(#[args] args: WeatherArgs, units: String) -> String {
///     format!("{} in {units}", args.city)
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
///
/// An error type that is not `Display`:
///
/// ```compile_fail,E0277
/// #[derive(Debug)]
/// struct NoForecast;
///
/// /// Get the weather.
/// #[tool_core::tool]
/// async fn get_weather(city: String) -> Result<String, NoForecast> {
///     Err(NoForecast)
/// }
/// ```
#[cfg(feature = "macros")]
#[cfg_attr(docsrs, doc(cfg(feature = "macros")))]
pub use tool_core_macros::tool;

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
///   is not used there, since `self` is the state. `&CallContext` and `&Deps` parameters work
///   as in a free function.
/// - Two tools of one toolbox cannot share a name (a compile error).
/// - The generated tool types are hidden; the block's type must not define `tools` itself.
#[cfg(feature = "macros")]
#[cfg_attr(docsrs, doc(cfg(feature = "macros")))]
pub use tool_core_macros::toolbox;

/// The README's Rust snippets, compiled and run as doc tests (with the features they use, which
/// `cargo test --workspace` turns on through the tests package).
#[cfg(all(
    doctest,
    feature = "macros",
    feature = "openai",
    feature = "mcp-client",
    feature = "file-store",
    feature = "toml",
    feature = "otel"
))]
#[doc = include_str!("../../README.md")]
struct ReadmeSnippets;
