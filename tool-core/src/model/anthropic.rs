//! Anthropic Messages (`POST {base}/v1/messages`, <https://docs.anthropic.com/en/api/messages>).
//!
//! Tools go as `{name, description, input_schema}`; the model calls them with `tool_use`
//! content blocks, and the results go back as `tool_result` blocks in the next `user` message
//! (the results of parallel calls in one message). Streaming is SSE
//! (<https://docs.anthropic.com/en/api/messages-streaming>): a call's input arrives as
//! `input_json_delta` fragments that are concatenated as they are (a fragment may end inside an
//! escape sequence, and a call without arguments may get a single `""`) and parsed by whoever
//! runs the call. Events are read by their JSON `type`, so data-only streams (no `event:` lines)
//! work too; `error` events become [`ProviderError::Api`]. Server tools (`server_tool_use` and
//! their result blocks) run on Anthropic's side: they are read past, never reported as calls.
//! When the answer hits `max_tokens` inside a call's input, the call is reported with the input
//! received so far (usually invalid JSON) and no `ToolCallFinished`, with
//! [`FinishReason::Length`].
//!
//! **Tool search** (<https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool>):
//! when the request asks for a native search ([`RequestTools::with_native_search`]), the
//! deferred tools are sent with `"defer_loading": true`, Anthropic's search tool
//! (`{"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}`, or the
//! `regex` one) takes the place of the local search tool, and the request carries the
//! `anthropic-beta: advanced-tool-use-2025-11-20` header. The model's searches come back as a
//! `server_tool_use` block and a `tool_search_tool_result` block whose
//! `tool_search_tool_search_result` content lists `tool_reference` blocks; each search is
//! reported as a [`ModelEvent::ToolSearch`] (and in [`ChatResponse::tool_searches`]), and the
//! two blocks are kept, verbatim, in the [`provider_metadata`](ToolCall::provider_metadata)
//! (under `"anthropic"`) of the call that follows them, to be sent back before that call on
//! the next request that offers Anthropic's search tool; when text alone follows them, they
//! are kept in the answer's [`Message::Assistant`] `provider_metadata`, with where in the text
//! they came, and sent back in that place. With [`NativeSearch::Client`] (the agent's own
//! ranking, Anthropic's "custom tool search implementation") the local search tool stays, the
//! deferred tools still go marked `defer_loading` under the beta header, and a tool result
//! with [`tool_references`](Message::Tool) is sent as `tool_reference` blocks
//! (`{"type": "tool_reference", "tool_name": …}`) naming the tools the request defines, which
//! Anthropic expands into their definitions. A loaded tool stays deferred only while the
//! `tool_reference` blocks the request sends name it; one loaded without a search is sent in
//! full, so that Anthropic accepts its call or a `tool_choice` naming it.
//!
//! [`RequestTools::with_native_search`]: super::RequestTools::with_native_search
//!
//! Structured output
//! (<https://platform.claude.com/docs/en/build-with-claude/structured-outputs>) is opt-in,
//! since older models refuse it: with [`AnthropicConfig::structured_outputs`] on, a request's
//! [`ResponseFormat::JsonSchema`] goes as
//! `output_config: {"format": {"type": "json_schema", "schema": …}}` (no beta header), its
//! schema adapted to what Anthropic accepts (closed objects; bounds, lengths and patterns as
//! description notes), and the answer is a text block holding the JSON. Off (the default), the
//! form is not sent, and typed output's native mode runs in the tool mode.

use std::collections::{HashMap, HashSet};

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json, value::RawValue};
use serde_with::skip_serializing_none;

use super::wire::prelude::*;

const PROVIDER: Provider = Provider::Anthropic;

/// The `anthropic-version` header sent by default.
pub const API_VERSION: &str = "2023-06-01";

/// The `anthropic-beta` feature a request with Anthropic's tool search tool needs
/// (<https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool>).
pub const TOOL_SEARCH_BETA: &str = "advanced-tool-use-2025-11-20";

/// The key of a call's [`provider_metadata`](ToolCall::provider_metadata) that this wire
/// writes and reads.
const METADATA: &str = "anthropic";

