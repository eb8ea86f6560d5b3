//! Talking to models: the [`ChatModel`] trait every client implements, what it is asked
//! ([`ChatRequest`], its [`RequestTools`] and [`ToolChoice`]) and what it answers
//! ([`ChatResponse`], a stream of [`ModelEvent`]s, [`ProviderError`]).
//!
//! The conversation itself, [`Message`], [`ToolCall`], [`Usage`], [`FinishReason`] and
//! [`SharedStr`], lives a floor below, in [`crate::message`]; it is re-exported here. The
//! tools of a request come as data ([`RequestTools`] over a [`ToolList`]): this module never
//! names the registry.
//!
//! The folder, bottom floor first:
//!
//! | file | holds |
//! |---|---|
//! | `mod.rs`, `choice.rs`, `format.rs` | the abstraction: [`ChatModel`], requests, answers, events, errors, [`ToolChoice`], [`ResponseFormat`] |
//! | `vars.rs` | reading configuration variables (blank is unset) |
//! | `wire/` | the HTTP plumbing every provider client shares, knowing no provider: the [`Endpoint`] settings, one HTTP client over a `Wire` (`client.rs`), requests with timeouts and retries (`http.rs`), the request body (`body.rs`), stream framing (`framing.rs`), decoding frames into events (`decode.rs`) and assembling an answer (`accumulate.rs`); `prelude.rs` is what a client module imports |
//! | `openai.rs`, `responses.rs`, `anthropic.rs`, `gemini.rs`, `ollama.rs` | one provider client per wire protocol (OpenAI has two: Chat Completions and Responses), each plugging its own request and stream types into `wire/` |
//! | `env.rs` | [`from_env`]: the provider client the environment configures |
//! | `offline/` | the models that need no network: [`TestModel`] and [`ScriptedModel`] |

use std::sync::{Arc, OnceLock};

use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

// The conversation's types live below the model clients, which convert them to and from each
// wire; their paths here are kept.
pub use crate::message::{FinishReason, Message, SharedStr, ToolCall, Usage};
use crate::{
    schema::{Provider, ToolList},
    tool::ChatTool,
};

mod choice;
mod env;
mod format;
mod offline;
mod vars;

#[cfg(feature = "http")]
pub(crate) mod wire;

pub mod embed;

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

#[cfg(all(
    test,
    feature = "openai",
    feature = "ollama",
    feature = "gemini",
    feature = "anthropic"
))]
mod decoder_properties;

#[cfg(feature = "anthropic")]
pub use anthropic::{AnthropicClient, AnthropicConfig};
pub use choice::ToolChoice;
#[cfg(feature = "gemini")]
pub use embed::GeminiEmbedder;
#[cfg(feature = "ollama")]
pub use embed::OllamaEmbedder;
#[cfg(feature = "openai")]
pub use embed::OpenAiEmbedder;
pub use embed::{EmbedError, Embedder, check_embeddings};
pub use env::{from_env, from_vars};
pub use format::ResponseFormat;
#[cfg(feature = "gemini")]
pub use gemini::{GeminiClient, GeminiConfig};
pub use offline::{
    ScriptExhausted, ScriptedModel, ScriptedResponse, TestModel, generate_arguments, generate_value,
};
#[cfg(feature = "ollama")]
pub use ollama::{OllamaClient, OllamaConfig};
#[cfg(feature = "openai")]
pub use openai::{OpenAiClient, OpenAiConfig};
#[cfg(feature = "openai")]
pub use responses::{ResponsesClient, ResponsesConfig};
#[cfg(feature = "http")]
pub use wire::{endpoint::Endpoint, http::HttpOptions};

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

    /// Whether this client sends a request's
    /// [`ResponseFormat::JsonSchema`] in its provider's structured-output form, so that the
    /// answer's text is held to the schema. Typed output's native mode
    /// ([`OutputMode::Native`](crate::agent::OutputMode::Native)) runs in the tool mode on a
    /// client that does not. `true` by default; the Anthropic client only with
    /// `AnthropicConfig::structured_outputs` on.
    fn structured_output(&self) -> bool {
        true
    }

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

            fn structured_output(&self) -> bool {
                (**self).structured_output()
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
    /// The form the text answer must take (structured output); `None` sends nothing. See
    /// [`ResponseFormat`] for each wire's form.
    pub response_format: Option<ResponseFormat>,
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

    /// Sets the form the text answer must take.
    #[must_use]
    pub fn response_format(mut self, format: Option<ResponseFormat>) -> Self {
        self.response_format = format;
        self
    }
}

/// The tools of a request: either plain definitions, or a shared [`ToolList`] (a registry
/// snapshot is one) whose provider JSON is computed once and shared between requests.
#[derive(Clone, Debug, Default)]
pub struct RequestTools {
    /// The definitions; from a list they are copied out only when asked for (the HTTP clients
    /// only need the list's provider JSON).
    definitions: OnceLock<Vec<ChatTool>>,
    list: Option<Arc<dyn ToolList>>,
    /// The deferred tools, for a client with a search of its provider's own.
    deferred: Option<DeferredTools>,
}

/// The deferred tools of a request, and how a client with a provider-native search offers
/// them.
#[derive(Clone, Debug)]
struct DeferredTools {
    list: Arc<dyn ToolList>,
    search: NativeSearch,
    local_tool: Arc<str>,
}

