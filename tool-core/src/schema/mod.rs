//! Tool schemas: the canonical form (what schemars produces: draft 2020-12 with `$defs`) and
//! the per-provider adapters applied when a tool is sent to a model.
//!
//! The canonical schema is what the registry validates arguments against; the adapters only
//! change what a provider is shown. [`format_tool`] converts one tool;
//! [`ToolRegistry::tools_for_provider`](crate::ToolRegistry::tools_for_provider) converts the
//! enabled tools, caching each tool's result.
//!
//! | provider | tool shape | parameters |
//! |---|---|---|
//! | OpenAI, Ollama | `{"type":"function","function":{name, description, parameters}}` | canonical, minus `$schema`, the root `title` and Rust-only numeric formats |
//! | OpenAI strict | same, plus `"strict": true` | closed objects, every property required, optional ones nullable |
//! | Gemini | `{name, description, parameters}` in `{"functionDeclarations":[…]}` | the OpenAPI 3.0 subset of Gemini's `Schema` object |
//! | Anthropic | `{name, description, input_schema}` | canonical, minus `$schema`, the root `title` and Rust-only numeric formats |
//! | Anthropic structured output (`output_config.format`, not a tool) | `{type: "json_schema", schema}` | closed objects; numeric bounds, string lengths and patterns, array bounds other than `minItems` 0 or 1 and unlisted formats become description notes; `oneOf` becomes `anyOf` |
//!
//! **Rust-only formats.** schemars writes `format: int64`, `uint32`, `double`, `uint8` and the
//! like for Rust's number types; strict validators refuse formats they do not know, so every
//! adapter (and the MCP server) removes them and keeps the bounds they imply as
//! `minimum`/`maximum` (Gemini keeps `int32`, `int64`, `float` and `double`, which its schema
//! defines). Standard formats such as `date-time`, `uri` or `email` stay.
//!
//! **Gemini.** References are inlined (a recursive type is an error), `null` types and null
//! branches become `nullable`, `oneOf` becomes `anyOf`, `allOf` is merged, `const` becomes a
//! one-value `enum`, and only the fields of Gemini's `Schema` object remain. Gemini enums hold
//! strings only; an enum of numbers or booleans keeps its type and its values move into the
//! description (`"must be one of: 1, 2, 3"`), since turning `3` into `"3"` would make the model
//! send strings the tool rejects. Exclusive bounds on integers become inclusive ones; other
//! constraints Gemini lacks (`multipleOf`, map value types, `uniqueItems`, string formats other
//! than `date-time`, …) become notes in the description such as `"(must be > 0.5)"`.
//!
//! **OpenAI strict.** Objects get `additionalProperties: false` and list every property in
//! `required`; optional properties become nullable, and
//! the registry, before validating, turns the `null` a
//! model then sends back into "left out". `$defs` and `$ref` stay, `oneOf` becomes `anyOf`,
//! `default` and the constraints strict mode rejects become description notes. Maps,
//! free-form objects, values of any type, tuples, `allOf` of several schemas and schemas over
//! OpenAI's size limits are a [`SchemaError`] that names the place.
//!
//! **Nothing is dropped silently**: every keyword an adapter rewrites, moves or removes is
//! logged with `tracing` (target `tool_core::schema::…`, fields `tool`, `path`, `keyword`), at
//! `debug` when its meaning is kept (as another keyword or a note) or has none for the model,
//! at `warn` when the keyword is not one the adapter knows.
//!
//! **Stable output**: keys are sorted at every level, so converting a tool twice gives the
//! same bytes and provider prompt caches hit.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::tool::ChatTool;

#[cfg(feature = "anthropic")]
pub(crate) use anthropic::output_schema as anthropic_output_schema;
pub(crate) use arguments::OptionalNulls;
#[cfg(feature = "mcp")]
pub(crate) use common::drop_rust_formats;
pub(crate) use common::excerpt;
pub(crate) use lenient::coerce_logged;
pub use lenient::{Coercion, coerce_arguments};
pub use list::ToolList;
pub(crate) use residue::{Residue, residue};
pub(crate) use unnamed_keys::takes_unnamed_keys;