/// Settings of an [`AnthropicClient`]: its [`Endpoint`], the default `max_tokens`, the API
/// version and beta features.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct AnthropicConfig {
    /// The key (sent as `x-api-key`; required), the API root without `/v1` (default
    /// `https://api.anthropic.com`), the model (default `claude-sonnet-4-5`), extra headers,
    /// timeouts and retries.
    pub endpoint: Endpoint,
    /// `max_tokens` when the request does not set it (Anthropic requires one). Default 4096.
    pub max_tokens: u32,
    /// The `anthropic-version` header. Default [`API_VERSION`].
    pub version: String,
    /// `anthropic-beta` features to turn on, if any.
    pub beta: Vec<String>,
    /// Whether a request's [`ResponseFormat::JsonSchema`]
    /// is sent as `output_config.format` (Anthropic's structured outputs), and so whether typed
    /// output's native mode is native here. Off by default: only recent models take it
    /// (Claude Sonnet 4.5, Opus 4.5, Haiku 4.5 and later); others answer 400.
    pub structured_outputs: bool,
}

/// The variables [`AnthropicConfig::from_env`] reads.
const ENV: EnvNames = EnvNames {
    api_key: &["ANTHROPIC_API_KEY"],
    base_url: "ANTHROPIC_BASE_URL",
    read_base_url: str::to_owned,
    model: "ANTHROPIC_MODEL",
};

impl Default for AnthropicConfig {
    fn default() -> Self {
        Self {
            endpoint: Endpoint::new("https://api.anthropic.com", "claude-sonnet-4-5"),
            max_tokens: 4096,
            version: String::from(API_VERSION),
            beta: Vec::new(),
            structured_outputs: false,
        }
    }
}

provider_config!(
    AnthropicConfig,
    ENV,
    /// The settings from the environment: `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL` and
    /// `ANTHROPIC_MODEL`.
);

impl AnthropicConfig {
    /// Sets the default `max_tokens`.
    #[must_use]
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Turns Anthropic's structured outputs on or off (see
    /// [`structured_outputs`](Self::structured_outputs)): on, typed output's
    /// [`OutputMode::Native`](crate::agent::OutputMode::Native) sends the output's schema as
    /// `output_config.format` instead of running in the tool mode.
    ///
    /// ```
    /// use tool_core::model::AnthropicConfig;
    ///
    /// let config = AnthropicConfig::default().structured_outputs(true);
    /// assert!(config.structured_outputs);
    /// ```
    #[must_use]
    pub fn structured_outputs(mut self, on: bool) -> Self {
        self.structured_outputs = on;
        self
    }

    /// Turns on an `anthropic-beta` feature.
    #[must_use]
    pub fn beta(mut self, feature: impl Into<String>) -> Self {
        self.beta.push(feature.into());
        self
    }
}

http_client!(
    /// A client of the Anthropic Messages API.
    AnthropicClient,
    Messages,
    AnthropicConfig
);

/// The Messages wire.
#[derive(Debug)]
pub(crate) struct Messages;

impl Wire for Messages {
    type Config = AnthropicConfig;
    type Decoder = AnthropicDecoder;
    const PROVIDER: Provider = PROVIDER;
    const KEY: KeyHeader = KeyHeader::Required {
        header: "x-api-key",
        missing: "no Anthropic API key: set ANTHROPIC_API_KEY or AnthropicConfig::api_key",
    };
    const ACCEPT_EVENT_STREAM: bool = true;

    fn urls(endpoint: &Endpoint) -> (String, String) {
        let url = endpoint.url("/v1/messages");
        (url.clone(), url)
    }

    fn own_headers(config: &AnthropicConfig) -> Vec<(&'static str, String)> {
        vec![("anthropic-version", config.version.clone())]
    }

    fn request_headers(
        config: &AnthropicConfig,
        request: &ChatRequest,
    ) -> Vec<(&'static str, String)> {
        let mut features: Vec<&str> = config.beta.iter().map(String::as_str).collect();
        if request.tools.native_search().is_some() && !features.contains(&TOOL_SEARCH_BETA) {
            features.push(TOOL_SEARCH_BETA);
        }
        // No `anthropic-beta` header when no beta feature is on.
        if features.is_empty() {
            Vec::new()
        } else {
            vec![("anthropic-beta", features.join(","))]
        }
    }

    fn structured_output(config: &AnthropicConfig) -> bool {
        config.structured_outputs
    }

