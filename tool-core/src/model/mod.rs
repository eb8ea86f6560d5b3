//! Talking to models: the [`ChatModel`] trait every client implements, over a neutral message
//! model (system, user, assistant text, assistant tool calls, tool results, usage, finish
//! reason).

use std::sync::{Arc, OnceLock};

use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::{registry::RegistrySnapshot, schema::Provider, tool::ChatTool};

mod choice;
mod env;
mod message;
mod scripted;
mod test_model;

#[cfg(feature = "http")]
mod accumulate;
#[cfg(feature = "http")]
mod decode;
#[cfg(feature = "http")]
mod framing;
#[cfg(feature = "http")]
mod http;

#[cfg(feature = "anthropic")]
pub mod anthropic;
#[cfg(feature = "gemini")]
pub mod gemini;
#[cfg(feature = "ollama")]
pub mod ollama;
#[cfg(feature = "openai")]
pub mod openai;

#[cfg(feature = "anthropic")]
pub use anthropic::{AnthropicClient, AnthropicConfig};
pub use choice::ToolChoice;
pub use env::{from_env, from_vars};
#[cfg(feature = "gemini")]
pub use gemini::{GeminiClient, GeminiConfig};
#[cfg(feature = "http")]
pub use http::HttpOptions;
pub use message::{Message, ToolCall};
#[cfg(feature = "ollama")]
pub use ollama::{OllamaClient, OllamaConfig};
#[cfg(feature = "openai")]
pub use openai::{OpenAiClient, OpenAiConfig};
pub use scripted::{ScriptedModel, ScriptedResponse};
pub use test_model::{TestModel, generate_arguments, generate_value};

/// A client for a language model: OpenAI-compatible, Ollama, Gemini, Anthropic, or the offline
/// test and scripted models.
///
/// (The [`Provider`] enum names a wire *format*; a `ChatModel` is a client that speaks one.)
#[async_trait::async_trait]
pub trait ChatModel: Send + Sync {
    /// The tool format this client sends.
    fn provider(&self) -> Provider;

    /// The model's name, for logs and traces.
    fn model_name(&self) -> &str;

    /// Sends a request and waits for the whole answer.
    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError>;

    /// Sends a request and streams the answer as it arrives. Dropping the stream cancels the
    /// request.
    async fn stream(&self, request: ChatRequest) -> Result<ModelStream, ProviderError>;
}

/// A shared model is a model: an agent can take an `Arc<dyn ChatModel>` (or an `Arc` of a
/// scripted model the test keeps a handle on).
#[async_trait::async_trait]
impl<T: ChatModel + ?Sized> ChatModel for Arc<T> {
    fn provider(&self) -> Provider {
        (**self).provider()
    }

    fn model_name(&self) -> &str {
        (**self).model_name()
    }

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        (**self).chat(request).await
    }

    async fn stream(&self, request: ChatRequest) -> Result<ModelStream, ProviderError> {
        (**self).stream(request).await
    }
}

/// A boxed model is a model.
#[async_trait::async_trait]
impl<T: ChatModel + ?Sized> ChatModel for Box<T> {
    fn provider(&self) -> Provider {
        (**self).provider()
    }

    fn model_name(&self) -> &str {
        (**self).model_name()
    }

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        (**self).chat(request).await
    }

    async fn stream(&self, request: ChatRequest) -> Result<ModelStream, ProviderError> {
        (**self).stream(request).await
    }
}

/// A model's answer as a stream of events.
pub type ModelStream = BoxStream<'static, Result<ModelEvent, ProviderError>>;

/// One request to a model.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ChatRequest {
    /// The conversation, system prompt first.
    pub messages: Vec<Message>,
    /// The tools the model may call; empty means the request carries no `tools` and no
    /// `tool_choice`.
    pub tools: RequestTools,
    /// Sampling settings.
    pub settings: ModelSettings,
    /// Whether, and which, tool the model must call; [`ToolChoice::Auto`] sends nothing.
    pub tool_choice: ToolChoice,
}

impl ChatRequest {
    /// A request with these messages and no tools.
    pub fn new(messages: Vec<Message>) -> Self {
        Self {
            messages,
            ..Self::default()
        }
    }

    /// Sets the tools.
    #[must_use]
    pub fn with_tools(mut self, tools: RequestTools) -> Self {
        self.tools = tools;
        self
    }

    /// Sets the sampling settings.
    #[must_use]
    pub fn with_settings(mut self, settings: ModelSettings) -> Self {
        self.settings = settings;
        self
    }

    /// Sets whether, and which, tool the model must call.
    #[must_use]
    pub fn with_tool_choice(mut self, tool_choice: ToolChoice) -> Self {
        self.tool_choice = tool_choice;
        self
    }
}

/// The tools of a request: either plain schemas, or a registry snapshot whose provider JSON is
/// computed once and shared between requests.
#[derive(Clone, Debug, Default)]
pub struct RequestTools {
    /// The schemas; from a snapshot they are copied out only when asked for (the HTTP clients
    /// only need the snapshot's cached provider JSON).
    schemas: OnceLock<Vec<ChatTool>>,
    snapshot: Option<Arc<RegistrySnapshot>>,
}

impl RequestTools {
    /// Tools from plain schemas.
    pub fn from_schemas(schemas: Vec<ChatTool>) -> Self {
        Self {
            schemas: OnceLock::from(schemas),
            snapshot: None,
        }
    }

