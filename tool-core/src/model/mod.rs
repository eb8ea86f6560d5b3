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
mod shared;
mod test_model;

#[cfg(feature = "http")]
pub(crate) mod client;
#[cfg(feature = "http")]
mod endpoint;
#[cfg(feature = "http")]
mod wire;

#[cfg(feature = "anthropic")]
pub mod anthropic;
#[cfg(feature = "gemini")]
pub mod gemini;
#[cfg(feature = "ollama")]
pub mod ollama;
#[cfg(feature = "openai")]
pub mod openai;
#[cfg(feature = "openai")]
pub mod responses;

#[cfg(feature = "anthropic")]
pub use anthropic::{AnthropicClient, AnthropicConfig};
pub use choice::ToolChoice;
#[cfg(feature = "http")]
pub use endpoint::Endpoint;
pub use env::{from_env, from_vars};
#[cfg(feature = "gemini")]
pub use gemini::{GeminiClient, GeminiConfig};
pub use message::{Message, ToolCall};
#[cfg(feature = "ollama")]
pub use ollama::{OllamaClient, OllamaConfig};
#[cfg(feature = "openai")]
pub use openai::{OpenAiClient, OpenAiConfig};
#[cfg(feature = "openai")]
pub use responses::{ResponsesClient, ResponsesConfig};
pub use scripted::{ScriptExhausted, ScriptedModel, ScriptedResponse};
pub use shared::SharedStr;
pub use test_model::{TestModel, generate_arguments, generate_value};
#[cfg(feature = "http")]
pub use wire::http::HttpOptions;

/// A client for a language model: OpenAI-compatible Chat Completions, OpenAI Responses,
/// Ollama, Gemini, Anthropic, or the offline test and scripted models.
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

/// The future of a model call, as `#[async_trait]` spells it.
type ModelFuture<'a, T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, ProviderError>> + Send + 'a>>;

