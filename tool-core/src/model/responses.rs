//! OpenAI Responses (`POST {base}/responses`,
//! <https://platform.openai.com/docs/api-reference/responses>): OpenAI's own API for agents,
//! also served by llama.cpp's server, vLLM and Ollama.
//!
//! **Requests.** The leading system messages become `instructions`; the rest of the
//! conversation becomes `input` items: `message` items for user and assistant text,
//! `function_call` items echoing the model's calls by `call_id`, and `function_call_output`
//! items with the results (the format has no error flag, so a failed call is told by its error
//! text alone, as in Chat Completions). Function tools are sent flat
//! (`{"type":"function","name","description","parameters","strict"}`) with `strict` always
//! set, because the Responses API takes an omitted `strict` as `true`: `false` unless
//! [`ResponsesConfig::strict_tools`] asks for OpenAI's strict schemas. [`ToolChoice`] is sent in
//! its Responses form. By default nothing is stored on the server (`store: false`), and a
//! reasoning model is asked for its reasoning in encrypted form
//! (`include: ["reasoning.encrypted_content"]`), so that it can be sent back on the next step
//! without server-side state.
//!
//! **Answers.** Output items are read in order: `message` text (and `refusal` text, which ends
//! the answer as [`FinishReason::ContentFilter`]), and `function_call` items, whose `call_id`
//! becomes the [`ToolCall`]'s id (the item's own `id` is kept beside it). The other items the
//! model produced before a call (`reasoning` items, and the `message` items between them) are
//! kept verbatim in the call's [`provider_metadata`](ToolCall::provider_metadata) under
//! `"openai_responses"`, with the item's id and the response's id, and are sent back before
//! the call on the next request: that is how a reasoning model keeps its reasoning between
//! tool calls. The Chat Completions, Anthropic, Gemini and Ollama clients ignore that metadata,
//! so a conversation moves between wires freely; reasoning that came with a text-only answer
//! is not kept (OpenAI drops reasoning of earlier turns anyway). Usage reports cached and
//! reasoning tokens; status `incomplete` ends the answer with its reason
//! (`max_output_tokens` is [`FinishReason::Length`], `content_filter`
//! [`FinishReason::ContentFilter`]), and `failed` is the provider's error.
//!
//! **Streaming** is SSE whose events name their `type` in the JSON: `response.created`,
//! `response.output_item.added` / `.done`, `response.output_text.delta`,
//! `response.refusal.delta`, `response.function_call_arguments.delta` / `.done`, and one of the
//! terminal `response.completed`, `response.incomplete`, `response.failed` or `error`. Events
//! are matched to their item by `output_index`, or by `item_id` for servers that send no index
//! (llama.cpp). The whole text or arguments that `.done` events and `response.completed`
//! repeat are only read when no deltas came before them, so a long call is decoded once.
//!
//! **Format.** The client's [`provider`](super::ChatModel::provider) is [`Provider::OpenAi`]:
//! its tools are OpenAI's function definitions under the same schema rules, only laid out
//! flat, and its errors name `openai`.
//!
//! **Tool search** (<https://developers.openai.com/api/docs/guides/tools-tool-search>): when
//! the request asks for a native search ([`RequestTools::with_native_search`]), OpenAI's hosted
//! `{"type": "tool_search"}` takes the place of the local search tool and the deferred
//! functions follow the offered tools with `"defer_loading": true`. The model's searches come
//! back as `tool_search_call` and `tool_search_output` items (the latter listing the loaded
//! tools' definitions); each search is reported as a [`ModelEvent::ToolSearch`], and the items
//! are kept with the next call, like reasoning, and sent back before it in the requests that
//! offer the hosted `tool_search` tool (with the answer as a whole when text alone follows
//! them). With [`NativeSearch::Client`] the search is client-executed: `{"type":
//! "tool_search", "execution": "client"}` with the local search tool's description and
//! parameters takes that tool's place, the model's `tool_search_call` item is reported as a
//! call of the local tool (its `call_id` the call's id, its `arguments` the call's, the item
//! kept to go back as it came), and the call's result goes back as a `tool_search_output` item
//! (`"execution": "client"`, the same `call_id`, `"status": "completed"`) holding the
//! definitions of the result's [`tool_references`](Message::Tool), marked `defer_loading`. In a
//! request without that search, the call and its result go as a function call and its output.
//! A loaded tool stays deferred only while a `tool_search_output` item of the conversation
//! lists it; one loaded without a search is sent in full, so that OpenAI accepts its call or a
//! `tool_choice` naming it.
//!
//! **Stored responses.** With [`ResponsesConfig::store`], responses are kept by OpenAI, and a
//! request that continues from an answer with tool calls sends `previous_response_id` and only
//! the messages after that answer.

use std::collections::{HashMap, HashSet};

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, value::RawValue};
use serde_with::skip_serializing_none;

use super::{RequestTools, ToolCall, wire::decode::decode_whole, wire::prelude::*};
use crate::schema::{FormatOptions, format_tool};

const PROVIDER: Provider = Provider::OpenAi;

/// The key of a call's [`provider_metadata`](ToolCall::provider_metadata) that this wire
/// writes and reads.
const METADATA: &str = "openai_responses";

/// Settings of a [`ResponsesClient`]: its [`Endpoint`], whether responses are stored, and how
/// tools and reasoning are sent.
///
/// ```
/// use tool_core::model::ResponsesConfig;
///
/// let config = ResponsesConfig::default().model("gpt-5-mini");
/// assert!(!config.store);
/// assert!(config.sends_encrypted_reasoning());
/// assert!(!ResponsesConfig::default().model("gpt-4o-mini").sends_encrypted_reasoning());
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ResponsesConfig {
    /// The key (sent as `Authorization: Bearer …`; none for local servers), the API root up to
    /// and including the version (default `https://api.openai.com/v1`), the model (default
    /// `gpt-4o-mini`), extra headers, timeouts and retries.
    pub endpoint: Endpoint,
    /// Let OpenAI store the responses (`store: true`) and continue from a stored answer with
    /// `previous_response_id`. Default off: every request carries the whole conversation.
    pub store: bool,
    /// Ask for the model's reasoning in encrypted form
    /// (`include: ["reasoning.encrypted_content"]`) when responses are not stored: `None`
    /// (the default) does so for OpenAI's reasoning models (`o1`, `o3`, `o4-mini`, `gpt-5`
    /// and its variants but `gpt-5-chat`, `codex` models), which OpenAI requires, since the
    /// other models refuse the option.
    pub encrypted_reasoning: Option<bool>,
    /// Send the tools with OpenAI's strict schemas (`strict: true`); a tool whose schema cannot
    /// be strict is sent with `strict: false`. Default off.
    pub strict_tools: bool,
    /// `parallel_tool_calls`, sent with tools when set; `None` leaves the API's default
    /// (parallel calls allowed).
    pub parallel_tool_calls: Option<bool>,
}