    fn request_body(
        config: &AnthropicConfig,
        request: &ChatRequest,
        stream: bool,
    ) -> Result<Bytes, ProviderError> {
        request.tool_choice.check(&request.tools)?;
        request.tool_choice.reject_allowed("anthropic")?;
        let native = request.tools.native_search();
        // Anthropic's own search tool is offered, so the blocks of its searches can go back.
        let hosted = native.is_some_and(|(search, ..)| search != NativeSearch::Client);
        // The tools a `tool_reference` may name: those the request defines.
        let defined: HashSet<&str> = native
            .map(|(_, deferred, _)| {
                request
                    .tools
                    .names()
                    .into_iter()
                    .chain(deferred.names())
                    .collect()
            })
            .unwrap_or_default();
        let mut system: Vec<&str> = Vec::new();
        let mut messages: Vec<WireMessage> = Vec::new();
        for message in &request.messages {
            let (role, blocks) = match message {
                Message::System { content } => {
                    system.push(content);
                    continue;
                }
                Message::User { content } => {
                    ("user", vec![json!({ "type": "text", "text": content })])
                }
                Message::Assistant {
                    content,
                    tool_calls,
                    provider_metadata,
                } => (
                    "assistant",
                    assistant_blocks(content, tool_calls, provider_metadata.as_ref(), hosted),
                ),
                Message::Tool {
                    tool_call_id,
                    content,
                    is_error,
                    tool_references,
                    ..
                } => {
                    // The tools a search loaded, as references Anthropic expands into their
                    // definitions itself; the text listing them otherwise.
                    let references: Vec<Value> = tool_references
                        .iter()
                        .filter(|name| defined.contains(name.as_str()))
                        .map(|name| json!({ "type": "tool_reference", "tool_name": name }))
                        .collect();
                    let content = if references.is_empty() {
                        Value::from(content.as_str())
                    } else {
                        Value::Array(references)
                    };
                    let mut block = json!({
                        "type": "tool_result",
                        "tool_use_id": tool_call_id,
                        "content": content,
                    });
                    // `is_error` tells the model the call failed
                    // (<https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use>);
                    // it is optional and false by default, so it is sent only when set.
                    if *is_error {
                        block["is_error"] = Value::Bool(true);
                    }
                    ("user", vec![block])
                }
            };
            if blocks.is_empty() {
                continue;
            }
            // The results of parallel calls, and a user message after them, make one message.
            match messages.last_mut() {
                Some(last) if last.role == role => last.content.extend(blocks),
                _ => messages.push(WireMessage {
                    role,
                    content: blocks,
                }),
            }
        }
        let system = system.join("\n\n");
        let tools = (!request.tools.is_empty())
            .then(|| wire_tools(request, &referenced(&messages)))
            .transpose()?;
        ChatBody {
            model: &config.endpoint.model,
            messages,
            stream,
            tools: tools.as_deref(),
            own: OwnFields {
                max_tokens: request.settings.max_tokens.unwrap_or(config.max_tokens),
                system: (!system.is_empty()).then_some(system.as_str()),
                tool_choice: tools
                    .as_ref()
                    .and_then(|_| wire_tool_choice(&request.tool_choice)),
                temperature: request.settings.temperature,
                output_config: output_config(config, request.response_format.as_ref()),
            },
        }
        .write()
    }

    fn answer(body: &[u8]) -> Result<ChatResponse, ProviderError> {
        let reply: Reply = read_json(PROVIDER, body)?;
        #[cfg(feature = "otel")]
        super::wire::record_response(reply.id.as_deref(), reply.model.as_deref());
        let mut answer = Answer::default();
        let mut searches = Searches::default();
        let mut sink = Vec::new();
        for block in reply.content {
            match block {
                ReplyBlock::Text { text } => answer.text(&text, &mut sink),
                ReplyBlock::ToolUse { id, name, input } => {
                    let slot = answer.calls.push();
                    answer.calls.set_id(slot, &id);
                    answer.calls.set_name(slot, &name, &mut sink);
                    searches.attach(slot, &mut answer);
                    if !input.is_null() {
                        answer.calls.append(slot, &input.to_string(), &mut sink);
                    }
                }
                ReplyBlock::ServerToolUse { id, name, input } => {
                    searches.server_tool_use(&id, &name, input, &answer);
                }
                ReplyBlock::ToolSearchToolResult {
                    tool_use_id,
                    content,
                } => searches.result(&tool_use_id, content, &mut answer),
                ReplyBlock::Other => {}
            }
        }
        searches.finish(&mut answer);
        if let Some(usage) = reply.usage {
            answer.usage(usage.normalised());
        }
        let tool_searches = answer.take_searches();
        let (message, usage) = answer.into_message();
        let finish = finish_reason(reply.stop_reason.as_deref().unwrap_or("end_turn"));
        let mut response = ChatResponse::new(message, finish);
        response.usage = usage;
        response.tool_searches = tool_searches;
        Ok(response)
    }
}

