//! Tool schemas: the canonical form (what schemars produces: draft 2020-12 with `$defs`) and
//! the per-provider adapters applied when a tool is sent to a model.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::tool::ChatTool;

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
pub fn format_tool(
    provider: Provider,
    tool: &ChatTool,
    options: &FormatOptions,
) -> Result<Value, SchemaError> {
    let error = |reason: String| SchemaError {
        tool: tool.function.name.clone(),
        provider,
        reason,
    };
    let name = &tool.function.name;
    let description = &tool.function.description;
    match provider {
        Provider::OpenAi | Provider::Ollama => {
            let strict = options.strict && provider == Provider::OpenAi;
            let parameters = if strict {
                openai::strict_parameters(&tool.function.parameters).map_err(error)?
            } else {
                openai::parameters(&tool.function.parameters)
            };
            let mut function = Map::new();
            function.insert("name".into(), json!(name));
            function.insert("description".into(), json!(description));
            function.insert("parameters".into(), parameters);
            if strict {
                function.insert("strict".into(), Value::Bool(true));
            }
            Ok(json!({ "type": "function", "function": function }))
        }
        Provider::Gemini => {
            let parameters = gemini::parameters(name, &tool.function.parameters).map_err(error)?;
            Ok(json!({ "name": name, "description": description, "parameters": parameters }))
        }
        Provider::Anthropic => Ok(json!({
            "name": name,
            "description": description,
            "input_schema": openai::parameters(&tool.function.parameters),
        })),
    }
}
