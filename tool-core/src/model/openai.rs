//! OpenAI-compatible Chat Completions (`POST {base}/chat/completions`): OpenAI itself, and
//! OpenRouter, vLLM, llama.cpp's server, LM Studio and Ollama's `/v1`, with a different base URL.
//!
//! Streaming is SSE: each `data:` is a `chat.completion.chunk`, and the stream ends with
//! `data: [DONE]`. Tool-call arguments arrive as string fragments keyed by `index`
//! (<https://platform.openai.com/docs/api-reference/chat-streaming>). Compatible servers differ
//! in the details, and all of these are accepted: the first index is 1; `id` and `type` come in
//! one chunk and the name in the next; empty argument fragments; `choices: []` chunks (usage,
//! Azure's prompt filter results); a whole call in one chunk, possibly together with
//! `finish_reason`; every call numbered `0` but each with its own id; no `[DONE]` after the
//! finish reason; text in `refusal` instead of `content`.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_with::skip_serializing_none;

use super::wire::prelude::*;

const PROVIDER: Provider = Provider::OpenAi;

/// Settings of an [`OpenAiClient`]: its [`Endpoint`] and whether streamed answers report usage.
///
/// ```
/// use tool_core::model::OpenAiConfig;
///
/// // A local vLLM or llama.cpp server needs no key.
/// let config = OpenAiConfig::default()
///     .base_url("http://localhost:8000/v1")
///     .model("Qwen/Qwen2.5-7B-Instruct");
/// assert_eq!(config.endpoint.api_key, None);
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct OpenAiConfig {
    /// The key (sent as `Authorization: Bearer …`; none for local servers), the API root up to
    /// and including the version (default `https://api.openai.com/v1`), the model (default
    /// `gpt-4o-mini`), extra headers (for example OpenRouter's `HTTP-Referer`), timeouts and
    /// retries.
    pub endpoint: Endpoint,
    /// Ask streamed answers to end with token counts (`stream_options.include_usage`).
    /// Default on; turn it off for servers that reject the option.
    pub include_usage: bool,
}

/// The variables [`OpenAiConfig::from_env`] reads (and the Responses client's settings too).
pub(crate) const ENV: EnvNames = EnvNames {
    api_key: &["OPENAI_API_KEY"],
    base_url: "OPENAI_BASE_URL",
    read_base_url: str::to_owned,
    model: "OPENAI_MODEL",
};

impl Default for OpenAiConfig {
    fn default() -> Self {
        Self {
            endpoint: Endpoint::new("https://api.openai.com/v1", "gpt-4o-mini"),
            include_usage: true,
        }
    }
}

provider_config!(
    OpenAiConfig,
    ENV,
    /// The settings from the environment: `OPENAI_API_KEY`, `OPENAI_BASE_URL` and
    /// `OPENAI_MODEL` (each optional; the defaults fill the gaps).
);

impl OpenAiConfig {
    /// Turns `stream_options.include_usage` on or off.
    #[must_use]
    pub fn include_usage(mut self, include_usage: bool) -> Self {
        self.include_usage = include_usage;
        self
    }
}

http_client!(
    /// A client of an OpenAI-compatible Chat Completions API.
    OpenAiClient,
    ChatCompletions,
    OpenAiConfig
);

/// The Chat Completions wire.
#[derive(Debug)]
pub(crate) struct ChatCompletions;

impl Wire for ChatCompletions {
    type Config = OpenAiConfig;
    type Decoder = OpenAiDecoder;
    const PROVIDER: Provider = PROVIDER;
    const KEY: KeyHeader = KeyHeader::Bearer;
    const ACCEPT_EVENT_STREAM: bool = true;

    fn urls(endpoint: &Endpoint) -> (String, String) {
        let url = endpoint.url("/chat/completions");
        (url.clone(), url)
    }

    fn request_body(
        config: &OpenAiConfig,
        request: &ChatRequest,
        stream: bool,
    ) -> Result<Bytes, ProviderError> {
        request.tool_choice.check(&request.tools)?;
        let tools = (!request.tools.is_empty()).then(|| request.tools.provider_json(PROVIDER));
        ChatBody {
            model: &config.endpoint.model,
            messages: request.messages.iter().map(WireMessage::from).collect(),
            stream,
            tools: tools.as_deref(),
            own: OwnFields {
                stream_options: (stream && config.include_usage).then_some(StreamOptions {
                    include_usage: true,
                }),
                tool_choice: tools
                    .as_ref()
                    .and_then(|_| wire_tool_choice(&request.tool_choice)),
                temperature: request.settings.temperature,
                max_tokens: request.settings.max_tokens,
                response_format: request.response_format.as_ref().map(wire_response_format),
            },
        }
        .write()
    }