/// Which form of the provider's own tool search a request asks for, on the clients that have
/// one (Anthropic Messages and OpenAI Responses): the deferred tools are then sent marked
/// `defer_loading`, so the provider loads their definitions itself once a search names them.
/// Every other client sends the local search tool and leaves the deferred tools out.
///
/// | | Anthropic Messages | OpenAI Responses |
/// |---|---|---|
/// | [`Bm25`](Self::Bm25) (default), [`Regex`](Self::Regex): the provider searches | `tool_search_tool_bm25_20251119` / `_regex_` | `{"type": "tool_search"}` (hosted) |
/// | [`Client`](Self::Client): the agent's own ranking | `search_tools`, whose results carry `tool_reference` blocks | `{"type": "tool_search", "execution": "client"}`, answered with a `tool_search_output` item |
/// | [`Off`](Self::Off) | `search_tools`, no `defer_loading` | `search_tools`, no `defer_loading` |
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum NativeSearch {
    /// The provider searches, with its own ranking: Anthropic's BM25 search tool
    /// (`tool_search_tool_bm25_20251119`); OpenAI Responses' hosted `tool_search`. The default.
    #[default]
    Bm25,
    /// The provider searches: Anthropic's regex search tool (`tool_search_tool_regex_20251119`);
    /// OpenAI Responses' hosted `tool_search`, which has one form.
    Regex,
    /// The agent searches, with its own ranking (BM25, or hybrid when set), in the provider's
    /// client-side form, so the provider still loads the definitions itself: on Anthropic the
    /// local search tool is offered and its results carry `tool_reference` blocks; on OpenAI
    /// Responses the search is `tool_search` with `execution: "client"`, and its results go
    /// back as `tool_search_output` items with the found tools' definitions.
    Client,
    /// No search of the provider's: the local search tool on every wire, the deferred tools
    /// left out of the requests.
    Off,
}

/// A search the provider ran on its side (Anthropic's tool search tool, OpenAI's hosted
/// `tool_search`): what it was asked and the tools it loaded, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProviderToolSearch {
    /// The query or pattern the model searched with (empty when the provider did not say).
    pub query: String,
    /// The tools the search loaded, in the provider's order.
    pub tools: Vec<String>,
}

impl ProviderToolSearch {
    /// A search for `query` that loaded `tools`.
    pub fn new(query: impl Into<String>, tools: Vec<String>) -> Self {
        Self {
            query: query.into(),
            tools,
        }
    }
}

impl RequestTools {
    /// Tools from plain definitions.
    pub fn from_definitions(definitions: Vec<ChatTool>) -> Self {
        Self {
            definitions: OnceLock::from(definitions),
            list: None,
            deferred: None,
        }
    }

    /// The tools of a shared list, such as the enabled tools of a
    /// [`RegistrySnapshot`](crate::RegistrySnapshot) (`Arc<RegistrySnapshot>` converts).
    pub fn from_snapshot(list: Arc<dyn ToolList>) -> Self {
        Self {
            definitions: OnceLock::new(),
            list: Some(list),
            deferred: None,
        }
    }

    /// These tools, where the client has a search of its provider's own, with `deferred` sent
    /// marked `defer_loading` and the provider's search tool (`search`) in place of the tool
    /// named `local_tool`. A tool both among these tools and in `deferred` (one a search
    /// loaded) is sent only deferred there when the request's messages reference it (a search's
    /// `tool_reference` blocks or `tool_search_output` items): the provider loads it from them,
    /// and the tools stay the same from request to request. Else (a tool called or chosen
    /// without a search) it is sent in full, in its place among these tools, which the provider
    /// needs to accept its call. `NativeSearch::Off`, or an empty `deferred`, changes nothing.
    #[must_use]
    pub fn with_native_search(
        mut self,
        deferred: Arc<dyn ToolList>,
        search: NativeSearch,
        local_tool: &str,
    ) -> Self {
        self.deferred =
            (search != NativeSearch::Off && !deferred.is_empty()).then(|| DeferredTools {
                list: deferred,
                search,
                local_tool: Arc::from(local_tool),
            });
        self
    }

    /// The native search asked for, the deferred tools to send with it, and the name of the
    /// local search tool it replaces; `None` when the request asks for none.
    pub fn native_search(&self) -> Option<(NativeSearch, &dyn ToolList, &str)> {
        self.deferred.as_ref().map(|deferred| {
            (
                deferred.search,
                &*deferred.list as &dyn ToolList,
                &*deferred.local_tool,
            )
        })
    }

    /// The tools' definitions, in order.
    pub fn definitions(&self) -> &[ChatTool] {
        self.definitions.get_or_init(|| {
            self.list
                .as_ref()
                .map(|list| list.definitions())
                .unwrap_or_default()
        })
    }

    /// The tools' names, in order; a shared list answers without copying its definitions.
    pub fn names(&self) -> Vec<&str> {
        match &self.list {
            Some(list) => list.names(),
            None => self.definitions().iter().map(ChatTool::name).collect(),
        }
    }

    /// Whether there are no tools.
    pub fn is_empty(&self) -> bool {
        match &self.list {
            Some(list) => list.is_empty(),
            None => self.definitions().is_empty(),
        }
    }

    /// The tools in `provider`'s format, as JSON text ready to embed in a request body. Cached
    /// when the tools come from a shared list.
    pub fn provider_json(&self, provider: Provider) -> Arc<RawValue> {
        match &self.list {
            Some(list) => list.provider_json(provider),
            None => crate::schema::list::provider_json(provider, self.definitions()),
        }
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
    /// The searches the provider ran on its side, in order (see [`NativeSearch`]).
    pub tool_searches: Vec<ProviderToolSearch>,
}

impl ChatResponse {
    /// A response with this message and finish reason.
    pub fn new(message: Message, finish_reason: FinishReason) -> Self {
        Self {
            message,
            usage: None,
            finish_reason,
            tool_searches: Vec::new(),
        }
    }
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
    /// The provider ran a tool search on its side and loaded these tools (see
    /// [`NativeSearch`]); comes before `Done`.
    ToolSearch(ProviderToolSearch),
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