impl Default for ResponsesConfig {
    fn default() -> Self {
        Self {
            endpoint: Endpoint::new("https://api.openai.com/v1", "gpt-4o-mini"),
            store: false,
            encrypted_reasoning: None,
            strict_tools: false,
            parallel_tool_calls: None,
        }
    }
}

provider_config!(
    ResponsesConfig,
    ENV,
    /// The settings from the environment: `OPENAI_API_KEY`, `OPENAI_BASE_URL` and
    /// `OPENAI_MODEL` (each optional; the defaults fill the gaps), the variables of the Chat
    /// Completions client.
);

use super::openai::ENV;

impl ResponsesConfig {
    /// Turns stored responses (`store: true` and `previous_response_id`) on or off.
    #[must_use]
    pub fn store(mut self, store: bool) -> Self {
        self.store = store;
        self
    }

    /// Asks for encrypted reasoning always (`Some(true)`), never (`Some(false)`), or for
    /// OpenAI's reasoning models only (`None`).
    #[must_use]
    pub fn encrypted_reasoning(mut self, encrypted_reasoning: Option<bool>) -> Self {
        self.encrypted_reasoning = encrypted_reasoning;
        self
    }

    /// Turns strict tool schemas on or off.
    #[must_use]
    pub fn strict_tools(mut self, strict_tools: bool) -> Self {
        self.strict_tools = strict_tools;
        self
    }

    /// Sets `parallel_tool_calls`.
    #[must_use]
    pub fn parallel_tool_calls(mut self, parallel_tool_calls: bool) -> Self {
        self.parallel_tool_calls = Some(parallel_tool_calls);
        self
    }

    /// Whether requests ask for encrypted reasoning: never when responses are stored, and
    /// otherwise as [`encrypted_reasoning`](Self::encrypted_reasoning) says.
    pub fn sends_encrypted_reasoning(&self) -> bool {
        !self.store
            && self
                .encrypted_reasoning
                .unwrap_or_else(|| is_reasoning_model(&self.endpoint.model))
    }
}

/// Whether `model` is one of OpenAI's reasoning models, which accept (and, without stored
/// responses, need) `include: ["reasoning.encrypted_content"]`.
fn is_reasoning_model(model: &str) -> bool {
    let model = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    let o_series = model
        .strip_prefix('o')
        .is_some_and(|rest| rest.chars().next().is_some_and(|c| c.is_ascii_digit()));
    let gpt5 = model.starts_with("gpt-5") && !model.contains("chat");
    o_series || gpt5 || model.contains("codex")
}

http_client!(
    /// A client of the OpenAI Responses API (`POST /v1/responses`); see
    /// [the module documentation](crate::model::responses) for what it sends and reads.
    ResponsesClient,
    Responses,
    ResponsesConfig
);

/// The Responses wire.
#[derive(Debug)]
pub(crate) struct Responses;

impl Wire for Responses {
    type Config = ResponsesConfig;
    type Decoder = ResponsesDecoder;
    const PROVIDER: Provider = PROVIDER;
    const KEY: KeyHeader = KeyHeader::Bearer;
    const ACCEPT_EVENT_STREAM: bool = true;

    fn urls(endpoint: &Endpoint) -> (String, String) {
        let url = endpoint.url("/responses");
        (url.clone(), url)
    }

    fn request_body(
        config: &ResponsesConfig,
        request: &ChatRequest,
        stream: bool,
    ) -> Result<Bytes, ProviderError> {
        request.tool_choice.check(&request.tools)?;
        let messages = &request.messages;
        let leading = messages
            .iter()
            .take_while(|message| matches!(message, Message::System { .. }))
            .count();
        let instructions = (leading > 0).then(|| {
            messages[..leading]
                .iter()
                .map(Message::content)
                .collect::<Vec<_>>()
                .join("\n\n")
        });
        let previous = config
            .store
            .then(|| previous_response(&messages[leading..]))
            .flatten();
        let (previous_response_id, stored, rest) = match previous {
            Some((id, after)) => (
                Some(id),
                &messages[leading..leading + after],
                &messages[leading + after..],
            ),
            None => (None, &[][..], &messages[leading..]),
        };
        let tools_json = (!request.tools.is_empty())
            .then(|| tools_text(config, &request.tools))
            .transpose()?;
        let nested = tools_json.as_deref().map(nested_tools).transpose()?;
        let native = request.tools.native_search();
        let deferred_json = native.map(|(_, deferred, _)| deferred.provider_json(PROVIDER));
        let deferred = deferred_json.as_deref().map(nested_tools).transpose()?;
        let client = native.is_some_and(|(search, ..)| search == NativeSearch::Client);
        let mut replay = Replay {
            // A hosted search's items go back only beside the hosted `tool_search` they name.
            hosted: native.is_some() && !client,
            client,
            definitions: nested
                .iter()
                .chain(&deferred)
                .flatten()
                .map(|tool| (&*tool.function.name, tool))
                .collect(),
            client_calls: HashSet::new(),
        };
        // The items of a stored response's conversation are not sent, but their searches
        // reference tools all the same.
        let mut input = Vec::new();
        for message in stored {
            input_items(message, &mut replay, &mut input);
        }
        let mut referenced = HashSet::new();
        add_references(&input, &mut referenced);
        input.clear();
        for message in rest {
            input_items(message, &mut replay, &mut input);
        }
        add_references(&input, &mut referenced);
        let tools = nested.as_ref().map(|nested| {
            let local = native.map(|(_, _, local)| local);
            wire_tools(nested, deferred.as_deref(), local, client, &referenced)
        });
        let body = ResponsesBody {
            model: &config.endpoint.model,
            instructions,
            input,
            stream,
            store: config.store,
            include: config
                .sends_encrypted_reasoning()
                .then_some(["reasoning.encrypted_content"]),
            previous_response_id,
            tool_choice: tools
                .as_ref()
                .and_then(|_| wire_tool_choice(&request.tool_choice)),
            parallel_tool_calls: tools.as_ref().and(config.parallel_tool_calls),
            tools,
            temperature: request.settings.temperature,
            max_output_tokens: request.settings.max_tokens,
            text: request.response_format.as_ref().map(wire_text_format),
        };
        write_json(&body)
    }