    fn answer(body: &[u8]) -> Result<ChatResponse, ProviderError> {
        let completion = read_json::<Completion>(PROVIDER, body)?;
        #[cfg(feature = "otel")]
        super::wire::record_response(completion.id.as_deref(), completion.model.as_deref());
        completion.into_response()
    }
}

/// What a Chat Completions request sends beside the [`ChatBody`] fields.
#[skip_serializing_none]
#[derive(Serialize)]
struct OwnFields {
    stream_options: Option<StreamOptions>,
    tool_choice: Option<Value>,
    temperature: Option<f32>,
    max_tokens: Option<u32>,
    response_format: Option<Value>,
}

/// The `response_format` of a request that asks for structured output
/// (<https://platform.openai.com/docs/api-reference/chat/create#chat-create-response_format>).
fn wire_response_format(format: &ResponseFormat) -> Value {
    match format {
        ResponseFormat::JsonSchema { name, schema } => {
            let (schema, strict) = ResponseFormat::openai_schema(name, schema);
            serde_json::json!({
                "type": "json_schema",
                "json_schema": { "name": name, "schema": schema, "strict": strict },
            })
        }
        _ => serde_json::json!({ "type": "json_object" }),
    }
}

/// The `tool_choice` of a request that offers tools
/// (<https://platform.openai.com/docs/api-reference/chat/create#chat-create-tool_choice>);
/// `Auto` is the API's default and is not sent.
fn wire_tool_choice(choice: &ToolChoice) -> Option<Value> {
    match choice {
        ToolChoice::Auto => None,
        ToolChoice::None => Some(Value::from("none")),
        ToolChoice::Required => Some(Value::from("required")),
        ToolChoice::Tool(name) => Some(serde_json::json!({
            "type": "function",
            "function": { "name": name },
        })),
        ToolChoice::Allowed { tools, required } => Some(serde_json::json!({
            "type": "allowed_tools",
            "allowed_tools": {
                "mode": if *required { "required" } else { "auto" },
                "tools": tools
                    .iter()
                    .map(|name| serde_json::json!({ "type": "function", "function": { "name": name } }))
                    .collect::<Vec<_>>(),
            },
        })),
    }
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum WireMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: &'a str,
    },
    Assistant {
        content: Option<&'a str>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
}

#[derive(Serialize)]
struct WireCall<'a> {
    id: &'a str,
    r#type: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

impl<'a> From<&'a Message> for WireMessage<'a> {
    fn from(message: &'a Message) -> Self {
        match message {
            Message::System { content } => WireMessage::System { content },
            Message::User { content } => WireMessage::User { content },
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => WireMessage::Assistant {
                // OpenAI wants `null`, not `""`, beside tool calls.
                content: (!content.is_empty() || tool_calls.is_empty()).then_some(content),
                tool_calls: tool_calls
                    .iter()
                    .map(|call| WireCall {
                        id: &call.id,
                        r#type: "function",
                        function: WireFunction {
                            name: &call.name,
                            arguments: &call.arguments,
                        },
                    })
                    .collect(),
            },
            // A tool message has no error flag in Chat Completions
            // (<https://platform.openai.com/docs/api-reference/chat/create>): a failure is told
            // by the error text in `content` alone.
            Message::Tool {
                tool_call_id,
                content,
                ..
            } => WireMessage::Tool {
                tool_call_id,
                content,
            },
        }
    }
}