#[cfg(feature = "anthropic")]
mod anthropic;
mod arguments;
mod common;
mod gemini;
mod lenient;
pub(crate) mod list;
mod openai;
mod residue;
mod unnamed_keys;

/// The wire shape tools are converted to. Parse it from `openai`, `ollama`, `gemini` or
/// `anthropic` in any case.
///
/// ```
/// use tool_core::Provider;
///
/// assert_eq!("Gemini".parse::<Provider>().unwrap(), Provider::Gemini);
/// assert!("cohere".parse::<Provider>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// OpenAI Chat Completions (and every compatible server).
    #[serde(rename = "openai")]
    OpenAi,
    /// Ollama's native API (OpenAI's tool shape).
    Ollama,
    /// Google Gemini `functionDeclarations`.
    Gemini,
    /// Anthropic Messages `{name, description, input_schema}`.
    Anthropic,
}

impl Provider {
    /// Every provider format.
    pub const ALL: [Provider; 4] = [
        Provider::OpenAi,
        Provider::Ollama,
        Provider::Gemini,
        Provider::Anthropic,
    ];

    /// The lowercase name: `openai`, `ollama`, `gemini` or `anthropic`.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Ollama => "ollama",
            Provider::Gemini => "gemini",
            Provider::Anthropic => "anthropic",
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A provider name that is not one of `openai`, `ollama`, `gemini`, `anthropic`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unsupported provider `{name}`; expected one of: openai, ollama, gemini, anthropic")]
pub struct UnknownProvider {
    /// The name that was given.
    pub name: String,
}

impl FromStr for Provider {
    type Err = UnknownProvider;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Provider::ALL
            .into_iter()
            .find(|provider| provider.as_str().eq_ignore_ascii_case(name.trim()))
            .ok_or_else(|| UnknownProvider {
                name: name.to_owned(),
            })
    }
}

/// Options of the provider adapters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FormatOptions {
    /// OpenAI only: produce schemas that OpenAI's `strict: true` accepts, and set `strict`.
    pub strict: bool,
}

impl FormatOptions {
    /// The defaults (not strict).
    pub fn new() -> Self {
        Self::default()
    }

    /// Turns OpenAI strict mode on or off.
    #[must_use]
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }
}

/// A tool whose schema a provider cannot accept.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("tool `{tool}` cannot be sent to {provider}: {reason}")]
#[non_exhaustive]
pub struct SchemaError {
    /// The tool's name.
    pub tool: String,
    /// The provider format.
    pub provider: Provider,
    /// Why.
    pub reason: String,
}

/// The tools a provider cannot accept: one [`SchemaError`] per tool, in registration order.
/// [`ToolRegistry::check`](crate::ToolRegistry::check) and
/// [`RegistrySnapshot::check`](crate::RegistrySnapshot::check) return it, so a program fails
/// with the tools' names and reasons instead of sending a request without them.
///
/// Displayed as the tools' errors joined by `; `.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
#[non_exhaustive]
pub struct ToolCheckError {
    /// Each tool the provider cannot accept, and why; never empty.
    pub errors: Vec<SchemaError>,
}

