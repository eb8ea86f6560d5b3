//! Tool schemas: the canonical form (what schemars produces: draft 2020-12 with `$defs`) and
//! the per-provider adapters applied when a tool is sent to a model.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::tool::ChatTool;

pub use arguments::drop_optional_nulls;

mod arguments;
mod common;
mod gemini;
mod openai;

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
        tool: name.clone(),
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