/// A non-streamed completion.
#[derive(Deserialize)]
struct Completion {
    #[cfg(feature = "otel")]
    #[serde(default)]
    id: Option<String>,
    #[cfg(feature = "otel")]
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Vec<CompletionChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct CompletionChoice {
    #[serde(default)]
    message: CompletionMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct CompletionMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<CompletionCall>>,
}

#[derive(Deserialize)]
struct CompletionCall {
    #[serde(default)]
    id: Option<String>,
    function: CompletionFunction,
}

#[derive(Deserialize)]
struct CompletionFunction {
    name: String,
    /// A JSON string by the spec; a few servers send an object.
    #[serde(default)]
    arguments: Option<Value>,
}

/// `usage` (<https://platform.openai.com/docs/api-reference/chat/object#chat/object-usage>).
/// Every field is optional: OpenAI-compatible servers leave out, or send `null` for, the ones
/// they do not count.
#[derive(Deserialize, Clone, Copy)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    total_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Deserialize, Clone, Copy)]
struct PromptDetails {
    /// The part of `prompt_tokens` read from the prompt cache.
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize, Clone, Copy)]
struct CompletionDetails {
    /// The part of `completion_tokens` spent on reasoning.
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl From<WireUsage> for Usage {
    fn from(usage: WireUsage) -> Self {
        let input = usage.prompt_tokens.unwrap_or_default();
        let mut output = usage.completion_tokens.unwrap_or_default();
        let cached = usage
            .prompt_tokens_details
            .and_then(|details| details.cached_tokens)
            .unwrap_or_default();
        let reasoning = usage
            .completion_tokens_details
            .and_then(|details| details.reasoning_tokens)
            .unwrap_or_default();
        // OpenAI counts reasoning inside `completion_tokens` (total = prompt + completion);
        // some compatible servers (xAI) count it beside them (total = prompt + completion +
        // reasoning). The total tells which, and the output is made to include reasoning.
        if reasoning > 0
            && usage.total_tokens.is_some_and(|total| {
                total != input.saturating_add(output)
                    && total == input.saturating_add(output).saturating_add(reasoning)
            })
        {
            output = output.saturating_add(reasoning);
        }
        Usage::new(input, output)
            .cache_read_tokens(cached)
            .reasoning_tokens(reasoning)
    }
}

impl Completion {
    fn into_response(self) -> Result<ChatResponse, ProviderError> {
        let choice = self
            .choices
            .into_iter()
            .next()
            .ok_or_else(|| ProviderError::Protocol {
                provider: PROVIDER,
                message: String::from("the completion has no choices"),
            })?;
        let mut answer = Answer::default();
        let mut sink = Vec::new();
        let message = choice.message;
        let refused = message.refusal.as_deref().is_some_and(|r| !r.is_empty());
        answer.text(message.content.as_deref().unwrap_or_default(), &mut sink);
        answer.text(message.refusal.as_deref().unwrap_or_default(), &mut sink);
        for call in message.tool_calls.unwrap_or_default() {
            let slot = answer.calls.push();
            answer
                .calls
                .set_id(slot, call.id.as_deref().unwrap_or_default());
            answer.calls.set_name(slot, &call.function.name, &mut sink);
            let arguments = match call.function.arguments {
                Some(Value::String(text)) => text,
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            answer
                .calls
                .append_shared(slot, SharedStr::from(arguments), &mut sink);
        }
        let (message, _) = answer.into_message();
        let mut finish = finish_reason(choice.finish_reason.as_deref().unwrap_or("stop"));
        if refused {
            finish = FinishReason::ContentFilter;
        }
        if finish == FinishReason::Stop && has_calls(&message) {
            finish = FinishReason::ToolCalls;
        }
        let mut response = ChatResponse::new(message, finish);
        response.usage = self.usage.map(Usage::from);
        Ok(response)
    }
}

fn has_calls(message: &Message) -> bool {
    matches!(message, Message::Assistant { tool_calls, .. } if !tool_calls.is_empty())
}

/// The neutral finish reason of an OpenAI `finish_reason`.
fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "stop" | "end_turn" | "eos" => FinishReason::Stop,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "length" => FinishReason::Length,
        "content_filter" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// One streamed chunk, borrowing its strings from the event's data.
#[derive(Deserialize)]
struct Chunk<'a> {
    #[cfg(feature = "otel")]
    #[serde(default, borrow)]
    id: Option<Text<'a>>,
    #[cfg(feature = "otel")]
    #[serde(default, borrow)]
    model: Option<Text<'a>>,
    #[serde(default, borrow)]
    choices: Vec<ChunkChoice<'a>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct ChunkChoice<'a> {
    #[serde(default)]
    index: u32,
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Text<'a>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<Text<'a>>,
    #[serde(default, borrow)]
    refusal: Option<Text<'a>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<CallChunk<'a>>>,
}

#[derive(Deserialize)]
struct CallChunk<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default, borrow)]
    id: Option<Text<'a>>,
    #[serde(default, borrow)]
    function: Option<FunctionChunk<'a>>,
}