/// Converts one tool to a provider's format.
///
/// - [`Provider::OpenAi`] and [`Provider::Ollama`]: `{"type":"function","function":{name,
///   description, parameters}}` with the canonical schema minus `$schema` and the root
///   `title`. With [`FormatOptions::strict`], OpenAI gets `"strict": true` and a schema its
///   structured outputs accept (every object closed, every property required, optional ones
///   nullable), or a [`SchemaError`] saying why the tool cannot be strict (a map, a value of
///   any type, a tuple, …). Ollama ignores `strict`.
/// - [`Provider::Gemini`]: one function declaration `{name, description, parameters}` whose
///   parameters are the OpenAPI 3.0 subset Gemini accepts: references inlined, nullable
///   instead of `null` types, `anyOf` instead of `oneOf`, and every keyword Gemini does not
///   know removed or moved into the description. A recursive type is a [`SchemaError`].
/// - [`Provider::Anthropic`]: `{name, description, input_schema}`.
///
/// Keys come out sorted at every level, so two conversions of a tool are byte-identical and
/// provider prompt caches hit.
///
/// ```
/// use serde_json::json;
/// use tool_core::{ChatTool, FormatOptions, Provider, schema::format_tool};
///
/// let tool = ChatTool::new(
///     "get_weather",
///     "Current weather in a city.",
///     json!({
///         "type": "object",
///         "properties": {
///             "city": { "type": "string" },
///             "days": { "type": ["integer", "null"], "exclusiveMinimum": 0 }
///         },
///         "required": ["city"]
///     }),
/// );
/// let gemini = format_tool(Provider::Gemini, &tool, &FormatOptions::new()).unwrap();
/// assert_eq!(
///     gemini["parameters"]["properties"]["days"],
///     json!({ "type": "integer", "nullable": true, "minimum": 1 })
/// );
///
/// let strict = format_tool(Provider::OpenAi, &tool, &FormatOptions::new().strict(true)).unwrap();
/// assert_eq!(strict["function"]["strict"], true);
/// assert_eq!(strict["function"]["parameters"]["required"], json!(["city", "days"]));
/// ```
pub fn format_tool(
    provider: Provider,
    tool: &ChatTool,
    options: &FormatOptions,
) -> Result<Value, SchemaError> {
    let name = &tool.function.name;
    let error = |reason: String| SchemaError {
        tool: name.to_string(),
        provider,
        reason,
    };
    let description = &tool.function.description;
    let schema = &*tool.function.parameters;
    let formatted = match provider {
        Provider::OpenAi | Provider::Ollama => {
            let strict = options.strict && provider == Provider::OpenAi;
            let parameters = if strict {
                openai::strict_parameters(name, schema).map_err(error)?
            } else {
                openai::parameters(schema)
            };
            let mut function = Map::new();
            function.insert("name".into(), json!(name));
            function.insert("description".into(), json!(description));
            function.insert("parameters".into(), parameters);
            if strict {
                function.insert("strict".into(), Value::Bool(true));
            }
            json!({ "type": "function", "function": function })
        }
        Provider::Gemini => {
            let parameters = gemini::parameters(name, schema).map_err(error)?;
            json!({ "name": name, "description": description, "parameters": parameters })
        }
        Provider::Anthropic => json!({
            "name": name,
            "description": description,
            "input_schema": openai::parameters(schema),
        }),
    };
    Ok(common::sorted(formatted))
}

/// The canonical JSON Schema of `T` (draft 2020-12, `$defs`), with an object root: the schema
/// `#[tool]` derives for a typed arguments struct, and the form the adapters convert from.
pub fn schema_for<T: schemars::JsonSchema>() -> Value {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    object_root(schema.to_value())
}

fn object_root(mut value: Value) -> Value {
    if let Value::Object(root) = &mut value {
        if !root.contains_key("type") {
            root.insert("type".to_owned(), Value::String("object".to_owned()));
        }
    }
    value
}

/// Schemas the tests of more than one schema module use.
#[cfg(test)]
mod fixtures {
    use serde_json::{Value, json};

    /// A recursive `Node`: a `weight` (default 1), `children` of its own type, a reference
    /// that only leads to itself (`loop`) and one to nothing (`gone`).
    pub(super) fn recursive_node() -> Value {
        json!({
            "$ref": "#/$defs/Node",
            "$defs": {
                "Node": {
                    "type": "object",
                    "properties": {
                        "weight": { "type": "integer", "default": 1 },
                        "children": { "type": "array", "items": { "$ref": "#/$defs/Node" } },
                        "loop": { "$ref": "#/$defs/Loop" },
                        "gone": { "$ref": "#/$defs/Missing" }
                    }
                },
                "Loop": { "$ref": "#/$defs/Loop" }
            }
        })
    }
}