    fn answer(body: &[u8]) -> Result<ChatResponse, ProviderError> {
        whole_answer(ResponsesDecoder::default(), body)
    }

    fn answer_to(request: &ChatRequest, body: &[u8]) -> Result<ChatResponse, ProviderError> {
        whole_answer(Self::decoder(request), body)
    }

    fn decoder(request: &ChatRequest) -> ResponsesDecoder {
        let client_search = match request.tools.native_search() {
            Some((NativeSearch::Client, _, local)) => Some(local.to_owned()),
            _ => None,
        };
        ResponsesDecoder {
            client_search,
            ..ResponsesDecoder::default()
        }
    }
}

/// A whole response read by `decoder`, as the stream's last event, which carries it too.
fn whole_answer(decoder: ResponsesDecoder, body: &[u8]) -> Result<ChatResponse, ProviderError> {
    let body = String::from_utf8_lossy(body);
    let frame = Frame::Event {
        name: String::from("message"),
        data: format!(r#"{{"type":"response.completed","response":{body}}}"#),
        unterminated: false,
    };
    decode_whole(decoder, frame, PROVIDER)
}

/// The request's tools: the offered ones, flat, and, with a native search (`local` the local
/// search tool's name), OpenAI's `tool_search` in the place of that tool (client-executed when
/// `client`) and the `deferred` functions after them, marked `defer_loading`.
///
/// A loaded tool the history's `tool_search_output` items reference (`referenced`) stays
/// deferred: OpenAI loads it from them, and the tools stay the same from step to step. One
/// nothing references (called or chosen without a search) is sent in full in its place among
/// the offered tools: OpenAI could not load it.
fn wire_tools<'a>(
    nested: &'a [NestedTool<'a>],
    deferred: Option<&'a [NestedTool<'a>]>,
    local: Option<&str>,
    client: bool,
    referenced: &HashSet<&str>,
) -> Vec<WireTool<'a>> {
    let mut tools: Vec<WireTool<'_>> = Vec::new();
    let mut replaced = false;
    let deferred_names: HashSet<&str> = deferred
        .into_iter()
        .flatten()
        .map(|tool| &*tool.function.name)
        .collect();
    let mut full: HashSet<&str> = HashSet::new();
    for tool in nested {
        let name = &*tool.function.name;
        if deferred_names.contains(name) {
            if referenced.contains(name) {
                continue;
            }
            full.insert(name);
        }
        if local.is_some() && !replaced && Some(name) == local {
            tools.push(WireTool::search(client.then_some(tool)));
            replaced = true;
        } else {
            tools.push(WireTool::Function(FlatTool::from(tool)));
        }
    }
    if let Some(deferred) = deferred {
        if !replaced {
            tools.push(WireTool::search(None));
        }
        tools.extend(
            deferred
                .iter()
                .filter(|tool| !full.contains(&*tool.function.name))
                .map(|tool| WireTool::Function(deferred_tool(tool))),
        );
    }
    tools
}

/// Adds the tools the `tool_search_output` items of `input` load to `names`.
fn add_references<'a>(input: &[Input<'a>], names: &mut HashSet<&'a str>) {
    for item in input {
        match item {
            Input::SearchOutput { tools, .. } => names.extend(tools.iter().map(|tool| tool.name)),
            Input::Verbatim(item)
                if item.get("type").and_then(Value::as_str) == Some("tool_search_output") =>
            {
                names.extend(
                    item.get("tools")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|tool| tool.get("name").and_then(Value::as_str)),
                );
            }
            _ => {}
        }
    }
}

/// A deferred function as a request sends it: flat, marked `"defer_loading": true`.
fn deferred_tool<'a>(tool: &'a NestedTool<'a>) -> FlatTool<'a> {
    let mut flat = FlatTool::from(tool);
    flat.defer_loading = Some(true);
    flat
}

/// What the input items of a request's conversation depend on.
struct Replay<'a> {
    /// The request offers the hosted `tool_search`: its items go back.
    hosted: bool,
    /// The request offers the client-executed `tool_search`: the calls of the local search
    /// that came as `tool_search_call` items go back as such, and their results as
    /// `tool_search_output` items.
    client: bool,
    /// The request's tools by name, offered and deferred, for the `tool_search_output` items.
    definitions: HashMap<&'a str, &'a NestedTool<'a>>,
    /// The client-executed searches sent back so far, by call id.
    client_calls: HashSet<&'a str>,
}

/// A request body (<https://platform.openai.com/docs/api-reference/responses/create>).
#[skip_serializing_none]
#[derive(Serialize)]
struct ResponsesBody<'a> {
    model: &'a str,
    instructions: Option<String>,
    input: Vec<Input<'a>>,
    stream: bool,
    store: bool,
    include: Option<[&'static str; 1]>,
    previous_response_id: Option<&'a str>,
    tools: Option<Vec<WireTool<'a>>>,
    tool_choice: Option<Value>,
    parallel_tool_calls: Option<bool>,
    temperature: Option<f32>,
    max_output_tokens: Option<u32>,
    text: Option<Value>,
}

/// The `text` of a request that asks for structured output: its `format`
/// (<https://platform.openai.com/docs/api-reference/responses/create#responses-create-text>).
fn wire_text_format(format: &ResponseFormat) -> Value {
    let format = match format {
        ResponseFormat::JsonSchema { name, schema } => {
            let (schema, strict) = ResponseFormat::openai_schema(name, schema);
            serde_json::json!({
                "type": "json_schema",
                "name": name,
                "schema": schema,
                "strict": strict,
            })
        }
        _ => serde_json::json!({ "type": "json_object" }),
    };
    serde_json::json!({ "format": format })
}