/// The request's tools in Anthropic's format: the offered ones, and, when the request asks
/// for a native search, Anthropic's search tool in the place of the local one and the
/// deferred tools after them, each with `"defer_loading": true`, those a search loaded too
/// when the conversation sent references them (`referenced`)
/// (<https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool>; the
/// history's `tool_reference` blocks load them, and the tools stay the same from step to
/// step, so the prompt cache holds). A loaded tool nothing references (called or chosen
/// without a search) is sent in full among the offered tools: Anthropic could not load it.
fn wire_tools(
    request: &ChatRequest,
    referenced: &HashSet<&str>,
) -> Result<std::sync::Arc<RawValue>, ProviderError> {
    let offered = request.tools.provider_json(PROVIDER);
    let Some((search, deferred, local)) = request.tools.native_search() else {
        return Ok(offered);
    };
    let unreadable = |error: serde_json::Error| {
        ProviderError::Config(format!("cannot encode the tools: {error}"))
    };
    let search_tool = match search {
        // The local search tool stays, its results naming the tools it found.
        NativeSearch::Client => None,
        NativeSearch::Regex => Some(json!({
            "type": "tool_search_tool_regex_20251119",
            "name": "tool_search_tool_regex",
        })),
        _ => Some(json!({
            "type": "tool_search_tool_bm25_20251119",
            "name": "tool_search_tool_bm25",
        })),
    };
    let offered: Vec<Value> = serde_json::from_str(offered.get()).map_err(unreadable)?;
    let deferred_names: HashSet<&str> = deferred.names().into_iter().collect();
    // The loaded tools sent in full, not deferred.
    let mut full: HashSet<String> = HashSet::new();
    let mut tools = Vec::with_capacity(offered.len() + 1);
    let mut search_tool = search_tool;
    for tool in offered {
        let name = tool.get("name").and_then(Value::as_str);
        if search_tool.is_some() && name == Some(local) {
            tools.extend(search_tool.take());
        } else if let Some(name) = name.filter(|name| deferred_names.contains(name)) {
            // A loaded tool the history references stays deferred below: Anthropic expands
            // it from the history.
            if !referenced.contains(name) {
                full.insert(name.to_owned());
                tools.push(tool);
            }
        } else {
            tools.push(tool);
        }
    }
    tools.extend(search_tool);
    let deferred: Vec<Value> =
        serde_json::from_str(deferred.provider_json(PROVIDER).get()).map_err(unreadable)?;
    for mut tool in deferred {
        if tool
            .get("name")
            .and_then(Value::as_str)
            .is_some_and(|name| full.contains(name))
        {
            continue;
        }
        if let Some(fields) = tool.as_object_mut() {
            fields.insert("defer_loading".into(), Value::Bool(true));
        }
        tools.push(tool);
    }
    serde_json::value::to_raw_value(&tools)
        .map(std::sync::Arc::from)
        .map_err(unreadable)
}

/// The tools the `tool_reference` blocks of `messages` name: those of the tool results (a
/// client-side search's), and those of the `tool_search_tool_result` blocks sent back (a
/// search Anthropic ran).
fn referenced(messages: &[WireMessage]) -> HashSet<&str> {
    fn references(list: Option<&Value>) -> impl Iterator<Item = &str> {
        list.and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|reference| {
                reference.get("type").and_then(Value::as_str) == Some("tool_reference")
            })
            .filter_map(|reference| reference.get("tool_name").and_then(Value::as_str))
    }
    let mut names = HashSet::new();
    for block in messages.iter().flat_map(|message| &message.content) {
        match block.get("type").and_then(Value::as_str) {
            Some("tool_result") => names.extend(references(block.get("content"))),
            Some("tool_search_tool_result") => names.extend(references(
                block
                    .get("content")
                    .and_then(|content| content.get("tool_references")),
            )),
            _ => {}
        }
    }
    names
}