/// `ChatModel` for a pointer to a model: every method forwards, and a call hands back the
/// model's own boxed future instead of boxing it a second time.
macro_rules! forward_chat_model {
    ($(#[$doc:meta])* $pointer:ident) => {
        $(#[$doc])*
        impl<T: ChatModel + ?Sized> ChatModel for $pointer<T> {
            fn provider(&self) -> Provider {
                (**self).provider()
            }

            fn model_name(&self) -> &str {
                (**self).model_name()
            }

            fn chat<'life0, 'async_trait>(
                &'life0 self,
                request: ChatRequest,
            ) -> ModelFuture<'async_trait, ChatResponse>
            where
                'life0: 'async_trait,
                Self: 'async_trait,
            {
                (**self).chat(request)
            }

            fn stream<'life0, 'async_trait>(
                &'life0 self,
                request: ChatRequest,
            ) -> ModelFuture<'async_trait, ModelStream>
            where
                'life0: 'async_trait,
                Self: 'async_trait,
            {
                (**self).stream(request)
            }
        }
    };
}

forward_chat_model!(
    /// A shared model is a model: an agent can take an `Arc<dyn ChatModel>` (or an `Arc` of a
    /// scripted model the test keeps a handle on).
    Arc
);
forward_chat_model!(
    /// A boxed model is a model.
    Box
);

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
    pub fn tools(mut self, tools: RequestTools) -> Self {
        self.tools = tools;
        self
    }

    /// Sets the sampling settings.
    #[must_use]
    pub fn settings(mut self, settings: ModelSettings) -> Self {
        self.settings = settings;
        self
    }

    /// Sets whether, and which, tool the model must call.
    #[must_use]
    pub fn tool_choice(mut self, tool_choice: ToolChoice) -> Self {
        self.tool_choice = tool_choice;
        self
    }
}

/// The tools of a request: either plain definitions, or a registry snapshot whose provider JSON is
/// computed once and shared between requests.
#[derive(Clone, Debug, Default)]
pub struct RequestTools {
    /// The definitions; from a snapshot they are copied out only when asked for (the HTTP clients
    /// only need the snapshot's cached provider JSON).
    definitions: OnceLock<Vec<ChatTool>>,
    snapshot: Option<Arc<RegistrySnapshot>>,
}

impl RequestTools {
    /// Tools from plain definitions.
    pub fn from_definitions(definitions: Vec<ChatTool>) -> Self {
        Self {
            definitions: OnceLock::from(definitions),
            snapshot: None,
        }
    }

    /// The enabled tools of a registry snapshot.
    pub fn from_snapshot(snapshot: Arc<RegistrySnapshot>) -> Self {
        Self {
            definitions: OnceLock::new(),
            snapshot: Some(snapshot),
        }
    }

    /// The tools' definitions, in order.
    pub fn definitions(&self) -> &[ChatTool] {
        self.definitions.get_or_init(|| {
            self.snapshot
                .as_ref()
                .map(|snapshot| snapshot.definitions())
                .unwrap_or_default()
        })
    }

    /// Whether there are no tools.
    pub fn is_empty(&self) -> bool {
        match &self.snapshot {
            Some(snapshot) => snapshot.is_empty(),
            None => self.definitions().is_empty(),
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
            .definitions()
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
        serde_json::value::to_raw_value(&crate::schema::list::wrap(provider, tools))
            .map_or_else(|_| Arc::from(RawValue::NULL.to_owned()), Arc::from)
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

/// Token counts of one model call (or, summed with `+`, of several).
///
/// Every provider is normalised to one meaning, so counts from different providers compare
/// and add up:
///
/// - [`input_tokens`](Self::input_tokens) is every prompt token the model processed, the ones
///   read from or written to a prompt cache included. OpenAI's `prompt_tokens` and Gemini's
///   `promptTokenCount` already mean that; Anthropic's `input_tokens` is only the uncached
///   part, so its `cache_read_input_tokens` and `cache_creation_input_tokens` are added in.
/// - [`cache_read_tokens`](Self::cache_read_tokens) and
///   [`cache_write_tokens`](Self::cache_write_tokens) are the parts of `input_tokens` read from
///   and written to the provider's prompt cache.
/// - [`output_tokens`](Self::output_tokens) is every token generated, reasoning included (what
///   the providers bill as output). OpenAI's `completion_tokens` and Anthropic's
///   `output_tokens` already include reasoning; Gemini's `thoughtsTokenCount` is added to its
///   `candidatesTokenCount`.
/// - [`reasoning_tokens`](Self::reasoning_tokens) is the part of `output_tokens` spent on
///   reasoning.
///
/// A breakdown the provider does not report is 0. Ollama reports only `prompt_eval_count` (the
/// whole prompt, the part reused from its cache included) and `eval_count` (the tokens
/// generated, thinking included).
///
/// ```
/// use tool_core::model::Usage;
///
/// // Anthropic: 2 uncached input tokens, 400 read from the cache, 10 written to it.
/// let step = Usage::new(412, 30).cache_read_tokens(400).cache_write_tokens(10);
/// assert_eq!(step.total_input_tokens(), 412);
/// assert_eq!(step.uncached_input_tokens(), 2);
/// let turn = step + Usage::new(500, 20).cache_read_tokens(410);
/// assert_eq!(turn.total_input_tokens(), 912);
/// assert_eq!(turn.cache_read_tokens, 810);
/// assert_eq!(turn.total_tokens(), 962);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Usage {
    /// Every prompt token processed, cached ones included.
    pub input_tokens: u64,
    /// Every token generated, reasoning included.
    pub output_tokens: u64,
    /// The part of `input_tokens` read from the prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read_tokens: u64,
    /// The part of `input_tokens` written to the prompt cache (Anthropic reports it).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    /// The part of `output_tokens` spent on reasoning (OpenAI reasoning models, Gemini
    /// thinking).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
}

impl Usage {
    /// Token counts: every prompt token processed, and every token generated.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens,
            output_tokens,
            ..Self::default()
        }
    }

    /// Sets how many of the input tokens were read from the prompt cache.
    #[must_use]
    pub fn cache_read_tokens(mut self, tokens: u64) -> Self {
        self.cache_read_tokens = tokens;
        self
    }

    /// Sets how many of the input tokens were written to the prompt cache.
    #[must_use]
    pub fn cache_write_tokens(mut self, tokens: u64) -> Self {
        self.cache_write_tokens = tokens;
        self
    }

    /// Sets how many of the output tokens were spent on reasoning.
    #[must_use]
    pub fn reasoning_tokens(mut self, tokens: u64) -> Self {
        self.reasoning_tokens = tokens;
        self
    }

    /// Every prompt token the model processed, whatever the provider and whether or not it
    /// came from a cache (the same as [`input_tokens`](Self::input_tokens), which every
    /// client normalises to this meaning).
    pub fn total_input_tokens(&self) -> u64 {
        self.input_tokens
    }

    /// The prompt tokens neither read from nor written to the cache.
    pub fn uncached_input_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_sub(self.cache_read_tokens)
            .saturating_sub(self.cache_write_tokens)
    }

    /// Input and output tokens together.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

impl std::ops::Add for Usage {
    type Output = Self;

    fn add(mut self, other: Self) -> Self {
        self += other;
        self
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Self) {
        // Saturating: counts from a misbehaving server must not panic in debug builds.
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_tokens = self
            .cache_read_tokens
            .saturating_add(other.cache_read_tokens);
        self.cache_write_tokens = self
            .cache_write_tokens
            .saturating_add(other.cache_write_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(other.reasoning_tokens);
    }
}

impl std::iter::Sum for Usage {
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Self::default(), |total, usage| total + usage)
    }
}