/// One `input` item.
#[derive(Serialize)]
#[serde(untagged)]
enum Input<'a> {
    /// A `message` item with text content.
    Message {
        r#type: &'static str,
        role: &'static str,
        content: &'a str,
    },
    /// A `function_call` item: a call the model made, echoed.
    Call {
        r#type: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<&'a str>,
        call_id: &'a str,
        name: &'a str,
        arguments: &'a str,
    },
    /// A `function_call_output` item: a call's result.
    Output {
        r#type: &'static str,
        call_id: &'a str,
        output: &'a str,
    },
    /// An output item sent back as it came (reasoning, and the messages beside it).
    Verbatim(&'a Value),
    /// A `tool_search_output` item: the result of a client-executed search, the definitions of
    /// the tools it loads.
    SearchOutput {
        r#type: &'static str,
        execution: &'static str,
        call_id: &'a str,
        status: &'static str,
        tools: Vec<FlatTool<'a>>,
    },
}

fn message_item<'a>(role: &'static str, content: &'a str) -> Input<'a> {
    Input::Message {
        r#type: "message",
        role,
        content,
    }
}

/// Appends the `input` items of one message.
fn input_items<'a>(message: &'a Message, replay: &mut Replay<'a>, input: &mut Vec<Input<'a>>) {
    match message {
        Message::System { content } => input.push(message_item("system", content)),
        Message::User { content } => input.push(message_item("user", content)),
        Message::Assistant {
            content,
            tool_calls,
            provider_metadata,
        } => {
            let trailing = provider_metadata
                .as_ref()
                .and_then(|metadata| metadata.get(METADATA))
                .and_then(Value::as_object);
            assistant_items(content, tool_calls, trailing, replay, input);
        }
        Message::Tool {
            tool_call_id,
            content,
            tool_references,
            ..
        } => {
            if replay.client_calls.contains(tool_call_id.as_str()) {
                // The tools the search found, whose definitions the request has.
                let tools = tool_references
                    .iter()
                    .filter_map(|name| replay.definitions.get(name.as_str()))
                    .map(|tool| deferred_tool(tool))
                    .collect();
                input.push(Input::SearchOutput {
                    r#type: "tool_search_output",
                    execution: "client",
                    call_id: tool_call_id,
                    status: "completed",
                    tools,
                });
            } else {
                input.push(Input::Output {
                    r#type: "function_call_output",
                    call_id: tool_call_id,
                    output: content,
                });
            }
        }
    }
}

/// The items of an assistant message: the output items kept with its calls (reasoning, and
/// the messages between them) in their places, and those kept with the answer as a whole
/// (a hosted search no call followed) after them, its text unless those items hold it, and its
/// calls. A call's own item id is sent only beside the items kept with it: OpenAI refuses a
/// call item with an id whose reasoning is missing. A call of the local search that came as a
/// client-executed `tool_search_call` goes back as that item when the request offers the
/// client-executed search, and as a function call otherwise.
fn assistant_items<'a>(
    content: &'a str,
    calls: &'a [ToolCall],
    trailing: Option<&'a Map<String, Value>>,
    replay: &mut Replay<'a>,
    input: &mut Vec<Input<'a>>,
) {
    // The calls with their kept items, then the items no call followed (kept only for a
    // hosted search, so sent only beside it).
    let groups: Vec<KeptGroup<'a>> = calls
        .iter()
        .map(|call| (Some(call), call_metadata(call)))
        .chain(
            trailing
                .filter(|_| replay.hosted)
                .map(|kept| (None, Some(kept))),
        )
        .collect();
    let items = |metadata: Option<&'a Map<String, Value>>| {
        metadata
            .and_then(|metadata| metadata.get("items"))
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    };
    let hosted = replay.hosted;
    let sent = |item: &&Value| hosted || !is_tool_search_item(item);
    let replayed = groups
        .iter()
        .any(|(_, metadata)| items(*metadata).iter().any(|item| sent(&item)));
    let kept_text: String = groups
        .iter()
        .flat_map(|(_, metadata)| items(*metadata))
        .map(message_text)
        .collect();
    // The text the kept messages hold is sent with them; text that came after them follows
    // the calls, and text from elsewhere (another wire) goes first.
    let after = match content.strip_prefix(kept_text.as_str()) {
        Some(rest) if !kept_text.is_empty() => rest,
        _ => {
            if !content.is_empty() {
                input.push(message_item("assistant", content));
            }
            ""
        }
    };
    for (call, metadata) in groups {
        input.extend(
            items(metadata)
                .iter()
                .filter(|item| sent(item))
                .map(Input::Verbatim),
        );
        let Some(call) = call else {
            continue;
        };
        let search_call = metadata.and_then(|metadata| metadata.get("tool_search_call"));
        if let (Some(item), true) = (search_call, replay.client) {
            replay.client_calls.insert(&call.id);
            input.push(Input::Verbatim(item));
            continue;
        }
        input.push(Input::Call {
            r#type: "function_call",
            // The id of a search call's item is not a function call's.
            id: metadata
                .filter(|_| replayed && search_call.is_none())
                .and_then(|metadata| metadata.get("id"))
                .and_then(Value::as_str),
            call_id: &call.id,
            name: &call.name,
            arguments: &call.arguments,
        });
    }
    if !after.is_empty() {
        input.push(message_item("assistant", after));
    }
}

/// A call (none for the items no call followed) and the output items kept with it.
type KeptGroup<'a> = (Option<&'a ToolCall>, Option<&'a Map<String, Value>>);

/// Whether an output item is a `tool_search_call` the client is to run.
fn is_client_search_call(item: &Value) -> bool {
    item.get("type").and_then(Value::as_str) == Some("tool_search_call")
        && item.get("execution").and_then(Value::as_str) == Some("client")
}

/// Whether a kept output item is a hosted search's call or output.
fn is_tool_search_item(item: &Value) -> bool {
    matches!(
        item.get("type").and_then(Value::as_str),
        Some("tool_search_call" | "tool_search_output")
    )
}

/// The part of a call's metadata this wire wrote.
fn call_metadata(call: &ToolCall) -> Option<&Map<String, Value>> {
    call.provider_metadata.as_ref()?.get(METADATA)?.as_object()
}