/// The content blocks of an assistant message: its text, its calls, and, when the request
/// offers Anthropic's search tool (`hosted`; the blocks name it), the blocks of the searches
/// Anthropic ran, before the call that followed each, or in their place in the text when no
/// call followed them.
fn assistant_blocks(
    content: &str,
    tool_calls: &[ToolCall],
    metadata: Option<&Value>,
    hosted: bool,
) -> Vec<Value> {
    let (trailing, at) = if hosted {
        trailing_blocks(metadata, content)
    } else {
        (&[][..], content.len())
    };
    let (before, after) = content.split_at(at);
    let mut blocks = Vec::new();
    // Anthropic rejects empty text blocks.
    if !before.is_empty() {
        blocks.push(json!({ "type": "text", "text": before }));
    }
    for call in tool_calls {
        if hosted {
            blocks.extend(kept_blocks(call).iter().cloned());
        }
        blocks.push(json!({
            "type": "tool_use",
            "id": call.id,
            "name": call.name,
            "input": arguments_object(&call.arguments),
        }));
    }
    blocks.extend(trailing.iter().cloned());
    if !after.is_empty() {
        blocks.push(json!({ "type": "text", "text": after }));
    }
    blocks
}

/// The blocks of Anthropic's searches kept with an answer as a whole (those no call followed),
/// and where in `content` they came (its end when that place is not in it).
fn trailing_blocks<'a>(metadata: Option<&'a Value>, content: &str) -> (&'a [Value], usize) {
    let kept = metadata.and_then(|metadata| metadata.get(METADATA));
    let blocks = kept
        .and_then(|kept| kept.get("blocks"))
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let at = kept
        .and_then(|kept| kept.get("at"))
        .and_then(Value::as_u64)
        .and_then(|at| usize::try_from(at).ok())
        .filter(|&at| content.is_char_boundary(at))
        .unwrap_or(content.len());
    (blocks, at)
}

/// The blocks of Anthropic's searches kept with `call`, to send back before it.
fn kept_blocks(call: &ToolCall) -> &[Value] {
    call.provider_metadata
        .as_ref()
        .and_then(|metadata| metadata.get(METADATA))
        .and_then(|kept| kept.get("blocks"))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The tool searches Anthropic ran in an answer: their blocks since the last call, and the
/// query of each `server_tool_use` by id.
#[derive(Default)]
struct Searches {
    pending: Vec<Value>,
    /// Where in the answer's text the pending blocks came (its length then, in bytes).
    pending_at: usize,
    queries: HashMap<String, String>,
}

impl Searches {
    /// A `server_tool_use` block, after the text of `answer`; kept when it is a tool search
    /// (other server tools are read past).
    fn server_tool_use(&mut self, id: &str, name: &str, input: Value, answer: &Answer) {
        if !name.starts_with("tool_search_tool") {
            return;
        }
        if self.pending.is_empty() {
            self.pending_at = answer.text_len();
        }
        // The BM25 tool takes a `query`; the regex tool's input has been seen as `query` and
        // as `pattern`.
        let query = ["query", "pattern"]
            .iter()
            .find_map(|key| input.get(key).and_then(Value::as_str))
            .unwrap_or_default();
        self.queries.insert(id.to_owned(), query.to_owned());
        let input = if input.is_object() { input } else { json!({}) };
        self.pending.push(json!({
            "type": "server_tool_use",
            "id": id,
            "name": name,
            "input": input,
        }));
    }

    /// A `tool_search_tool_result` block: kept, and its `tool_reference`s reported as a
    /// search (a `tool_search_tool_result_error` loads nothing).
    fn result(&mut self, tool_use_id: &str, content: Value, answer: &mut Answer) {
        let tools: Vec<String> = content
            .get("tool_references")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|reference| reference.get("tool_name").and_then(Value::as_str))
            .map(str::to_owned)
            .collect();
        let query = self.queries.remove(tool_use_id).unwrap_or_default();
        answer.search(ProviderToolSearch::new(query, tools));
        self.pending.push(json!({
            "type": "tool_search_tool_result",
            "tool_use_id": tool_use_id,
            "content": content,
        }));
    }

    /// Keeps the blocks since the last call with the call in `slot`.
    fn attach(&mut self, slot: usize, answer: &mut Answer) {
        if !self.pending.is_empty() {
            let blocks = Value::Array(std::mem::take(&mut self.pending));
            answer
                .calls
                .set_metadata(slot, json!({ METADATA: { "blocks": blocks } }));
        }
    }

    /// Ends the answer: the blocks no call followed (a search, then text alone) are kept with
    /// the answer as a whole, with where in its text they came.
    fn finish(&mut self, answer: &mut Answer) {
        if !self.pending.is_empty() {
            let blocks = Value::Array(std::mem::take(&mut self.pending));
            answer.set_metadata(json!({ METADATA: { "blocks": blocks, "at": self.pending_at } }));
        }
    }
}

