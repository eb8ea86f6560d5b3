//! The enabled tools as one provider list: each tool's fragment in a provider's format, cached
//! per format, and the list shape around them (a JSON array, or Gemini's
//! `{"functionDeclarations": [...]}`). [`ToolList`] is what a model request carries: tools as
//! data, whoever made the list (a registry snapshot is one).

use std::{
    fmt,
    sync::{Arc, OnceLock},
};

use serde::Serialize;
use serde_json::{Value, value::RawValue};

use super::{FormatOptions, Provider, SchemaError, format_tool};
use crate::tool::ChatTool;

/// The tools offered to a model, as the model clients read them: definitions, names, and the
/// whole list in a provider's format as JSON text. A list may compute that text once and share
/// it between requests; a [`RegistrySnapshot`](crate::RegistrySnapshot) does, per snapshot and
/// provider.
///
/// [`RequestTools`](crate::model::RequestTools) holds one, so the model clients take tools as
/// data and never see where they came from.
pub trait ToolList: fmt::Debug + Send + Sync {
    /// The tools' definitions, in order.
    fn definitions(&self) -> Vec<ChatTool>;

    /// The tools' names, in order.
    fn names(&self) -> Vec<&str>;

    /// Whether there are no tools.
    fn is_empty(&self) -> bool;

    /// The tools in `provider`'s format (with the default [`FormatOptions`]), as JSON text ready
    /// to embed in a request body. Tools the provider cannot accept are left out with an error
    /// logged.
    fn provider_json(&self, provider: Provider) -> Arc<RawValue>;
}

/// `tools` in `provider`'s format (with the default [`FormatOptions`]), converted now, as JSON
/// text; tools the provider cannot accept are left out with an error logged. The uncached
/// counterpart of [`ToolList::provider_json`].
pub(crate) fn provider_json(provider: Provider, tools: &[ChatTool]) -> Arc<RawValue> {
    let options = FormatOptions::default();
    let tools: Vec<Value> = tools
        .iter()
        .filter_map(|tool| match format_tool(provider, tool, &options) {
            Ok(value) => Some(value),
            Err(error) => {
                tracing::error!(%error, "tool left out of the request");
                None
            }
        })
        .collect();
    serde_json::value::to_raw_value(&wrap(provider, tools))
        .map_or_else(|_| Arc::from(RawValue::NULL.to_owned()), Arc::from)
}

/// One cache slot per provider format: OpenAI, Ollama, Gemini, Anthropic, OpenAI strict.
const FORMAT_SLOTS: usize = 5;

fn slot_of(provider: Provider, options: &FormatOptions) -> usize {
    match provider {
        Provider::OpenAi if options.strict => 4,
        Provider::OpenAi => 0,
        Provider::Ollama => 1,
        Provider::Gemini => 2,
        Provider::Anthropic => 3,
    }
}

/// The provider's list shape around tools already in its format.
pub(crate) fn wrap(provider: Provider, tools: Vec<Value>) -> Value {
    match provider {
        Provider::Gemini => serde_json::json!({ "functionDeclarations": tools }),
        _ => Value::Array(tools),
    }
}

/// The provider's list around fragments already in its format, as JSON text.
fn assemble(provider: Provider, fragments: &[&RawValue]) -> Arc<RawValue> {
    #[derive(Serialize)]
    struct Gemini<'a> {
        #[serde(rename = "functionDeclarations")]
        function_declarations: &'a [&'a RawValue],
    }
    // Serializing `RawValue`s writes them verbatim, and `to_raw_value` does not parse its output
    // again, so this is one copy of the bytes with no re-validation.
    let assembled = match provider {
        Provider::Gemini => serde_json::value::to_raw_value(&Gemini {
            function_declarations: fragments,
        }),
        _ => serde_json::value::to_raw_value(fragments),
    };
    assembled.map_or_else(|_| Arc::from(RawValue::NULL.to_owned()), Arc::from)
}

/// One tool in a provider's format: the value, and the same as JSON text ready to splice into a
/// request.
pub(crate) type FormatResult = Result<(Arc<Value>, Box<RawValue>), SchemaError>;

/// One tool's definition in each provider format, converted when first asked.
#[derive(Default)]
pub(crate) struct FormatCache {
    formats: [OnceLock<FormatResult>; FORMAT_SLOTS],
}

impl FormatCache {
    /// `definition` in `provider`'s format (with `options`), converted once.
    pub(crate) fn get(
        &self,
        definition: &ChatTool,
        provider: Provider,
        options: &FormatOptions,
    ) -> &FormatResult {
        self.formats[slot_of(provider, options)].get_or_init(|| {
            let value = format_tool(provider, definition, options)?;
            let text = serde_json::value::to_raw_value(&value).map_err(|error| SchemaError {
                tool: definition.name().to_owned(),
                provider,
                reason: error.to_string(),
            })?;
            Ok((Arc::new(value), text))
        })
    }
}

/// A set of tools' whole list in each provider format (default options), assembled once from
/// their cached fragments.
#[derive(Default)]
pub(crate) struct ListCache {
    lists: [OnceLock<Arc<RawValue>>; FORMAT_SLOTS],
}

impl ListCache {
    /// The list for `provider`, assembled from `fragments` on first use.
    pub(crate) fn get<'a>(
        &self,
        provider: Provider,
        fragments: impl FnOnce() -> Vec<&'a RawValue>,
    ) -> Arc<RawValue> {
        self.lists[slot_of(provider, &FormatOptions::default())]
            .get_or_init(|| assemble(provider, &fragments()))
            .clone()
    }
}