/// The text of a kept `message` output item (`""` for other items).
fn message_text(item: &Value) -> String {
    if item.get("type").and_then(Value::as_str) != Some("message") {
        return String::new();
    }
    item.get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|part| part.get("text").or_else(|| part.get("refusal")))
        .filter_map(Value::as_str)
        .collect()
}

/// The stored response to continue from: the id recorded with the calls of the last assistant
/// message that has them, and the position of the message after it.
fn previous_response(messages: &[Message]) -> Option<(&str, usize)> {
    messages
        .iter()
        .enumerate()
        .rev()
        .find_map(|(position, message)| match message {
            Message::Assistant { tool_calls, .. } => Some((tool_calls, position)),
            _ => None,
        })
        .and_then(|(calls, position)| {
            let id = calls
                .first()
                .and_then(call_metadata)?
                .get("response_id")?
                .as_str()?;
            Some((id, position + 1))
        })
}

/// The offered tools in Chat Completions' shape, as JSON text: the cached list, or with
/// [`ResponsesConfig::strict_tools`] each tool made strict where its schema allows.
fn tools_text(
    config: &ResponsesConfig,
    tools: &RequestTools,
) -> Result<std::sync::Arc<RawValue>, ProviderError> {
    if !config.strict_tools {
        return Ok(tools.provider_json(PROVIDER));
    }
    let strict = FormatOptions::new().strict(true);
    let list: Vec<Value> = tools
        .definitions()
        .iter()
        .filter_map(|tool| {
            format_tool(PROVIDER, tool, &strict)
                .or_else(|error| {
                    tracing::warn!(%error, "tool sent without strict mode");
                    format_tool(PROVIDER, tool, &FormatOptions::default())
                })
                .map_err(|error| tracing::error!(%error, "tool left out of the request"))
                .ok()
        })
        .collect();
    serde_json::value::to_raw_value(&list)
        .map(std::sync::Arc::from)
        .map_err(|error| ProviderError::Config(format!("cannot encode the tools: {error}")))
}

/// A tool in Chat Completions' shape, borrowed from its JSON text.
#[derive(Deserialize)]
struct NestedTool<'a> {
    #[serde(borrow)]
    function: NestedFunction<'a>,
}

#[derive(Deserialize)]
struct NestedFunction<'a> {
    #[serde(borrow)]
    name: Text<'a>,
    #[serde(default, borrow)]
    description: Option<Text<'a>>,
    #[serde(borrow)]
    parameters: &'a RawValue,
    #[serde(default)]
    strict: Option<bool>,
}

/// The tools of `text`, in Chat Completions' shape.
fn nested_tools(text: &RawValue) -> Result<Vec<NestedTool<'_>>, ProviderError> {
    serde_json::from_str(text.get())
        .map_err(|error| ProviderError::Config(format!("cannot encode the tools: {error}")))
}

/// A tool of a request: a function, or the tool search.
#[derive(Serialize)]
#[serde(untagged)]
enum WireTool<'a> {
    Function(FlatTool<'a>),
    /// `{"type": "tool_search"}`, hosted; or client-executed, with the local search tool's
    /// description and parameters.
    Search {
        r#type: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        execution: Option<&'static str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        parameters: Option<&'a RawValue>,
    },
}

impl<'a> WireTool<'a> {
    /// The hosted tool search, or with `local` the client-executed one that takes the place of
    /// that tool.
    fn search(local: Option<&'a NestedTool<'a>>) -> Self {
        Self::Search {
            r#type: "tool_search",
            execution: local.map(|_| "client"),
            description: local.and_then(|tool| tool.function.description.as_deref()),
            parameters: local.map(|tool| tool.function.parameters),
        }
    }
}

/// A function tool in the Responses shape
/// (<https://platform.openai.com/docs/api-reference/responses/create#responses-create-tools>),
/// `strict` always set: the Responses API takes a missing `strict` as `true`.
#[skip_serializing_none]
#[derive(Serialize)]
struct FlatTool<'a> {
    r#type: &'static str,
    name: &'a str,
    description: Option<&'a str>,
    parameters: &'a RawValue,
    strict: bool,
    /// Left out of the model's context until its `tool_search` loads it.
    defer_loading: Option<bool>,
}

impl<'a> From<&'a NestedTool<'a>> for FlatTool<'a> {
    fn from(tool: &'a NestedTool<'a>) -> Self {
        let function = &tool.function;
        FlatTool {
            r#type: "function",
            name: &function.name,
            description: function.description.as_deref(),
            parameters: function.parameters,
            strict: function.strict.unwrap_or(false),
            defer_loading: None,
        }
    }
}

/// The `tool_choice` of a request that offers tools
/// (<https://platform.openai.com/docs/api-reference/responses/create#responses-create-tool_choice>);
/// `Auto` is the API's default and is not sent.
fn wire_tool_choice(choice: &ToolChoice) -> Option<Value> {
    let function = |name: &str| serde_json::json!({ "type": "function", "name": name });
    match choice {
        ToolChoice::Auto => None,
        ToolChoice::None => Some(Value::from("none")),
        ToolChoice::Required => Some(Value::from("required")),
        ToolChoice::Tool(name) => Some(function(name)),
        ToolChoice::Allowed { tools, required } => Some(serde_json::json!({
            "type": "allowed_tools",
            "mode": if *required { "required" } else { "auto" },
            "tools": tools.iter().map(|name| function(name)).collect::<Vec<_>>(),
        })),
    }
}

/// A response object (<https://platform.openai.com/docs/api-reference/responses/object>): its
/// id, its output items left unread, its status, why it is incomplete or failed, and its token
/// counts.
#[derive(Deserialize, Default)]
struct ResponseObject<'a> {
    #[serde(default, borrow)]
    id: Option<Text<'a>>,
    #[cfg(feature = "otel")]
    #[serde(default, borrow)]
    model: Option<Text<'a>>,
    #[serde(default, borrow)]
    output: Option<Vec<&'a RawValue>>,
    #[serde(default, borrow)]
    status: Option<Text<'a>>,
    #[serde(default)]
    incomplete_details: Option<IncompleteDetails>,
    #[serde(default, borrow)]
    error: Option<&'a RawValue>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct IncompleteDetails {
    #[serde(default)]
    reason: Option<String>,
}

