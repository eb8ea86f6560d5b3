//! [`ResponseFormat`]: the form a request asks the model's text answer to take (structured
//! output), neutral across wires; each client writes it in its own form.

use serde_json::Value;

/// The form a request asks the model's text answer to take.
///
/// Each client writes it in its wire's form:
///
/// | client | [`JsonObject`](Self::JsonObject) | [`JsonSchema`](Self::JsonSchema) |
/// |---|---|---|
/// | OpenAI Chat Completions | `response_format: {"type": "json_object"}` | `response_format: {"type": "json_schema", "json_schema": {name, schema, strict}}` |
/// | OpenAI Responses | `text: {"format": {"type": "json_object"}}` | `text: {"format": {"type": "json_schema", name, schema, strict}}` |
/// | Gemini | `generationConfig.responseMimeType: "application/json"` | the same, and `generationConfig.responseJsonSchema` |
/// | Ollama | `format: "json"` | `format: <schema>` |
/// | Anthropic | nothing (the Messages API has no JSON mode) | with `AnthropicConfig::structured_outputs` on, `output_config: {"format": {"type": "json_schema", schema}}`; else nothing |
///
/// Anthropic's schema is adapted to what its structured outputs accept: every object closed,
/// and the keywords it refuses (numeric bounds, string lengths and patterns, array bounds other
/// than `minItems` 0 or 1, unlisted formats) moved into the description as notes.
///
/// OpenAI's `strict` is `true` when the schema can be made strict (every object closed, every
/// property required, optional ones nullable: the adapter of
/// [`FormatOptions::strict`](crate::schema::FormatOptions::strict)), else the schema goes as it is with `strict: false`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ResponseFormat {
    /// A JSON value, of no particular schema (the provider's JSON mode).
    JsonObject,
    /// A JSON value valid against a schema.
    JsonSchema {
        /// A name for the schema (OpenAI requires one: letters, digits, `_` and `-`).
        name: String,
        /// The JSON Schema; its root should be an object's (OpenAI requires it).
        schema: Value,
    },
}

impl ResponseFormat {
    /// A JSON value valid against `schema`, named `name`.
    pub fn json_schema(name: impl Into<String>, schema: Value) -> Self {
        Self::JsonSchema {
            name: name.into(),
            schema,
        }
    }

    /// The schema as OpenAI's structured outputs take it, and whether it is strict: the
    /// strict form when the adapter can make one, else the schema without `$schema` and
    /// `title`.
    #[cfg(feature = "openai")]
    pub(crate) fn openai_schema(name: &str, schema: &Value) -> (Value, bool) {
        use crate::{
            schema::{FormatOptions, Provider, format_tool},
            tool::ChatTool,
        };

        let tool = ChatTool::new(name, "", schema.clone());
        let strict = format_tool(Provider::OpenAi, &tool, &FormatOptions::new().strict(true));
        let (formatted, strict) = match strict {
            Ok(formatted) => (formatted, true),
            Err(_) => (
                format_tool(Provider::OpenAi, &tool, &FormatOptions::new()).unwrap_or_else(
                    |_| serde_json::json!({ "function": { "parameters": schema } }),
                ),
                false,
            ),
        };
        let parameters = formatted
            .pointer("/function/parameters")
            .cloned()
            .unwrap_or_else(|| schema.clone());
        (parameters, strict)
    }
}