#[derive(Deserialize)]
struct FunctionChunk<'a> {
    #[serde(default, borrow)]
    name: Option<Text<'a>>,
    #[serde(default, borrow)]
    arguments: Option<Text<'a>>,
}

#[derive(Default)]
pub(crate) struct OpenAiDecoder {
    answer: Answer,
    finish: Option<FinishReason>,
    refused: bool,
    /// The slot of the last call fragment, for fragments that carry no index.
    last_slot: Option<usize>,
    /// Whether the answer's id and model were recorded on the span (`otel` feature).
    #[cfg(feature = "otel")]
    described: bool,
}

impl OpenAiDecoder {
    fn chunk(&mut self, chunk: Chunk<'_>, out: &mut Vec<ModelEvent>) {
        #[cfg(feature = "otel")]
        if !self.described && (chunk.id.is_some() || chunk.model.is_some()) {
            self.described = true;
            super::wire::record_response(chunk.id.as_deref(), chunk.model.as_deref());
        }
        if let Some(usage) = chunk.usage {
            self.answer.usage(usage.into());
        }
        // Only the first choice is read (a request never asks for more than one).
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            if let Some(delta) = choice.delta {
                if let Some(text) = delta.content {
                    self.answer.text(&text, out);
                }
                if let Some(refusal) = delta.refusal.filter(|r| !r.is_empty()) {
                    self.refused = true;
                    self.answer.text(&refusal, out);
                }
                for call in delta.tool_calls.unwrap_or_default() {
                    self.call(call, out);
                }
            }
            if let Some(reason) = choice.finish_reason {
                // The calls are complete once the choice has finished, even when the finish
                // reason rides on the same chunk as a call.
                self.answer.calls.end_all(out);
                self.finish = Some(finish_reason(&reason));
            }
        }
    }

    fn call(&mut self, call: CallChunk<'_>, out: &mut Vec<ModelEvent>) {
        let id = call.id.as_deref().filter(|id| !id.is_empty());
        let calls = &mut self.answer.calls;
        let slot = match (call.index, self.last_slot) {
            (Some(index), _) => calls.slot(index, id),
            (None, Some(last)) if id.is_none_or(|id| id == calls.id(last)) => last,
            (None, _) => calls.push(),
        };
        self.last_slot = Some(slot);
        if let Some(id) = id {
            calls.set_id(slot, id);
        }
        let Some(function) = call.function else {
            return;
        };
        if let Some(name) = function.name {
            calls.set_name(slot, &name, out);
        }
        if let Some(arguments) = function.arguments {
            calls.append_shared(slot, SharedStr::from(arguments.0), out);
        }
    }

    fn done(&mut self, out: &mut Vec<ModelEvent>) {
        let answer = std::mem::take(&mut self.answer);
        let mut finish = self.finish.take().unwrap_or(FinishReason::Stop);
        if self.refused && finish == FinishReason::Stop {
            finish = FinishReason::ContentFilter;
        }
        answer.done(finish, out);
    }
}

impl Decoder for OpenAiDecoder {
    fn open_call(&self) -> Option<&str> {
        self.answer.open_call()
    }

    fn feed(&mut self, frame: Frame, out: &mut Vec<ModelEvent>) -> Result<bool, ProviderError> {
        let sse = sse_event(PROVIDER, frame)?;
        let data = sse.data.trim();
        if data == "[DONE]" {
            self.done(out);
            return Ok(true);
        }
        if sse.name == "error" {
            return Err(stream_error(PROVIDER, data));
        }
        let chunk: Chunk<'_> = serde_json::from_str(data)
            .map_err(|error| unreadable(PROVIDER, sse.unterminated, "a chunk", &error))?;
        if let Some(error) = &chunk.error {
            return Err(stream_error(PROVIDER, &error_json(error)));
        }
        self.chunk(chunk, out);
        Ok(false)
    }

    fn finish(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ProviderError> {
        // Some servers stop after the finish reason without `[DONE]`; the answer is complete.
        if self.finish.is_some() {
            self.done(out);
            Ok(())
        } else {
            Err(truncated(PROVIDER))
        }
    }
}

/// `{"error": value}` as text, for [`stream_error`].
fn error_json(error: &Value) -> String {
    serde_json::json!({ "error": error }).to_string()
}
