//! Text embeddings for hybrid tool search: the [`Embedder`] trait, and clients of three
//! embeddings APIs over the provider clients' HTTP plumbing (the same timeouts, retries and
//! redaction of keys):
//!
//! - [`OpenAiEmbedder`]: OpenAI's `POST /embeddings`, which OpenAI-compatible servers serve
//!   too (llama.cpp's `llama-server --embeddings` at `/v1/embeddings`, vLLM, LM Studio);
//!   <https://platform.openai.com/docs/api-reference/embeddings/create>;
//! - [`OllamaEmbedder`]: Ollama's `POST /api/embed`;
//!   <https://github.com/ollama/ollama/blob/main/docs/api.md#generate-embeddings>;
//! - [`GeminiEmbedder`]: Gemini's `models/{model}:batchEmbedContents`;
//!   <https://ai.google.dev/api/embeddings#method:-models.batchembedcontents>.
//!
//! Each checks what it got back: one vector per text, all of one dimension, finite numbers;
//! anything else is an [`EmbedError`], never a wrong ranking.

use std::sync::Arc;

use crate::model::ProviderError;

/// Turns texts into vectors, for hybrid tool search. Implement it to bring an embedding model
/// of your own (a local library, another API); the crate's clients are [`OpenAiEmbedder`],
/// [`OllamaEmbedder`] and [`GeminiEmbedder`].
///
/// ```
/// use tool_core::{async_trait, model::{EmbedError, Embedder}};
///
/// /// Counts letters: a toy, but a whole embedder.
/// struct Letters;
///
/// #[async_trait]
/// impl Embedder for Letters {
///     async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
///         Ok(texts
///             .iter()
///             .map(|text| {
///                 let mut counts = vec![0.0; 26];
///                 for c in text.to_ascii_lowercase().bytes().filter(u8::is_ascii_lowercase) {
///                     counts[usize::from(c - b'a')] += 1.0;
///                 }
///                 counts
///             })
///             .collect())
///     }
/// }
/// ```
#[async_trait::async_trait]
pub trait Embedder: Send + Sync {
    /// One vector per text, in the order of `texts`, all of the same dimension.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError>;

    /// The most texts one [`embed`](Self::embed) call is given; more are sent in several
    /// calls. Default 64.
    fn max_batch(&self) -> usize {
        64
    }
}

#[async_trait::async_trait]
impl<T: Embedder + ?Sized> Embedder for Arc<T> {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        (**self).embed(texts).await
    }

    fn max_batch(&self) -> usize {
        (**self).max_batch()
    }
}

/// Why texts got no embeddings.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// The request failed: no connection, an error status, an answer that is not the API's.
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// The answer has another number of vectors than there were texts.
    #[error("{got} embeddings for {expected} texts")]
    Count {
        /// The number of texts sent.
        expected: usize,
        /// The number of vectors received.
        got: usize,
    },
    /// A vector has another dimension than the others (or than those cached before).
    #[error("an embedding of dimension {got} among ones of dimension {expected}")]
    Dimension {
        /// The dimension of the other vectors.
        expected: usize,
        /// The odd one's.
        got: usize,
    },
    /// A vector is empty or holds a number that is not finite.
    #[error("an embedding is empty or not finite")]
    Invalid,
    /// An application's embedder failed in a way of its own.
    #[error("{0}")]
    Other(String),
}

/// Checks that `vectors` are embeddings of `expected` texts: as many, of one dimension (that of
/// `dimension` when given), non-empty and finite.
pub fn check_embeddings(
    vectors: &[Vec<f32>],
    expected: usize,
    dimension: Option<usize>,
) -> Result<(), EmbedError> {
    if vectors.len() != expected {
        return Err(EmbedError::Count {
            expected,
            got: vectors.len(),
        });
    }
    let expected = dimension.or_else(|| vectors.first().map(Vec::len));
    for vector in vectors {
        if vector.is_empty() || !vector.iter().all(|value| value.is_finite()) {
            return Err(EmbedError::Invalid);
        }
        if let Some(expected) = expected {
            if vector.len() != expected {
                return Err(EmbedError::Dimension {
                    expected,
                    got: vector.len(),
                });
            }
        }
    }
    Ok(())
}