    /// The enabled tools of a registry snapshot.
    pub fn from_snapshot(snapshot: Arc<RegistrySnapshot>) -> Self {
        Self {
            schemas: OnceLock::new(),
            snapshot: Some(snapshot),
        }
    }

    /// The tools' canonical schemas, in order.
    pub fn schemas(&self) -> &[ChatTool] {
        self.schemas.get_or_init(|| {
            self.snapshot
                .as_ref()
                .map(|snapshot| snapshot.schemas())
                .unwrap_or_default()
        })
    }

    /// Whether there are no tools.
    pub fn is_empty(&self) -> bool {
        match &self.snapshot {
            Some(snapshot) => snapshot.is_empty(),
            None => self.schemas().is_empty(),
        }
    }

    /// The tools in `provider`'s format, as JSON text ready to embed in a request body. Cached
    /// when the tools come from a snapshot.
    pub fn provider_json(&self, provider: Provider) -> Arc<RawValue> {
        if let Some(snapshot) = &self.snapshot {
            return snapshot.provider_json(provider);
        }
        let options = crate::schema::FormatOptions::default();
        let tools: Vec<serde_json::Value> = self
            .schemas()
            .iter()
            .filter_map(
                |tool| match crate::schema::format_tool(provider, tool, &options) {
                    Ok(value) => Some(value),
                    Err(error) => {
                        tracing::error!(%error, "tool left out of the request");
                        None
                    }
                },
            )
            .collect();
        serde_json::value::to_raw_value(&crate::registry::wrap(provider, tools))
            .map(Arc::from)
            .unwrap_or_else(|_| Arc::from(RawValue::NULL.to_owned()))
    }
}

/// Sampling settings; `None` leaves the provider's default.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ModelSettings {
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// The most tokens to generate.
    pub max_tokens: Option<u32>,
}

/// A whole answer.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ChatResponse {
    /// The assistant message: text and tool calls.
    pub message: Message,
    /// Token counts, when the provider reports them.
    pub usage: Option<Usage>,
    /// Why the model stopped.
    pub finish_reason: FinishReason,
}

impl ChatResponse {
    /// A response with this message and finish reason.
    pub fn new(message: Message, finish_reason: FinishReason) -> Self {
        Self {
            message,
            usage: None,
            finish_reason,
        }
    }
}

/// Token counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Usage {
    /// Tokens in the prompt.
    pub input_tokens: u64,
    /// Tokens generated.
    pub output_tokens: u64,
}

impl Usage {
    /// Token counts.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens,
            output_tokens,
        }
    }
}

/// Why the model stopped generating.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum FinishReason {
    /// A natural end of the answer.
    Stop,
    /// The model called tools and waits for their results.
    ToolCalls,
    /// The token limit was reached; the answer (or a tool call) may be cut off.
    Length,
    /// The provider's content filter or a refusal stopped the answer.
    ContentFilter,
    /// Another reason, as the provider named it.
    Other(String),
}

/// One event of a streamed answer.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ModelEvent {
    /// A piece of the answer's text.
    TextDelta(String),
    /// A tool call began; `index` orders the calls of this answer.
    ToolCallStart {
        /// The call's position in the answer.
        index: usize,
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
    },
    /// A fragment of a tool call's JSON arguments.
    ToolCallDelta {
        /// The call's position in the answer.
        index: usize,
        /// The fragment, to append to the arguments so far.
        arguments: String,
    },
    /// A tool call is complete.
    ToolCallEnd {
        /// The call's position in the answer.
        index: usize,
        /// The whole call.
        call: ToolCall,
    },
    /// Token counts (may come more than once; the last one wins).
    Usage(Usage),
    /// The answer is complete: the final assistant message (text and every tool call) and why
    /// it ended. Always the last event of a successful stream.
    Done {
        /// The whole assistant message.
        message: Message,
        /// Why the model stopped.
        finish_reason: FinishReason,
    },
}

/// A failure talking to a model provider.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The provider answered with an error status or an error event; `message` is the
    /// provider's own text.
    #[error("{provider} returned an error{}: {message}", status.map(|s| format!(" (HTTP {s})")).unwrap_or_default())]
    Api {
        /// Which provider.
        provider: Provider,
        /// The HTTP status, when the error came as one.
        status: Option<u16>,
        /// The provider's error type or code, when it gave one.
        code: Option<String>,
        /// The provider's message.
        message: String,
    },
    /// The provider kept answering 429 or 5xx after every retry.
    #[error("{provider} is unavailable after {attempts} attempts (HTTP {status}): {message}")]
    Unavailable {
        /// Which provider.
        provider: Provider,
        /// The last status.
        status: u16,
        /// How many requests were made.
        attempts: u32,
        /// The provider's last message.
        message: String,
    },
    /// The connection failed or timed out.
    #[error("cannot reach {provider}: {message}")]
    Transport {
        /// Which provider.
        provider: Provider,
        /// What went wrong.
        message: String,
    },
    /// The provider sent something that is not its documented format.
    #[error("unexpected response from {provider}: {message}")]
    Protocol {
        /// Which provider.
        provider: Provider,
        /// What was wrong.
        message: String,
    },
    /// The stream ended before the answer was complete.
    #[error("the {provider} stream ended before the answer was complete")]
    Truncated {
        /// Which provider.
        provider: Provider,
    },
    /// The client is not configured (for example, no API key).
    #[error("{0}")]
    Config(String),
    /// A scripted or test model has nothing more to say.
    #[error("{0}")]
    Exhausted(String),
}
