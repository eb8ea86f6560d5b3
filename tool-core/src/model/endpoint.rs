//! What every HTTP provider's settings share: the [`Endpoint`] (API key, base URL, model, extra
//! headers, timeouts and retries), how it is read from the environment, and the setters each
//! provider configuration forwards to it. A provider's own configuration holds an `Endpoint`
//! and adds only what is its own (Anthropic's `max_tokens` and beta features, OpenAI's
//! `include_usage`).

// Shared by the provider clients; a build with only some of them leaves parts unused.
#![cfg_attr(
    not(all(
        feature = "openai",
        feature = "ollama",
        feature = "gemini",
        feature = "anthropic"
    )),
    allow(dead_code, unused_macros, unused_imports)
)]

use super::{ProviderError, env::var, http::HttpOptions};

/// Where and how a provider client sends its requests; the part of
/// [`OpenAiConfig`](super::OpenAiConfig), [`AnthropicConfig`](super::AnthropicConfig),
/// [`GeminiConfig`](super::GeminiConfig) and [`OllamaConfig`](super::OllamaConfig) that they
/// have in common.
///
/// Each configuration's setters (`with_api_key`, `with_base_url`, `with_model`, `with_header`,
/// `with_http`) write here.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Endpoint {
    /// The API key, sent the way the provider wants it (`Authorization: Bearer …`,
    /// `x-api-key`, `x-goog-api-key`). Required by Anthropic and Gemini; usually none for local
    /// servers.
    pub api_key: Option<String>,
    /// The API root the provider's paths are appended to.
    pub base_url: String,
    /// The model.
    pub model: String,
    /// More headers for every request (for example OpenRouter's `HTTP-Referer`, or a proxy's
    /// own authentication).
    pub headers: Vec<(String, String)>,
    /// Timeouts and retries.
    pub http: HttpOptions,
}

impl Endpoint {
    /// An endpoint at `base_url` for `model`, with no key, no extra headers and the default
    /// [`HttpOptions`].
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            api_key: None,
            base_url: base_url.into(),
            model: model.into(),
            headers: Vec::new(),
            http: HttpOptions::default(),
        }
    }

    /// This endpoint with what the variables `names` set, looked up with `vars`: the first of
    /// the key variables that is set, the base URL and the model. Unset and blank variables
    /// leave the value as it is.
    pub(crate) fn overridden_by(
        mut self,
        vars: &dyn Fn(&str) -> Option<String>,
        names: &EnvNames,
    ) -> Self {
        if let Some(api_key) = names.api_key.iter().find_map(|name| var(vars, name)) {
            self.api_key = Some(api_key);
        }
        if let Some(base_url) = var(vars, names.base_url) {
            self.base_url = base_url;
        }
        if let Some(model) = var(vars, names.model) {
            self.model = model;
        }
        self
    }

    /// `path` under the base URL (a trailing `/` of the base is dropped).
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url.trim_end_matches('/'))
    }

    /// The API key, or a [`ProviderError::Config`] with `missing` when there is none.
    pub(crate) fn required_key(&self, missing: &str) -> Result<String, ProviderError> {
        self.api_key
            .clone()
            .ok_or_else(|| ProviderError::Config(missing.to_owned()))
    }

    /// `Authorization: Bearer …` with the API key, when there is one.
    pub(crate) fn bearer(&self) -> Option<String> {
        self.api_key.as_ref().map(|key| format!("Bearer {key}"))
    }

    /// The headers of a request: the provider's own (`first`), then the extra
    /// [`headers`](Self::headers).
    pub(crate) fn request_headers<'a>(
        &'a self,
        first: &[(&'a str, &'a str)],
    ) -> Vec<(&'a str, &'a str)> {
        let mut headers = Vec::with_capacity(first.len() + self.headers.len() + 1);
        headers.extend_from_slice(first);
        headers.extend(self.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())));
        headers
    }
}

/// The environment variables a provider's endpoint is read from.
pub(crate) struct EnvNames {
    /// The API key, the first set one winning.
    pub(crate) api_key: &'static [&'static str],
    /// The base URL.
    pub(crate) base_url: &'static str,
    /// The model.
    pub(crate) model: &'static str,
}

/// The setters every provider configuration has, writing to its `endpoint` field.
macro_rules! endpoint_setters {
    ($config:ty) => {
        impl $config {
            /// Sets the API key.
            #[must_use]
            pub fn with_api_key(mut self, api_key: impl Into<String>) -> Self {
                self.endpoint.api_key = Some(api_key.into());
                self
            }

            /// Sets the base URL.
            #[must_use]
            pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
                self.endpoint.base_url = base_url.into();
                self
            }

            /// Sets the model.
            #[must_use]
            pub fn with_model(mut self, model: impl Into<String>) -> Self {
                self.endpoint.model = model.into();
                self
            }

            /// Adds a header to every request.
            #[must_use]
            pub fn with_header(
                mut self,
                name: impl Into<String>,
                value: impl Into<String>,
            ) -> Self {
                self.endpoint.headers.push((name.into(), value.into()));
                self
            }

            /// Sets the timeouts and retries.
            #[must_use]
            pub fn with_http(mut self, http: $crate::model::HttpOptions) -> Self {
                self.endpoint.http = http;
                self
            }
        }
    };
}

pub(crate) use endpoint_setters;