/// What a Messages request sends beside the [`ChatBody`] fields.
#[skip_serializing_none]
#[derive(Serialize)]
struct OwnFields<'a> {
    max_tokens: u32,
    system: Option<&'a str>,
    tool_choice: Option<Value>,
    temperature: Option<f32>,
    output_config: Option<Value>,
}

/// The `output_config` of a request that asks for a schema, when structured outputs are on
/// (<https://platform.claude.com/docs/en/build-with-claude/structured-outputs>). The Messages
/// API has no JSON mode: [`ResponseFormat::JsonObject`] sends nothing.
fn output_config(config: &AnthropicConfig, format: Option<&ResponseFormat>) -> Option<Value> {
    match format? {
        ResponseFormat::JsonSchema { name, schema } if config.structured_outputs => Some(json!({
            "format": {
                "type": "json_schema",
                "schema": crate::schema::anthropic_output_schema(name, schema),
            }
        })),
        _ => None,
    }
}

/// The `tool_choice` of a request that offers tools
/// (<https://docs.anthropic.com/en/api/messages#body-tool-choice>); `Auto` is the API's default
/// and is not sent. `None` is sent rather than the tools left out, because a request whose
/// messages hold `tool_use` or `tool_result` blocks must define tools.
fn wire_tool_choice(choice: &ToolChoice) -> Option<Value> {
    match choice {
        // `Allowed` is refused before the body is written.
        ToolChoice::Auto | ToolChoice::Allowed { .. } => None,
        ToolChoice::None => Some(json!({ "type": "none" })),
        ToolChoice::Required => Some(json!({ "type": "any" })),
        ToolChoice::Tool(name) => Some(json!({ "type": "tool", "name": name })),
    }
}

#[derive(Serialize)]
struct WireMessage {
    role: &'static str,
    content: Vec<Value>,
}

fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "tool_use" => FinishReason::ToolCalls,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "refusal" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// A non-streamed message.
#[derive(Deserialize)]
struct Reply {
    #[cfg(feature = "otel")]
    #[serde(default)]
    id: Option<String>,
    #[cfg(feature = "otel")]
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    content: Vec<ReplyBlock>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ReplyBlock {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        /// A `Value`: `RawValue` cannot sit inside an internally tagged enum.
        #[serde(default)]
        input: Value,
    },
    ServerToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    ToolSearchToolResult {
        tool_use_id: String,
        #[serde(default)]
        content: Value,
    },
    #[serde(other)]
    Other,
}

/// `usage` (<https://docs.anthropic.com/en/api/messages#response-usage>), in a message, in
/// `message_start` and (cumulative, any field may be left out) in `message_delta`.
// The field names are the wire's.
#[allow(clippy::struct_field_names)]
#[derive(Deserialize, Clone, Copy, Default)]
struct WireUsage {
    /// The input tokens after the last cache breakpoint: neither read from nor written to
    /// the cache.
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    /// Input tokens read from the cache, in addition to `input_tokens`.
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    /// Input tokens written to the cache, in addition to `input_tokens`.
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

impl WireUsage {
    /// Takes the counts `later` carries; the others stay.
    fn update(&mut self, later: Self) {
        self.input_tokens = later.input_tokens.or(self.input_tokens);
        self.output_tokens = later.output_tokens.or(self.output_tokens);
        self.cache_read_input_tokens = later
            .cache_read_input_tokens
            .or(self.cache_read_input_tokens);
        self.cache_creation_input_tokens = later
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
    }