/// `usage` (<https://platform.openai.com/docs/api-reference/responses/object#responses/object-usage>):
/// `input_tokens` counts the cached ones, `output_tokens` the reasoning ones.
#[derive(Deserialize, Clone, Copy)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    input_tokens_details: Option<InputDetails>,
    #[serde(default)]
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Deserialize, Clone, Copy)]
struct InputDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize, Clone, Copy)]
struct OutputDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl From<WireUsage> for Usage {
    fn from(usage: WireUsage) -> Self {
        Usage::new(
            usage.input_tokens.unwrap_or_default(),
            usage.output_tokens.unwrap_or_default(),
        )
        .cache_read_tokens(
            usage
                .input_tokens_details
                .and_then(|details| details.cached_tokens)
                .unwrap_or_default(),
        )
        .reasoning_tokens(
            usage
                .output_tokens_details
                .and_then(|details| details.reasoning_tokens)
                .unwrap_or_default(),
        )
    }
}

/// One streamed event: its type, where it belongs, and its payload left unread until the type
/// says it is needed.
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Text<'a>,
    #[serde(default)]
    output_index: Option<u64>,
    #[serde(default, borrow)]
    item_id: Option<Text<'a>>,
    #[serde(default, borrow)]
    delta: Option<&'a RawValue>,
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(default, borrow)]
    text: Option<&'a RawValue>,
    #[serde(default, borrow)]
    refusal: Option<&'a RawValue>,
    #[serde(default, borrow)]
    item: Option<&'a RawValue>,
    #[serde(default, borrow)]
    response: Option<&'a RawValue>,
}

/// An output item's type and the fields of a function call.
#[derive(Deserialize)]
struct ItemHead<'a> {
    #[serde(rename = "type", borrow)]
    kind: Text<'a>,
    #[serde(default, borrow)]
    id: Option<Text<'a>>,
    #[serde(default, borrow)]
    call_id: Option<Text<'a>>,
    #[serde(default, borrow)]
    name: Option<Text<'a>>,
    /// Read only when no deltas brought them.
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
}

/// What an output item is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Message,
    FunctionCall,
    /// Reasoning, kept for the next call.
    Reasoning,
    /// A hosted tool search's call or output, kept for the next call.
    ToolSearch,
    /// An item of a hosted tool (web search, code interpreter, …): not ours to read.
    Other,
}

impl Kind {
    fn of(kind: &str) -> Self {
        match kind {
            "message" => Self::Message,
            "function_call" => Self::FunctionCall,
            "reasoning" => Self::Reasoning,
            "tool_search_call" | "tool_search_output" => Self::ToolSearch,
            _ => Self::Other,
        }
    }
}

/// An output item seen in the stream.
struct Item {
    kind: Kind,
    /// The call's slot, for a function call.
    slot: Option<usize>,
    /// Text or arguments came as deltas (so `.done` repeats them).
    deltas: bool,
    /// The item is complete.
    done: bool,
}

#[derive(Default)]
pub(crate) struct ResponsesDecoder {
    answer: Answer,
    items: Vec<Item>,
    by_index: HashMap<u64, usize>,
    by_id: HashMap<String, usize>,
    /// Output items (reasoning, messages) since the last call, kept for the next one.
    pending: Vec<Value>,
    response_id: Option<String>,
    refused: bool,
    /// The query of the last `tool_search_call`, for its output.
    search_query: String,
    /// The name of the local search tool whose place a client-executed `tool_search` takes,
    /// when the request offers one: its `tool_search_call` items are calls of that tool.
    client_search: Option<String>,
}

impl ResponsesDecoder {
    /// The item an event belongs to: by `output_index`, by `item_id`, the last item of `kind`
    /// for an event that names neither, or a new one of `kind` for an event whose item was
    /// never announced.
    fn item(&mut self, index: Option<u64>, id: Option<&str>, kind: Kind) -> usize {
        let known = match (index, id) {
            (None, None) => self.items.iter().rposition(|item| item.kind == kind),
            _ => index
                .and_then(|index| self.by_index.get(&index))
                .or_else(|| id.and_then(|id| self.by_id.get(id)))
                .copied(),
        };
        known.unwrap_or_else(|| self.add_item(index, id, kind))
    }

    fn add_item(&mut self, index: Option<u64>, id: Option<&str>, kind: Kind) -> usize {
        let at = self.items.len();
        self.items.push(Item {
            kind,
            slot: None,
            deltas: false,
            done: false,
        });
        if let Some(index) = index {
            self.by_index.insert(index, at);
        }
        if let Some(id) = id.filter(|id| !id.is_empty()) {
            self.by_id.insert(id.to_owned(), at);
        }
        at
    }

    /// The call slot of item `at`, made (with the calls' metadata) when first needed.
    fn slot(&mut self, at: usize, item_id: Option<&str>) -> usize {
        if let Some(slot) = self.items[at].slot {
            return slot;
        }
        let slot = self.answer.calls.push();
        self.items[at].slot = Some(slot);
        let mut metadata = Map::new();
        if let Some(id) = item_id.filter(|id| !id.is_empty()) {
            metadata.insert("id".into(), Value::from(id));
        }
        if let Some(response) = &self.response_id {
            metadata.insert("response_id".into(), Value::from(response.as_str()));
        }
        if !self.pending.is_empty() {
            metadata.insert(
                "items".into(),
                Value::Array(std::mem::take(&mut self.pending)),
            );
        }
        self.answer
            .calls
            .set_metadata(slot, serde_json::json!({ METADATA: metadata }));
        slot
    }

    /// A function call's id and name, from its item.
    fn call_head(&mut self, at: usize, head: &ItemHead<'_>, out: &mut Vec<ModelEvent>) -> usize {
        let slot = self.slot(at, head.id.as_deref());
        if let Some(call_id) = head.call_id.as_deref().or(head.id.as_deref()) {
            self.answer.calls.set_id(slot, call_id);
        }
        if let Some(name) = &head.name {
            self.answer.calls.set_name(slot, name, out);
        }
        slot
    }

    fn arguments(&mut self, at: usize, fragment: Text<'_>, out: &mut Vec<ModelEvent>) {
        let slot = self.slot(at, None);
        let fragment = match fragment.0 {
            std::borrow::Cow::Owned(text) => SharedStr::from(text),
            std::borrow::Cow::Borrowed(text) => SharedStr::from(text),
        };
        self.answer.calls.append_shared(slot, fragment, out);
    }

