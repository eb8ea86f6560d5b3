//! What every HTTP provider's settings share: the [`Endpoint`] (API key, base URL, model, extra
//! headers, timeouts and retries), how it is read from the environment, and the setters each
//! provider configuration forwards to it. A provider's own configuration holds an `Endpoint`
//! and adds only what is its own (Anthropic's `max_tokens` and beta features, OpenAI's
//! `include_usage`).

use std::fmt;

use super::http::{Http, HttpOptions};
use crate::{
    model::{ProviderError, vars::var},
    schema::Provider,
    secrets::{HiddenValues, REDACTED, Redaction, redact_url},
};

/// Where and how a provider client sends its requests; the part of
/// [`OpenAiConfig`](crate::model::OpenAiConfig), [`AnthropicConfig`](crate::model::AnthropicConfig),
/// [`GeminiConfig`](crate::model::GeminiConfig) and [`OllamaConfig`](crate::model::OllamaConfig) that they
/// have in common.
///
/// Each configuration's setters (`api_key`, `base_url`, `model`, `header`, `http`) write
/// here.
///
/// Its `Debug` hides the secrets: the key, the headers' values, and the base URL's user part
/// and query values show as `***`.
#[derive(Clone, PartialEq)]
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
            self.base_url = (names.read_base_url)(&base_url);
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

    /// The HTTP side of `provider`'s client: every request carries the key as `key` says, then
    /// the provider's `own` headers, then the extra [`headers`](Self::headers); streamed ones
    /// ask for `text/event-stream` if `event_stream`. Fails when the key is required and
    /// missing.
    pub(crate) fn connect(
        &self,
        provider: Provider,
        key: KeyHeader,
        own: impl IntoIterator<Item = (&'static str, String)>,
        event_stream: bool,
    ) -> Result<Http, ProviderError> {
        let mut headers = Vec::new();
        match (key, &self.api_key) {
            (KeyHeader::Bearer, Some(key)) => {
                headers.push((String::from("authorization"), format!("Bearer {key}")));
            }
            (KeyHeader::Bearer, None) => {}
            (KeyHeader::Required { header, .. }, Some(key)) => {
                headers.push((header.to_owned(), key.clone()));
            }
            (KeyHeader::Required { missing, .. }, None) => {
                return Err(ProviderError::Config(missing.to_owned()));
            }
        }
        headers.extend(
            own.into_iter()
                .map(|(name, value)| (name.to_owned(), value)),
        );
        headers.extend(self.headers.iter().cloned());
        Http::new(provider, self.http.clone(), headers, event_stream)
    }
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint")
            .field("api_key", &self.api_key.as_ref().map(|_| REDACTED))
            .field(
                "base_url",
                &redact_url(&self.base_url, Redaction::Credentials),
            )
            .field("model", &self.model)
            .field("headers", &HiddenValues(&self.headers))
            .field("http", &self.http)
            .finish()
    }
}

/// Settings that hold an [`Endpoint`]: every provider configuration.
pub(crate) trait HasEndpoint {
    /// The endpoint part of the settings.
    fn endpoint(&self) -> &Endpoint;
}

/// How a provider wants the API key.
// A build with only some of the clients leaves one way unused.
#[allow(dead_code)]
pub(crate) enum KeyHeader {
    /// As `Authorization: Bearer …`, when there is one.
    Bearer,
    /// In `header`; without a key no client is built, and the error says `missing`.
    Required {
        header: &'static str,
        missing: &'static str,
    },
}

/// The environment variables a provider's endpoint is read from.
pub(crate) struct EnvNames {
    /// The API key, the first set one winning.
    pub(crate) api_key: &'static [&'static str],
    /// The base URL.
    pub(crate) base_url: &'static str,
    /// How the base URL variable is read: as it is ([`str::to_owned`]), or as Ollama reads
    /// `OLLAMA_HOST`.
    pub(crate) read_base_url: fn(&str) -> String,
    /// The model.
    pub(crate) model: &'static str,
}

/// What every provider configuration has beside its fields and `Default`: `new`, `from_env`
/// (documented by the given doc comment), `from_vars` reading the variables `$env`, the setters
/// writing to its `endpoint` field, and its [`HasEndpoint`] impl.
macro_rules! provider_config {
    ($config:ty, $env:ident, $(#[$from_env:meta])*) => {
        impl $crate::model::wire::endpoint::HasEndpoint for $config {
            fn endpoint(&self) -> &$crate::model::Endpoint {
                &self.endpoint
            }
        }

        impl $config {
            /// The defaults.
            pub fn new() -> Self {
                Self::default()
            }

            $(#[$from_env])*
            pub fn from_env() -> Self {
                Self::from_vars(&$crate::model::vars::process_vars)
            }

            /// The settings from variables looked up with `vars` (the environment in
            /// [`from_env`](Self::from_env)); unset and blank ones leave the defaults.
            pub fn from_vars(vars: &dyn Fn(&str) -> Option<String>) -> Self {
                let mut config = Self::default();
                config.endpoint = config.endpoint.overridden_by(vars, &$env);
                config
            }

            /// Sets the API key.
            #[must_use]
            pub fn api_key(mut self, api_key: impl Into<String>) -> Self {
                self.endpoint.api_key = Some(api_key.into());
                self
            }

            /// Sets the base URL.
            #[must_use]
            pub fn base_url(mut self, base_url: impl Into<String>) -> Self {
                self.endpoint.base_url = base_url.into();
                self
            }

            /// Sets the model.
            #[must_use]
            pub fn model(mut self, model: impl Into<String>) -> Self {
                self.endpoint.model = model.into();
                self
            }

            /// Adds a header to every request.
            #[must_use]
            pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
                self.endpoint.headers.push((name.into(), value.into()));
                self
            }

            /// Sets the timeouts and retries.
            #[must_use]
            pub fn http(mut self, http: $crate::model::HttpOptions) -> Self {
                self.endpoint.http = http;
                self
            }
        }
    };
}

pub(crate) use provider_config;