    /// The counts in [`Usage`]'s meaning: the cached tokens are part of the input.
    fn normalised(&self) -> Usage {
        let read = self.cache_read_input_tokens.unwrap_or_default();
        let written = self.cache_creation_input_tokens.unwrap_or_default();
        let input = self
            .input_tokens
            .unwrap_or_default()
            .saturating_add(read)
            .saturating_add(written);
        Usage::new(input, self.output_tokens.unwrap_or_default())
            .cache_read_tokens(read)
            .cache_write_tokens(written)
    }
}

/// One streamed event, read by its JSON `type`.
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(borrow)]
    r#type: Text<'a>,
    #[serde(default)]
    index: u64,
    #[serde(default)]
    message: Option<StartMessage>,
    /// Read as a [`Block`]; kept whole for a search result.
    #[serde(default, borrow)]
    content_block: Option<&'a RawValue>,
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct StartMessage {
    #[cfg(feature = "otel")]
    #[serde(default)]
    id: Option<String>,
    #[cfg(feature = "otel")]
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(borrow)]
    r#type: Text<'a>,
    #[serde(default, borrow)]
    text: Option<Text<'a>>,
    #[serde(default, borrow)]
    id: Option<Text<'a>>,
    #[serde(default, borrow)]
    name: Option<Text<'a>>,
    #[serde(default, borrow)]
    input: Option<&'a RawValue>,
    #[serde(default, borrow)]
    tool_use_id: Option<Text<'a>>,
    #[serde(default, borrow)]
    content: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    r#type: Option<Text<'a>>,
    #[serde(default, borrow)]
    text: Option<Text<'a>>,
    #[serde(default, borrow)]
    partial_json: Option<Text<'a>>,
    #[serde(default, borrow)]
    stop_reason: Option<Text<'a>>,
}

#[derive(Default)]
pub(crate) struct AnthropicDecoder {
    answer: Answer,
    /// The client tool calls by content block index.
    tool_blocks: HashMap<u64, usize>,
    /// The `input` of a `tool_use` start, used if no `input_json_delta` follows.
    start_inputs: HashMap<usize, String>,
    finish: Option<FinishReason>,
    /// The counts so far, as Anthropic reports them.
    usage: WireUsage,
    /// The `server_tool_use` blocks by content block index: id, name and input so far.
    server_blocks: HashMap<u64, (String, String, String)>,
    searches: Searches,
}

