//! Picking a provider client from the environment (documented on [`from_env`]).

use std::sync::Arc;

use super::{
    ChatModel, ProviderError,
    vars::{process_vars, var},
};
use crate::schema::Provider;

/// The model client the environment configures, or `None` when it configures none.
///
/// | variable | meaning |
/// |---|---|
/// | `TOOL_CORE_PROVIDER` | `openai`, `ollama`, `gemini` or `anthropic`: use this one |
/// | `OPENAI_API_KEY`, `OPENAI_BASE_URL`, `OPENAI_MODEL` | OpenAI-compatible Chat Completions |
/// | `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`, `ANTHROPIC_MODEL` | Anthropic Messages |
/// | `GEMINI_API_KEY` (or `GOOGLE_API_KEY`), `GEMINI_BASE_URL`, `GEMINI_MODEL` | Gemini |
/// | `OLLAMA_HOST`, `OLLAMA_MODEL`, `OLLAMA_API_KEY` | Ollama's native API |
///
/// Without `TOOL_CORE_PROVIDER`, the first configured of OpenAI (`OPENAI_API_KEY` or
/// `OPENAI_BASE_URL`), Anthropic, Gemini and Ollama (`OLLAMA_HOST`) is used.
///
/// A configuration that asks for something impossible is an error, not "no provider": a
/// `TOOL_CORE_PROVIDER` that names no provider, a provider this build does not include, or a
/// client that cannot be built.
///
/// ```no_run
/// use tool_core::model;
///
/// match model::from_env() {
///     Ok(Some(model)) => println!("using {} ({})", model.model_name(), model.provider()),
///     Ok(None) => println!("no provider configured"),
///     Err(error) => eprintln!("{error}"),
/// }
/// ```
pub fn from_env() -> Result<Option<Arc<dyn ChatModel>>, ProviderError> {
    from_vars(&process_vars)
}

/// Like [`from_env`] with variables looked up by `vars`; an error says why a provider that was
/// asked for cannot be used.
pub fn from_vars(
    vars: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Arc<dyn ChatModel>>, ProviderError> {
    let chosen = match var(vars, "TOOL_CORE_PROVIDER") {
        Some(name) => Some(
            name.parse::<Provider>()
                .map_err(|error| ProviderError::Config(error.to_string()))?,
        ),
        None => configured(vars),
    };
    match chosen {
        Some(provider) => build(provider, vars).map(Some),
        None => Ok(None),
    }
}

/// The first provider with its key (or host) set.
fn configured(vars: &dyn Fn(&str) -> Option<String>) -> Option<Provider> {
    let set = |name: &str| var(vars, name).is_some();
    if set("OPENAI_API_KEY") || set("OPENAI_BASE_URL") {
        Some(Provider::OpenAi)
    } else if set("ANTHROPIC_API_KEY") {
        Some(Provider::Anthropic)
    } else if set("GEMINI_API_KEY") || set("GOOGLE_API_KEY") {
        Some(Provider::Gemini)
    } else if set("OLLAMA_HOST") {
        Some(Provider::Ollama)
    } else {
        None
    }
}

#[allow(unused_variables, unreachable_code)]
fn build(
    provider: Provider,
    vars: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn ChatModel>, ProviderError> {
    let missing = |feature: &str| {
        ProviderError::Config(format!(
            "the {provider} client is not built in; enable the `{feature}` feature of tool-core"
        ))
    };
    match provider {
        Provider::OpenAi => {
            #[cfg(feature = "openai")]
            return Ok(Arc::new(super::OpenAiClient::new(
                super::OpenAiConfig::from_vars(vars),
            )?));
            Err(missing("openai"))
        }
        Provider::Ollama => {
            #[cfg(feature = "ollama")]
            return Ok(Arc::new(super::OllamaClient::new(
                super::OllamaConfig::from_vars(vars),
            )?));
            Err(missing("ollama"))
        }
        Provider::Gemini => {
            #[cfg(feature = "gemini")]
            return Ok(Arc::new(super::GeminiClient::new(
                super::GeminiConfig::from_vars(vars),
            )?));
            Err(missing("gemini"))
        }
        Provider::Anthropic => {
            #[cfg(feature = "anthropic")]
            return Ok(Arc::new(super::AnthropicClient::new(
                super::AnthropicConfig::from_vars(vars),
            )?));
            Err(missing("anthropic"))
        }
    }
}