#[cfg(any(feature = "openai", feature = "ollama", feature = "gemini"))]
mod clients {
    use serde::Deserialize;
    use serde_json::{Value, json};

    use super::{EmbedError, Embedder, check_embeddings};
    use crate::{
        model::{
            Endpoint, ProviderError,
            wire::{
                endpoint::KeyHeader,
                http::{Http, read_json, write_json},
            },
        },
        schema::Provider,
    };

    /// One embeddings endpoint: where, the HTTP client, and whose API it speaks.
    #[derive(Clone)]
    struct Client {
        endpoint: Endpoint,
        http: Http,
        provider: Provider,
    }

    impl std::fmt::Debug for Client {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            // `Endpoint`'s `Debug` hides the key, the headers' values and the URL's secrets.
            f.debug_struct("Embedder")
                .field("provider", &self.provider)
                .field("endpoint", &self.endpoint)
                .finish_non_exhaustive()
        }
    }

    impl Client {
        fn new(
            endpoint: Endpoint,
            provider: Provider,
            key: KeyHeader,
        ) -> Result<Self, ProviderError> {
            let http = endpoint.connect(provider, key, [], false)?;
            Ok(Self {
                endpoint,
                http,
                provider,
            })
        }

        async fn post<T: serde::de::DeserializeOwned>(
            &self,
            path: &str,
            body: &Value,
        ) -> Result<T, ProviderError> {
            let response = self
                .http
                .post(&self.endpoint.url(path), write_json(body)?, &[], false)
                .await?;
            let bytes = self.http.body(response).await?;
            read_json(self.provider, &bytes)
        }
    }

    macro_rules! embedder {
        ($(#[$doc:meta])* $feature:literal $name:ident) => {
            $(#[$doc])*
            #[cfg(feature = $feature)]
            #[cfg_attr(docsrs, doc(cfg(feature = $feature)))]
            #[derive(Clone, Debug)]
            pub struct $name(Client);
        };
    }

    embedder!(
        /// Embeddings from OpenAI's `POST {base_url}/embeddings`, or from any server that
        /// speaks it: llama.cpp's `llama-server --embeddings` (base URL
        /// `http://127.0.0.1:8080/v1`), vLLM, LM Studio, Ollama's `/v1`. The key, when there
        /// is one, goes as `Authorization: Bearer`.
        ///
        /// ```
        /// use tool_core::model::{Endpoint, OpenAiEmbedder};
        ///
        /// let embedder = OpenAiEmbedder::new(
        ///     Endpoint::new("http://127.0.0.1:8080/v1", "all-MiniLM-L6-v2"),
        /// )
        /// .unwrap();
        /// # let _ = embedder;
        /// ```
        "openai" OpenAiEmbedder
    );
    embedder!(
        /// Embeddings from Ollama's `POST {base_url}/api/embed` (base URL
        /// `http://localhost:11434`).
        "ollama" OllamaEmbedder
    );
    embedder!(
        /// Embeddings from Gemini's `models/{model}:batchEmbedContents` (base URL
        /// `https://generativelanguage.googleapis.com/v1beta`, model `gemini-embedding-001`
        /// for example); the key goes as `x-goog-api-key` and is required.
        "gemini" GeminiEmbedder
    );

    #[cfg(feature = "openai")]
    impl OpenAiEmbedder {
        /// A client of the embeddings API at `endpoint` (its base URL, with the version, its
        /// model, key and HTTP options).
        pub fn new(endpoint: Endpoint) -> Result<Self, ProviderError> {
            Client::new(endpoint, Provider::OpenAi, KeyHeader::Bearer).map(Self)
        }
    }

    /// `{"data": [{"index": 0, "embedding": [...]}, ...]}`.
    #[cfg(feature = "openai")]
    #[derive(Deserialize)]
    struct OpenAiAnswer {
        data: Vec<OpenAiVector>,
    }

    #[cfg(feature = "openai")]
    #[derive(Deserialize)]
    struct OpenAiVector {
        #[serde(default)]
        index: Option<usize>,
        embedding: Vec<f32>,
    }

    #[cfg(feature = "openai")]
    #[async_trait::async_trait]
    impl Embedder for OpenAiEmbedder {
        async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
            if texts.is_empty() {
                return Ok(Vec::new());
            }
            let body = json!({
                "model": self.0.endpoint.model,
                "input": texts,
                "encoding_format": "float",
            });
            let mut answer: OpenAiAnswer = self.0.post("/embeddings", &body).await?;
            // The data come in input order with their index; sort by it all the same.
            if answer.data.iter().all(|vector| vector.index.is_some()) {
                answer.data.sort_by_key(|vector| vector.index);
            }
            let vectors: Vec<Vec<f32>> = answer
                .data
                .into_iter()
                .map(|vector| vector.embedding)
                .collect();
            check_embeddings(&vectors, texts.len(), None)?;
            Ok(vectors)
        }
    }

    #[cfg(feature = "ollama")]
    impl OllamaEmbedder {
        /// A client of Ollama's embed API at `endpoint`.
        pub fn new(endpoint: Endpoint) -> Result<Self, ProviderError> {
            Client::new(endpoint, Provider::Ollama, KeyHeader::Bearer).map(Self)
        }
    }

    /// `{"model": "...", "embeddings": [[...], ...]}`.
    #[cfg(feature = "ollama")]
    #[derive(Deserialize)]
    struct OllamaAnswer {
        embeddings: Vec<Vec<f32>>,
    }

    #[cfg(feature = "ollama")]
    #[async_trait::async_trait]
    impl Embedder for OllamaEmbedder {
        async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
            if texts.is_empty() {
                return Ok(Vec::new());
            }
            let body = json!({ "model": self.0.endpoint.model, "input": texts });
            let answer: OllamaAnswer = self.0.post("/api/embed", &body).await?;
            check_embeddings(&answer.embeddings, texts.len(), None)?;
            Ok(answer.embeddings)
        }
    }

    #[cfg(feature = "gemini")]
    impl GeminiEmbedder {
        /// A client of Gemini's embeddings API at `endpoint`; fails without a key.
        pub fn new(endpoint: Endpoint) -> Result<Self, ProviderError> {
            let key = KeyHeader::Required {
                header: "x-goog-api-key",
                missing: "no Gemini API key: set it in the embedder's Endpoint::api_key",
            };
            Client::new(endpoint, Provider::Gemini, key).map(Self)
        }
    }

    /// `{"embeddings": [{"values": [...]}, ...]}`.
    #[cfg(feature = "gemini")]
    #[derive(Deserialize)]
    struct GeminiAnswer {
        embeddings: Vec<GeminiVector>,
    }

    #[cfg(feature = "gemini")]
    #[derive(Deserialize)]
    struct GeminiVector {
        values: Vec<f32>,
    }

    #[cfg(feature = "gemini")]
    #[async_trait::async_trait]
    impl Embedder for GeminiEmbedder {
        async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
            if texts.is_empty() {
                return Ok(Vec::new());
            }
            let model = &self.0.endpoint.model;
            let model = if model.contains('/') {
                model.clone()
            } else {
                format!("models/{model}")
            };
            let requests: Vec<Value> = texts
                .iter()
                .map(|text| json!({ "model": model, "content": { "parts": [{ "text": text }] } }))
                .collect();
            let body = json!({ "requests": requests });
            let answer: GeminiAnswer = self
                .0
                .post(&format!("/{model}:batchEmbedContents"), &body)
                .await?;
            let vectors: Vec<Vec<f32>> = answer
                .embeddings
                .into_iter()
                .map(|vector| vector.values)
                .collect();
            check_embeddings(&vectors, texts.len(), None)?;
            Ok(vectors)
        }

        /// Gemini takes at most 100 requests in one batch.
        fn max_batch(&self) -> usize {
            100
        }
    }
}

#[cfg(feature = "gemini")]
pub use clients::GeminiEmbedder;
#[cfg(feature = "ollama")]
pub use clients::OllamaEmbedder;
#[cfg(feature = "openai")]
pub use clients::OpenAiEmbedder;