impl AnthropicDecoder {
    fn event(
        &mut self,
        event: Event<'_>,
        out: &mut Vec<ModelEvent>,
    ) -> Result<bool, ProviderError> {
        match &*event.r#type {
            "message_start" => {
                #[cfg(feature = "otel")]
                if let Some(message) = &event.message {
                    super::wire::record_response(message.id.as_deref(), message.model.as_deref());
                }
                if let Some(usage) = event.message.and_then(|m| m.usage) {
                    self.usage = usage;
                    self.answer.usage(self.usage.normalised());
                }
            }
            "content_block_start" => {
                if let Some(raw) = event.content_block {
                    let block: Block<'_> = serde_json::from_str(raw.get()).map_err(|error| {
                        ProviderError::Protocol {
                            provider: PROVIDER,
                            message: format!("cannot read a content block: {error}"),
                        }
                    })?;
                    self.block_start(event.index, block, out)?;
                }
            }
            "content_block_delta" => {
                if let Some(delta) = event.delta {
                    self.block_delta(event.index, delta, out);
                }
            }
            "content_block_stop" => {
                if let Some(&slot) = self.tool_blocks.get(&event.index) {
                    self.flush_start_input(slot, out);
                    self.answer.calls.end(slot, out);
                } else if let Some((id, name, input)) = self.server_blocks.remove(&event.index) {
                    let input = serde_json::from_str(&input).unwrap_or_else(|_| json!({}));
                    self.searches
                        .server_tool_use(&id, &name, input, &self.answer);
                }
            }
            "message_delta" => {
                if let Some(reason) = event.delta.and_then(|d| d.stop_reason) {
                    self.finish = Some(finish_reason(&reason));
                }
                if let Some(usage) = event.usage {
                    self.usage.update(usage);
                    self.answer.usage(self.usage.normalised());
                }
            }
            "message_stop" => {
                let finish = self.finish.take().unwrap_or(FinishReason::Stop);
                self.searches.finish(&mut self.answer);
                if finish != FinishReason::Length {
                    let slots: Vec<usize> = self.tool_blocks.values().copied().collect();
                    for slot in slots {
                        self.flush_start_input(slot, out);
                    }
                }
                std::mem::take(&mut self.answer).done(finish, out);
                return Ok(true);
            }
            "error" => {
                let error = event.error.unwrap_or(Value::Null);
                let text = json!({ "error": error }).to_string();
                return Err(stream_error(PROVIDER, &text));
            }
            // `ping`, and event types added after this was written.
            _ => {}
        }
        Ok(false)
    }

    fn block_start(
        &mut self,
        index: u64,
        block: Block<'_>,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ProviderError> {
        match &*block.r#type {
            "text" => {
                if let Some(text) = block.text {
                    self.answer.text(&text, out);
                }
            }
            "tool_use" => {
                let calls = &mut self.answer.calls;
                let slot = calls.push();
                calls.set_id(slot, block.id.as_deref().unwrap_or_default());
                calls.set_name(slot, block.name.as_deref().unwrap_or_default(), out);
                self.searches.attach(slot, &mut self.answer);
                self.tool_blocks.insert(index, slot);
                let input = block.input.map(RawValue::get);
                if let Some(input) = input.filter(|input| !is_empty_object(input)) {
                    self.start_inputs.insert(slot, input.to_owned());
                }
            }
            // A server tool's input comes as `input_json_delta` fragments, as a call's does.
            "server_tool_use" => {
                let input = block
                    .input
                    .map(RawValue::get)
                    .filter(|input| !is_empty_object(input))
                    .unwrap_or_default();
                self.server_blocks.insert(
                    index,
                    (
                        block.id.as_deref().unwrap_or_default().to_owned(),
                        block.name.as_deref().unwrap_or_default().to_owned(),
                        input.to_owned(),
                    ),
                );
            }
            "tool_search_tool_result" => {
                let content = match block.content {
                    Some(raw) => serde_json::from_str(raw.get()).map_err(|error| {
                        ProviderError::Protocol {
                            provider: PROVIDER,
                            message: format!("cannot read a tool search result: {error}"),
                        }
                    })?,
                    None => Value::Null,
                };
                let id = block.tool_use_id.as_deref().unwrap_or_default().to_owned();
                self.searches.result(&id, content, &mut self.answer);
            }
            // Other server tools, their results, thinking: not calls for the client to run.
            _ => {}
        }
        Ok(())
    }

    fn block_delta(&mut self, index: u64, delta: Delta<'_>, out: &mut Vec<ModelEvent>) {
        match delta.r#type.as_deref() {
            Some("text_delta") => {
                if let Some(text) = delta.text {
                    self.answer.text(&text, out);
                }
            }
            Some("input_json_delta") => {
                if let (Some(server), Some(fragment)) = (
                    self.server_blocks.get_mut(&index),
                    delta.partial_json.as_ref(),
                ) {
                    server.2.push_str(fragment);
                } else if let (Some(&slot), Some(fragment)) =
                    (self.tool_blocks.get(&index), delta.partial_json)
                {
                    self.start_inputs.remove(&slot);
                    self.answer
                        .calls
                        .append_shared(slot, SharedStr::from(fragment.0), out);
                }
            }
            _ => {}
        }
    }

    fn flush_start_input(&mut self, slot: usize, out: &mut Vec<ModelEvent>) {
        if let Some(input) = self.start_inputs.remove(&slot) {
            self.answer.calls.append(slot, &input, out);
        }
    }
}

fn is_empty_object(json: &str) -> bool {
    let inner = json.trim();
    inner
        .strip_prefix('{')
        .and_then(|rest| rest.strip_suffix('}'))
        .is_some_and(|rest| rest.trim().is_empty())
}

impl Decoder for AnthropicDecoder {
    fn open_call(&self) -> Option<&str> {
        self.answer.open_call()
    }

    fn feed(&mut self, frame: Frame, out: &mut Vec<ModelEvent>) -> Result<bool, ProviderError> {
        let sse = sse_event(PROVIDER, frame)?;
        let event: Event<'_> = serde_json::from_str(&sse.data)
            .map_err(|error| unreadable(PROVIDER, sse.unterminated, "an event", &error))?;
        self.event(event, out)
    }

    fn finish(&mut self, _out: &mut Vec<ModelEvent>) -> Result<(), ProviderError> {
        Err(truncated(PROVIDER))
    }
}