    fn end_call(&mut self, at: usize, out: &mut Vec<ModelEvent>) {
        let item = &mut self.items[at];
        if let (Some(slot), false) = (item.slot, item.done) {
            item.done = true;
            self.answer.calls.end(slot, out);
        }
    }

    fn text(&mut self, fragment: &str, refusal: bool, out: &mut Vec<ModelEvent>) {
        if refusal && !fragment.is_empty() {
            self.refused = true;
        }
        self.answer.text(fragment, out);
    }

    fn feed_event(
        &mut self,
        event: Event<'_>,
        out: &mut Vec<ModelEvent>,
    ) -> Result<bool, ProviderError> {
        let (index, id) = (event.output_index, event.item_id.as_deref());
        match &*event.kind {
            "response.created" | "response.in_progress" => {
                if let Some(response) = event.response {
                    let response: ResponseObject<'_> = parse(response, "a response")?;
                    #[cfg(feature = "otel")]
                    if self.response_id.is_none() {
                        super::wire::record_response(
                            response.id.as_deref(),
                            response.model.as_deref(),
                        );
                    }
                    if let Some(id) = response.id.filter(|id| !id.is_empty()) {
                        self.response_id.get_or_insert_with(|| id.to_string());
                    }
                }
            }
            "response.output_item.added" => {
                let Some(item) = event.item else {
                    return Ok(false);
                };
                let head: ItemHead<'_> = parse(item, "an output item")?;
                let kind = Kind::of(&head.kind);
                let at = self.item(index, head.id.as_deref(), kind);
                if kind == Kind::FunctionCall {
                    self.call_head(at, &head, out);
                    if let Some(arguments) = head.arguments {
                        let arguments: Text<'_> = parse(arguments, "the arguments")?;
                        if !arguments.is_empty() {
                            self.items[at].deltas = true;
                            self.arguments(at, arguments, out);
                        }
                    }
                }
            }
            "response.function_call_arguments.delta" => {
                let at = self.item(index, id, Kind::FunctionCall);
                if let Some(delta) = event.delta {
                    self.items[at].deltas = true;
                    self.arguments(at, parse(delta, "a delta")?, out);
                }
            }
            "response.function_call_arguments.done" => {
                let at = self.item(index, id, Kind::FunctionCall);
                if let (false, Some(arguments)) = (self.items[at].deltas, event.arguments) {
                    self.items[at].deltas = true;
                    self.arguments(at, parse(arguments, "the arguments")?, out);
                }
            }
            kind @ ("response.output_text.delta" | "response.refusal.delta") => {
                let at = self.item(index, id, Kind::Message);
                if let Some(delta) = event.delta {
                    self.items[at].deltas = true;
                    let delta: Text<'_> = parse(delta, "a delta")?;
                    self.text(&delta, kind == "response.refusal.delta", out);
                }
            }
            kind @ ("response.output_text.done" | "response.refusal.done") => {
                let at = self.item(index, id, Kind::Message);
                let refusal = kind == "response.refusal.done";
                let whole = if refusal { event.refusal } else { event.text };
                if let (false, Some(whole)) = (self.items[at].deltas, whole) {
                    self.items[at].deltas = true;
                    let whole: Text<'_> = parse(whole, "a text")?;
                    self.text(&whole, refusal, out);
                }
            }
            "response.output_item.done" => {
                if let Some(item) = event.item {
                    self.item_done(index, item, out)?;
                }
            }
            "response.completed" | "response.incomplete" => {
                let response: ResponseObject<'_> = match event.response {
                    Some(response) => parse(response, "a response")?,
                    None => ResponseObject::default(),
                };
                #[cfg(feature = "otel")]
                super::wire::record_response(response.id.as_deref(), response.model.as_deref());
                if let Some(id) = response.id.as_deref().filter(|id| !id.is_empty()) {
                    self.response_id.get_or_insert_with(|| id.to_owned());
                }
                // A server that sent no item events (or a whole, non-streamed response).
                if self.items.is_empty() {
                    for item in response.output.as_deref().unwrap_or_default() {
                        self.whole_item(item, out)?;
                    }
                }
                self.complete(&response, &*event.kind == "response.incomplete", out)?;
                return Ok(true);
            }
            "response.failed" => {
                let response = event.response.map_or("{}", RawValue::get);
                return Err(failed(response));
            }
            _ => {}
        }
        Ok(false)
    }

    /// `response.output_item.done`: completes a call, takes the text of a message that came
    /// without deltas, and keeps reasoning and messages for the next call.
    fn item_done(
        &mut self,
        index: Option<u64>,
        item: &RawValue,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ProviderError> {
        let known = index.and_then(|index| self.by_index.get(&index)).copied();
        // The kind is known from `.added`, and a call that had its deltas is not read again.
        if let Some(at) = known
            && self.items[at].kind == Kind::FunctionCall
            && self.items[at].deltas
        {
            self.end_call(at, out);
            return Ok(());
        }
        self.whole_item(item, out)
    }

    /// A whole output item: from a non-streamed response, from `response.completed` when no
    /// events came before it, or from `response.output_item.done` when its deltas did not
    /// come.
    fn whole_item(
        &mut self,
        item: &RawValue,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ProviderError> {
        let head: ItemHead<'_> = parse(item, "an output item")?;
        let kind = Kind::of(&head.kind);
        let at = match head.id.as_deref().and_then(|id| self.by_id.get(id)) {
            Some(&at) => at,
            None => self.add_item(None, head.id.as_deref(), kind),
        };
        match kind {
            Kind::FunctionCall => {
                if self.items[at].done {
                    return Ok(());
                }
                self.call_head(at, &head, out);
                if !self.items[at].deltas {
                    self.items[at].deltas = true;
                    if let Some(arguments) = head.arguments {
                        self.arguments(at, parse(arguments, "the arguments")?, out);
                    }
                }
                self.end_call(at, out);
            }
            Kind::Message | Kind::Reasoning => {
                let value: Value = parse(item, "an output item")?;
                if kind == Kind::Message && !self.items[at].deltas {
                    self.items[at].deltas = true;
                    for part in value
                        .get("content")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        let refusal = part.get("type").and_then(Value::as_str) == Some("refusal");
                        let text = part.get(if refusal { "refusal" } else { "text" });
                        self.text(
                            text.and_then(Value::as_str).unwrap_or_default(),
                            refusal,
                            out,
                        );
                    }
                }
                self.items[at].done = true;
                self.pending.push(value);
            }
            Kind::ToolSearch => {
                if self.items[at].done {
                    return Ok(());
                }
                let value: Value = parse(item, "an output item")?;
                if is_client_search_call(&value) {
                    self.client_search_call(at, value, out);
                    return Ok(());
                }
                self.tool_search(&value);
                self.items[at].done = true;
                self.pending.push(value);
            }
            Kind::Other => self.items[at].done = true,
        }
        Ok(())
    }

    /// A client-executed `tool_search_call`: a call of the local search tool, with the search's
    /// arguments, the item kept to go back as it came.
    fn client_search_call(&mut self, at: usize, item: Value, out: &mut Vec<ModelEvent>) {
        let text = |key: &str| item.get(key).and_then(Value::as_str).map(str::to_owned);
        let (id, call_id) = (text("id"), text("call_id"));
        let slot = self.slot(at, id.as_deref());
        if let Some(call_id) = call_id.or(id) {
            self.answer.calls.set_id(slot, &call_id);
        }
        let name = self.client_search.as_deref().unwrap_or("tool_search");
        self.answer.calls.set_name(slot, name, out);
        // The arguments are an object; a JSON string of one is taken as it is.
        let arguments = match item.get("arguments") {
            Some(Value::String(text)) => text.clone(),
            Some(arguments) if !arguments.is_null() => arguments.to_string(),
            _ => String::from("{}"),
        };
        self.answer.calls.append(slot, &arguments, out);
        if let Some(Value::Object(metadata)) = self.answer.calls.metadata_mut(slot) {
            if let Some(Value::Object(ours)) = metadata.get_mut(METADATA) {
                ours.insert("tool_search_call".into(), item);
            }
        }
        self.end_call(at, out);
    }

    /// A hosted search's `tool_search_call` (its query) or `tool_search_output` (the tools it
    /// loaded, functions alone or in a namespace).
    fn tool_search(&mut self, item: &Value) {
        if item.get("type").and_then(Value::as_str) == Some("tool_search_call") {
            let arguments = item.get("arguments");
            // The arguments are an object; a JSON string of one is read too.
            let parsed = arguments
                .and_then(Value::as_str)
                .and_then(|text| serde_json::from_str::<Value>(text).ok());
            parsed
                .as_ref()
                .or(arguments)
                .and_then(|arguments| arguments.get("query"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .clone_into(&mut self.search_query);
            return;
        }
        let mut tools = Vec::new();
        let mut pending: Vec<&Value> = item
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .rev()
            .collect();
        // A stack, so the names come in the provider's order.
        while let Some(tool) = pending.pop() {
            match tool.get("type").and_then(Value::as_str) {
                Some("namespace") => pending.extend(
                    tool.get("tools")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .rev(),
                ),
                _ => {
                    if let Some(name) = tool.get("name").and_then(Value::as_str) {
                        tools.push(name.to_owned());
                    }
                }
            }
        }
        let query = std::mem::take(&mut self.search_query);
        self.answer.search(ProviderToolSearch::new(query, tools));
    }

    /// Ends the answer: its usage, and why it ended.
    fn complete(
        &mut self,
        tail: &ResponseObject<'_>,
        incomplete: bool,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ProviderError> {
        let status = tail.status.as_deref().unwrap_or(if incomplete {
            "incomplete"
        } else {
            "completed"
        });
        let mut finish = match status {
            "completed" => FinishReason::Stop,
            "incomplete" => match tail
                .incomplete_details
                .as_ref()
                .and_then(|details| details.reason.as_deref())
            {
                Some("max_output_tokens") => FinishReason::Length,
                Some("content_filter") => FinishReason::ContentFilter,
                Some(other) => FinishReason::Other(other.to_owned()),
                None => FinishReason::Other(String::from("incomplete")),
            },
            "failed" => {
                let error = tail.error.map_or("null", RawValue::get);
                return Err(failed(&format!("{{\"error\":{error}}}")));
            }
            other => FinishReason::Other(other.to_owned()),
        };
        if self.refused && finish == FinishReason::Stop {
            finish = FinishReason::ContentFilter;
        }
        if let Some(usage) = tail.usage {
            self.answer.usage(usage.into());
        }
        // A hosted search no call followed (an answer of text alone): its items, and the others
        // since the last call, are kept with the answer as a whole.
        if self.pending.iter().any(is_tool_search_item) {
            let items = Value::Array(std::mem::take(&mut self.pending));
            self.answer
                .set_metadata(serde_json::json!({ METADATA: { "items": items } }));
        }
        std::mem::take(&mut self.answer).done(finish, out);
        Ok(())
    }
}

/// The error of a failed response: the provider's message from the response's `error`.
fn failed(response: &str) -> ProviderError {
    match stream_error(PROVIDER, response) {
        error @ ProviderError::Api { .. } => error,
        _ => ProviderError::Api {
            provider: PROVIDER,
            status: None,
            code: None,
            message: String::from("the response failed"),
        },
    }
}

/// Reads a part of an event that its type says is there.
fn parse<'a, T: Deserialize<'a>>(raw: &'a RawValue, what: &str) -> Result<T, ProviderError> {
    serde_json::from_str(raw.get()).map_err(|error| ProviderError::Protocol {
        provider: PROVIDER,
        message: format!("cannot read {what}: {error}"),
    })
}

impl Decoder for ResponsesDecoder {
    fn open_call(&self) -> Option<&str> {
        self.answer.open_call()
    }

    fn feed(&mut self, frame: Frame, out: &mut Vec<ModelEvent>) -> Result<bool, ProviderError> {
        let sse = sse_event(PROVIDER, frame)?;
        let data = sse.data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(false);
        }
        let event: Event<'_> = serde_json::from_str(data)
            .map_err(|error| unreadable(PROVIDER, sse.unterminated, "an event", &error))?;
        if &*event.kind == "error" || sse.name == "error" {
            return Err(stream_error(PROVIDER, data));
        }
        self.feed_event(event, out)
    }

    fn finish(&mut self, _out: &mut Vec<ModelEvent>) -> Result<(), ProviderError> {
        Err(truncated(PROVIDER))
    }
}