// serde's `skip_serializing_if` hands over a reference.
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_zero(count: &u64) -> bool {
    *count == 0
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

/// A tool call began: its position in the answer, its id and the tool's name.
///
/// [`ModelEvent::ToolCallStarted`] carries it, and the agent passes the same value on in
/// [`AgentEvent::ToolCallStarted`](crate::AgentEvent::ToolCallStarted).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolCallStart {
    /// The call's position in the answer; it orders the calls of one answer.
    pub index: usize,
    /// The provider's id of the call.
    pub id: String,
    /// The tool's name.
    pub name: String,
}

impl ToolCallStart {
    /// The start of the call at `index` with the provider's `id`, to the tool `name`.
    pub fn new(index: usize, id: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            index,
            id: id.into(),
            name: name.into(),
        }
    }
}

/// One event of a streamed answer.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ModelEvent {
    /// A piece of the answer's text.
    TextDelta(String),
    /// A tool call began; its `index` orders the calls of this answer.
    ToolCallStarted(ToolCallStart),
    /// A fragment of a tool call's JSON arguments.
    ToolCallDelta {
        /// The call's position in the answer.
        index: usize,
        /// The fragment, to append to the arguments so far (shared with the call's whole
        /// arguments when it is all of them).
        arguments: SharedStr,
    },
    /// A tool call is complete.
    ToolCallFinished {
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
    /// The stream ended before the answer was complete: the body stopped without the
    /// protocol's terminal event, or the connection failed after the response had started.
    #[error(
        "the {provider} stream ended early after {}{}{}",
        progress(*bytes, *events),
        incomplete_call.as_deref().map(|name| format!(", in the middle of a call to {name}")).unwrap_or_default(),
        cause.as_deref().map(|cause| format!(": {cause}")).unwrap_or_default()
    )]
    Truncated {
        /// Which provider.
        provider: Provider,
        /// The body bytes received, when the stream came over HTTP.
        bytes: Option<u64>,
        /// The protocol events (SSE events, NDJSON lines) read whole.
        events: u64,
        /// The name of the tool call whose arguments were still arriving, if any.
        incomplete_call: Option<String>,
        /// What ended the stream, when it was an error (a reset connection, a read timeout).
        cause: Option<String>,
    },
    /// The client is not configured (for example, no API key).
    #[error("{0}")]
    Config(String),
    /// Any other failure of a model client: a custom client's own error, or
    /// [`ScriptExhausted`] from the [`ScriptedModel`]. The error is kept whole; find its type
    /// with `downcast_ref`.
    #[error(transparent)]
    Other(Box<dyn std::error::Error + Send + Sync + 'static>),
}

/// "1234 bytes and 17 events" (or only the events when the byte count is unknown).
fn progress(bytes: Option<u64>, events: u64) -> String {
    let count = |n: u64, unit: &str| format!("{n} {unit}{}", if n == 1 { "" } else { "s" });
    match bytes {
        Some(bytes) => format!("{} and {}", count(bytes, "byte"), count(events, "event")),
        None => count(events, "event"),
    }
}
