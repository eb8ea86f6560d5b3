//! What the four HTTP model clients share: settings, a connection, and the two ways of asking
//! (a whole answer, a stream). Each wire protocol says only where requests go, how they are
//! written and how an answer is read ([`Wire`]); [`HttpModel`] does the rest, and
//! [`http_client!`] gives each public client its constructors, its settings and its
//! [`ChatModel`](crate::model::ChatModel) impl.

use std::{fmt, sync::Arc};

use bytes::Bytes;
use futures::Stream;

use super::{
    decode::{Decoder, decoded},
    endpoint::{Endpoint, HasEndpoint, KeyHeader},
    framing::{self, FrameStream},
    http::{Http, body_stream},
};
use crate::{
    model::{ChatRequest, ChatResponse, ModelStream, ProviderError},
    schema::Provider,
    secrets::{Redaction, redact_url},
};

/// One wire protocol: where requests go, how they are written and how an answer is read.
pub(crate) trait Wire: 'static {
    /// The client's settings.
    type Config: HasEndpoint + fmt::Debug + Send + Sync + 'static;
    /// The decoder of a streamed answer.
    type Decoder: Decoder + Default;
    /// The tool format and the name in errors.
    const PROVIDER: Provider;
    /// How the API key is sent.
    const KEY: KeyHeader;
    /// Whether streamed requests ask for `text/event-stream`.
    const ACCEPT_EVENT_STREAM: bool;

    /// The URLs of whole and of streamed requests.
    fn urls(endpoint: &Endpoint) -> (String, String);

    /// The provider's own headers, sent with every request before the endpoint's extra ones.
    /// None unless the wire says otherwise.
    fn own_headers(_config: &Self::Config) -> Vec<(&'static str, String)> {
        Vec::new()
    }

    /// Headers that depend on the request (a beta feature it uses), sent after the others.
    /// None unless the wire says otherwise.
    fn request_headers(
        _config: &Self::Config,
        _request: &ChatRequest,
    ) -> Vec<(&'static str, String)> {
        Vec::new()
    }

    /// Whether a request's [`ResponseFormat::JsonSchema`](crate::model::ResponseFormat::JsonSchema)
    /// goes in the provider's structured-output form (see
    /// [`ChatModel::structured_output`](crate::model::ChatModel::structured_output)). Yes unless
    /// the wire says otherwise.
    fn structured_output(_config: &Self::Config) -> bool {
        true
    }

    /// The JSON body of a request, streamed or not.
    fn request_body(
        config: &Self::Config,
        request: &ChatRequest,
        stream: bool,
    ) -> Result<Bytes, ProviderError>;

    /// A whole answer from a non-streamed response body (already checked for an API error).
    fn answer(body: &[u8]) -> Result<ChatResponse, ProviderError>;

    /// The whole answer to `request` from a non-streamed response body: [`answer`](Self::answer)
    /// unless the wire reads answers by what was asked.
    fn answer_to(_request: &ChatRequest, body: &[u8]) -> Result<ChatResponse, ProviderError> {
        Self::answer(body)
    }

    /// The decoder of a streamed answer to `request`: a fresh one unless the wire reads
    /// answers by what was asked.
    fn decoder(_request: &ChatRequest) -> Self::Decoder {
        Self::Decoder::default()
    }

    /// The frames of a streamed body: Server-Sent Events unless the wire says otherwise.
    fn frames<S, B, E>(body: S) -> FrameStream
    where
        S: Stream<Item = Result<B, E>> + Send + 'static,
        B: Into<Bytes>,
        E: fmt::Display,
    {
        framing::sse(body)
    }
}

/// Decodes a streamed body of wire `W` (for example a recorded one) into model events.
pub(crate) fn decode_stream<W, S, B, E>(body: S) -> ModelStream
where
    W: Wire,
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: Into<Bytes>,
    E: fmt::Display,
{
    decoded(W::frames(body), W::Decoder::default(), W::PROVIDER)
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
        // The configuration's `Debug` hides its secrets; the URLs may hold some too.
        let redacted = |url: &str| redact_url(url, Redaction::Credentials);
        f.debug_struct("HttpModel")
            .field("config", &self.config)
            .field("unary_url", &redacted(&self.unary_url))
            .field("stream_url", &redacted(&self.stream_url))
            .finish_non_exhaustive()
    }
}

impl<W: Wire> HttpModel<W> {
    /// A model with these settings. Fails when the wire requires an API key and the settings
    /// have none, or when the HTTP client cannot be built.
    pub(crate) fn new(config: W::Config) -> Result<Self, ProviderError> {
        let endpoint = config.endpoint();
        let http = endpoint.connect(
            W::PROVIDER,
            W::KEY,
            W::own_headers(&config),
            W::ACCEPT_EVENT_STREAM,
        )?;
        let (unary_url, stream_url) = W::urls(endpoint);
        Ok(Self {
            config: Arc::new(config),
            http,
            unary_url,
            stream_url,
        })
    }

    /// The settings.
    pub(crate) fn config(&self) -> &W::Config {
        &self.config
    }

    /// The model the endpoint names.
    pub(crate) fn model_name(&self) -> &str {
        &self.config.endpoint().model
    }

    /// A whole answer.
    pub(crate) async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        let body = W::request_body(&self.config, request, false)?;
        let headers = W::request_headers(&self.config, request);
        let response = self
            .http
            .post(&self.unary_url, body, &headers, false)
            .await?;
        W::answer_to(request, &self.http.body(response).await?)
    }

    /// A streamed answer.
    pub(crate) async fn stream(&self, request: &ChatRequest) -> Result<ModelStream, ProviderError> {
        let body = W::request_body(&self.config, request, true)?;
        let headers = W::request_headers(&self.config, request);
        let response = self
            .http
            .post(&self.stream_url, body, &headers, true)
            .await?;
        Ok(decoded(
            W::frames(body_stream(response)),
            W::decoder(request),
            W::PROVIDER,
        ))
    }
}

/// Declares a public client `$client` over wire `$wire` with settings `$config`: its `new`,
/// `from_env`, `config` and [`ChatModel`](crate::model::ChatModel) impl.
macro_rules! http_client {
    ($(#[$doc:meta])* $client:ident, $wire:ty, $config:ty) => {
        $(#[$doc])*
        #[derive(Clone, Debug)]
        pub struct $client {
            inner: $crate::model::wire::client::HttpModel<$wire>,
        }

        impl $client {
            /// A client with these settings. Fails with
            /// [`ProviderError::Config`](crate::model::ProviderError::Config) when the provider
            /// requires an API key and the settings have none.
            pub fn new(config: $config) -> Result<Self, $crate::model::ProviderError> {
                $crate::model::wire::client::HttpModel::new(config).map(|inner| Self { inner })
            }

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
                <$wire as $crate::model::wire::client::Wire>::PROVIDER
            }

            fn model_name(&self) -> &str {
                self.inner.model_name()
            }

            fn structured_output(&self) -> bool {
                <$wire as $crate::model::wire::client::Wire>::structured_output(self.inner.config())
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
