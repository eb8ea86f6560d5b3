//! What the four HTTP model clients share: settings, a connection, and the two ways of asking
//! (a whole answer, a stream). Each wire protocol says only how a request is written and an
//! answer read ([`Wire`]); [`HttpModel`] does the rest, and [`http_client!`] gives each public
//! client its constructor from the environment, its settings and its [`ChatModel`] impl.

use std::{fmt, sync::Arc};

use bytes::Bytes;

use super::{
    ChatRequest, ChatResponse, ModelStream, ProviderError, endpoint::Endpoint, wire::http::Http,
};
use crate::schema::Provider;

/// One wire protocol: how a request is written and an answer read.
pub(crate) trait Wire: 'static {
    /// The client's settings.
    type Config: fmt::Debug + Send + Sync + 'static;
    /// The tool format and the name in errors.
    const PROVIDER: Provider;
    /// The endpoint part of the settings.
    fn endpoint(config: &Self::Config) -> &Endpoint;
    /// The JSON body of a request, streamed or not.
    fn request_body(
        config: &Self::Config,
        request: &ChatRequest,
        stream: bool,
    ) -> Result<Bytes, ProviderError>;
    /// A whole answer from a non-streamed response body (already checked for an API error).
    fn answer(body: &[u8]) -> Result<ChatResponse, ProviderError>;
    /// The events of a streamed response.
    fn decode(response: reqwest::Response) -> ModelStream;
}

/// A model over HTTP speaking wire `W`.
pub(crate) struct HttpModel<W: Wire> {
    config: Arc<W::Config>,
    http: Http,
    unary_url: String,
    stream_url: String,
}

impl<W: Wire> Clone for HttpModel<W> {
    fn clone(&self) -> Self {
        Self {
            config: Arc::clone(&self.config),
            http: self.http.clone(),
            unary_url: self.unary_url.clone(),
            stream_url: self.stream_url.clone(),
        }
    }
}

impl<W: Wire> fmt::Debug for HttpModel<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpModel")
            .field("config", &self.config)
            .field("unary_url", &self.unary_url)
            .field("stream_url", &self.stream_url)
            .finish_non_exhaustive()
    }
}

impl<W: Wire> HttpModel<W> {
    /// A model posting whole requests to `unary_url` and streamed ones to `stream_url`.
    pub(crate) fn new(
        config: W::Config,
        http: Http,
        unary_url: String,
        stream_url: String,
    ) -> Self {
        Self {
            config: Arc::new(config),
            http,
            unary_url,
            stream_url,
        }
    }

    /// The settings.
    pub(crate) fn config(&self) -> &W::Config {
        &self.config
    }

    /// The model the endpoint names.
    pub(crate) fn model_name(&self) -> &str {
        &W::endpoint(&self.config).model
    }

    /// A whole answer.
    pub(crate) async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        let body = W::request_body(&self.config, request, false)?;
        let response = self.http.post(&self.unary_url, body, false).await?;
        W::answer(&self.http.body(response).await?)
    }

    /// A streamed answer.
    pub(crate) async fn stream(&self, request: &ChatRequest) -> Result<ModelStream, ProviderError> {
        let body = W::request_body(&self.config, request, true)?;
        let response = self.http.post(&self.stream_url, body, true).await?;
        Ok(W::decode(response))
    }
}

/// Declares a public client `$client` over wire `$wire` with settings `$config`: its
/// `from_env`, `config` and [`ChatModel`](super::ChatModel) impl. The wire module writes `new`.
macro_rules! http_client {
    ($(#[$doc:meta])* $client:ident, $wire:ty, $config:ty) => {
        $(#[$doc])*
        #[derive(Clone, Debug)]
        pub struct $client {
            inner: $crate::model::client::HttpModel<$wire>,
        }

        impl $client {
            #[doc = concat!("A client configured from the environment (see [`", stringify!($config), "::from_env`]).")]
            pub fn from_env() -> Result<Self, $crate::model::ProviderError> {
                Self::new(<$config>::from_env())
            }

            /// The settings.
            pub fn config(&self) -> &$config {
                self.inner.config()
            }
        }

        #[async_trait::async_trait]
        impl $crate::model::ChatModel for $client {
            fn provider(&self) -> $crate::schema::Provider {
                <$wire as $crate::model::client::Wire>::PROVIDER
            }

            fn model_name(&self) -> &str {
                self.inner.model_name()
            }

            async fn chat(
                &self,
                request: $crate::model::ChatRequest,
            ) -> Result<$crate::model::ChatResponse, $crate::model::ProviderError> {
                self.inner.chat(&request).await
            }

            async fn stream(
                &self,
                request: $crate::model::ChatRequest,
            ) -> Result<$crate::model::ModelStream, $crate::model::ProviderError> {
                self.inner.stream(&request).await
            }
        }
    };
}
pub(crate) use http_client;
