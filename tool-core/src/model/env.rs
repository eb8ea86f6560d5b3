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
/// | `OPENAI_API_KEY`, `OPENAI_BASE_URL`, `OPENAI_MODEL` | OpenAI: the Responses API, or an OpenAI-compatible server's Chat Completions |
/// | `TOOL_CORE_OPENAI_API` | `responses` or `chat-completions`: which OpenAI API to speak |
/// | `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`, `ANTHROPIC_MODEL` | Anthropic Messages |
/// | `GEMINI_API_KEY` (or `GOOGLE_API_KEY`), `GEMINI_BASE_URL`, `GEMINI_MODEL` | Gemini |
/// | `OLLAMA_HOST`, `OLLAMA_MODEL`, `OLLAMA_API_KEY` | Ollama's native API |
///
/// Without `TOOL_CORE_PROVIDER`, the first configured of OpenAI (`OPENAI_API_KEY` or
/// `OPENAI_BASE_URL`), Anthropic, Gemini and Ollama (`OLLAMA_HOST`) is used.
///
/// OpenAI's own endpoint (no `OPENAI_BASE_URL`, or one on `api.openai.com`) is spoken to through
/// the Responses API ([`ResponsesClient`](super::ResponsesClient)); any other base URL, an
/// OpenAI-compatible server, through Chat Completions ([`OpenAiClient`](super::OpenAiClient)),
/// which every such server speaks. `TOOL_CORE_OPENAI_API` overrides that choice (`responses`
/// for a server that serves `/v1/responses`, such as llama.cpp's, vLLM or Ollama;
/// `chat-completions`, or `chat`, for OpenAI's Chat Completions).
///
/// A configuration that asks for something impossible is an error, not "no provider": a
/// `TOOL_CORE_PROVIDER` that names no provider, a `TOOL_CORE_OPENAI_API` that names no OpenAI
/// API, a provider this build does not include, or a client that cannot be built.
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
            return Ok(match openai_api(vars)? {
                OpenAiApi::Responses => Arc::new(super::ResponsesClient::new(
                    super::ResponsesConfig::from_vars(vars),
                )?),
                OpenAiApi::ChatCompletions => Arc::new(super::OpenAiClient::new(
                    super::OpenAiConfig::from_vars(vars),
                )?),
            });
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

/// The two APIs an OpenAI client can speak.
#[cfg(feature = "openai")]
#[derive(Debug, PartialEq, Eq)]
enum OpenAiApi {
    Responses,
    ChatCompletions,
}

/// The OpenAI API the variables ask for: `TOOL_CORE_OPENAI_API` if set, otherwise Responses
/// for OpenAI's own endpoint and Chat Completions for any other base URL.
#[cfg(feature = "openai")]
fn openai_api(vars: &dyn Fn(&str) -> Option<String>) -> Result<OpenAiApi, ProviderError> {
    if let Some(name) = var(vars, "TOOL_CORE_OPENAI_API") {
        return match name.to_ascii_lowercase().as_str() {
            "responses" => Ok(OpenAiApi::Responses),
            "chat-completions" | "chat_completions" | "chat" => Ok(OpenAiApi::ChatCompletions),
            _ => Err(ProviderError::Config(format!(
                "unsupported OpenAI API `{name}` in TOOL_CORE_OPENAI_API; expected one of: \
                 responses, chat-completions"
            ))),
        };
    }
    let own = var(vars, "OPENAI_BASE_URL").is_none_or(|url| {
        let rest = url.split_once("://").map_or(url.as_str(), |(_, rest)| rest);
        let host = rest.split(['/', ':', '?']).next().unwrap_or_default();
        host.eq_ignore_ascii_case("api.openai.com")
    });
    Ok(if own {
        OpenAiApi::Responses
    } else {
        OpenAiApi::ChatCompletions
    })
}

#[cfg(all(test, feature = "openai"))]
mod tests {
    use super::*;

    fn api(pairs: &[(&str, &str)]) -> Result<OpenAiApi, ProviderError> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect();
        openai_api(&move |name: &str| {
            pairs
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.clone())
        })
    }

    #[test]
    fn openais_own_endpoint_speaks_responses_and_other_servers_chat_completions() {
        assert_eq!(api(&[]).unwrap(), OpenAiApi::Responses);
        assert_eq!(
            api(&[("OPENAI_BASE_URL", "https://API.openai.com/v1/")]).unwrap(),
            OpenAiApi::Responses
        );
        for url in [
            "http://localhost:8080/v1",
            "https://openrouter.ai/api/v1",
            "https://api.openai.com.example.net/v1",
        ] {
            assert_eq!(
                api(&[("OPENAI_BASE_URL", url)]).unwrap(),
                OpenAiApi::ChatCompletions,
                "{url}"
            );
        }
        assert_eq!(
            api(&[
                ("OPENAI_BASE_URL", "http://localhost:8080/v1"),
                ("TOOL_CORE_OPENAI_API", "Responses")
            ])
            .unwrap(),
            OpenAiApi::Responses
        );
        assert_eq!(
            api(&[("TOOL_CORE_OPENAI_API", "chat-completions")]).unwrap(),
            OpenAiApi::ChatCompletions
        );
        assert_eq!(
            api(&[("TOOL_CORE_OPENAI_API", "assistants")])
                .unwrap_err()
                .to_string(),
            "unsupported OpenAI API `assistants` in TOOL_CORE_OPENAI_API; expected one of: \
             responses, chat-completions"
        );
    }
}
