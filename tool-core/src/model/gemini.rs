//! Google Gemini (`POST {base}/models/{model}:generateContent` and
//! `:streamGenerateContent?alt=sse`, <https://ai.google.dev/api/generate-content>).
//!
//! Tools go as `tools: [{"functionDeclarations": [...]}]`. The model calls them with
//! `functionCall` parts whose `args` is an object (absent for a call without arguments) and
//! whose `id` is optional; results go back as `functionResponse` parts in a `user` turn, in call
//! order, with the call's name (and its id when it had one). A `thoughtSignature` next to a call
//! is kept in [`ToolCall::provider_metadata`](super::ToolCall::provider_metadata)
//! (`{"thoughtSignature": ...}`) and sent back with the call, as Gemini requires.
//!
//! The stream is SSE with CRLF framing and no terminal event: the answer is complete when the
//! body ends after a `finishReason`, which may come in a later chunk than the calls. An error can
//! arrive mid-stream as a raw JSON object without `data:`. Vertex's streamed function-call
//! arguments (`partialArgs` with JSON paths, `willContinue`) are assembled too.

use std::collections::HashMap;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json, value::RawValue};
use serde_with::skip_serializing_none;

use super::wire::decode::decode_whole;
use super::wire::prelude::*;

const PROVIDER: Provider = Provider::Gemini;

/// Settings of a [`GeminiClient`]: its [`Endpoint`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct GeminiConfig {
    /// The key (sent as `x-goog-api-key`; required), the API root (default
    /// `https://generativelanguage.googleapis.com/v1beta`), the model (default
    /// `gemini-2.5-flash`), extra headers, timeouts and retries.
    pub endpoint: Endpoint,
}

/// The variables [`GeminiConfig::from_env`] reads.
const ENV: EnvNames = EnvNames {
    api_key: &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
    base_url: "GEMINI_BASE_URL",
    read_base_url: str::to_owned,
    model: "GEMINI_MODEL",
};

impl Default for GeminiConfig {
    fn default() -> Self {
        Self {
            endpoint: Endpoint::new(
                "https://generativelanguage.googleapis.com/v1beta",
                "gemini-2.5-flash",
            ),
        }
    }
}

provider_config!(
    GeminiConfig,
    ENV,
    /// The settings from the environment: `GEMINI_API_KEY` (or `GOOGLE_API_KEY`),
    /// `GEMINI_BASE_URL` and `GEMINI_MODEL`.
);

http_client!(
    /// A client of the Gemini API.
    GeminiClient,
    GenerateContent,
    GeminiConfig
);

/// The `generateContent` wire.
#[derive(Debug)]
pub(crate) struct GenerateContent;

impl Wire for GenerateContent {
    type Config = GeminiConfig;
    type Decoder = GeminiDecoder;
    const PROVIDER: Provider = PROVIDER;
    const KEY: KeyHeader = KeyHeader::Required {
        header: "x-goog-api-key",
        missing: "no Gemini API key: set GEMINI_API_KEY or GeminiConfig::api_key",
    };
    const ACCEPT_EVENT_STREAM: bool = false;

    fn urls(endpoint: &Endpoint) -> (String, String) {
        let model = if endpoint.model.contains('/') {
            endpoint.model.clone()
        } else {
            format!("models/{}", endpoint.model)
        };
        (
            endpoint.url(&format!("/{model}:generateContent")),
            endpoint.url(&format!("/{model}:streamGenerateContent?alt=sse")),
        )
    }

    fn request_body(
        _config: &GeminiConfig,
        request: &ChatRequest,
        _stream: bool,
    ) -> Result<Bytes, ProviderError> {
        request.tool_choice.check(&request.tools)?;
        let mut system = Vec::new();
        let mut contents: Vec<Value> = Vec::new();
        // The calls by id, to send a result back with the call's Gemini id when it had one.
        let calls: HashMap<&str, &ToolCall> = request
            .messages
            .iter()
            .filter_map(|message| match message {
                Message::Assistant { tool_calls, .. } => Some(tool_calls),
                _ => None,
            })
            .flatten()
            .map(|call| (call.id.as_str(), call))
            .collect();
        for message in &request.messages {
            let (role, part) = match message {
                Message::System { content } => {
                    system.push(json!({ "text": content }));
                    continue;
                }
                Message::User { content } => ("user", vec![json!({ "text": content })]),
                Message::Assistant {
                    content,
                    tool_calls,
                    ..
                } => {
                    let mut parts = Vec::new();
                    if !content.is_empty() {
                        parts.push(json!({ "text": content }));
                    }
                    parts.extend(tool_calls.iter().map(call_part));
                    if parts.is_empty() {
                        parts.push(json!({ "text": "" }));
                    }
                    ("model", parts)
                }
                Message::Tool {
                    tool_call_id,
                    name,
                    content,
                    is_error,
                    ..
                } => {
                    let mut response = Map::new();
                    response.insert("name".into(), json!(name));
                    // `response` is free-form, but an `error` key is documented to carry a failed
                    // call's details; without `output` or `error` the whole object is the output
                    // (<https://ai.google.dev/api/caching#FunctionResponse>).
                    let key = if *is_error { "error" } else { "result" };
                    let mut body = Map::new();
                    body.insert(key.into(), json!(content));
                    response.insert("response".into(), Value::Object(body));
                    if let Some(id) = calls.get(tool_call_id.as_str()).and_then(|c| gemini_id(c)) {
                        response.insert("id".into(), json!(id));
                    }
                    ("user", vec![json!({ "functionResponse": response })])
                }
            };
            // Consecutive turns of one role (the results of parallel calls) form one turn.
            match contents.last_mut() {
                Some(last) if last["role"] == role => {
                    if let Some(parts) = last["parts"].as_array_mut() {
                        parts.extend(part);
                    }
                }
                _ => contents.push(json!({ "role": role, "parts": part })),
            }
        }
        let tools = (!request.tools.is_empty()).then(|| request.tools.provider_json(PROVIDER));
        let mut generation = Map::new();
        if let Some(temperature) = request.settings.temperature {
            generation.insert("temperature".into(), json!(temperature));
        }
        if let Some(max_tokens) = request.settings.max_tokens {
            generation.insert("maxOutputTokens".into(), json!(max_tokens));
        }
        // Structured output (<https://ai.google.dev/gemini-api/docs/structured-output>):
        // `responseJsonSchema` takes JSON Schema as it is, unlike `responseSchema`'s OpenAPI
        // subset.
        if let Some(format) = &request.response_format {
            generation.insert("responseMimeType".into(), json!("application/json"));
            if let ResponseFormat::JsonSchema { schema, .. } = format {
                generation.insert("responseJsonSchema".into(), schema.clone());
            }
        }
        let body = RequestBody {
            contents,
            system_instruction: (!system.is_empty()).then(|| json!({ "parts": system })),
            tools: tools.as_deref().map(|tools| [tools]),
            tool_config: tools
                .as_ref()
                .and_then(|_| wire_tool_config(&request.tool_choice)),
            generation_config: (!generation.is_empty()).then_some(Value::Object(generation)),
        };
        write_json(&body)
    }

    fn answer(body: &[u8]) -> Result<ChatResponse, ProviderError> {
        let data = String::from_utf8(body.to_vec()).map_err(|error| ProviderError::Protocol {
            provider: PROVIDER,
            message: format!("the response is not UTF-8: {error}"),
        })?;
        let decoder = GeminiDecoder {
            whole: true,
            ..GeminiDecoder::default()
        };
        let frame = Frame::Event {
            name: String::from("message"),
            data,
            unterminated: false,
        };
        decode_whole(decoder, frame, PROVIDER)
    }
}

#[skip_serializing_none]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RequestBody<'a> {
    contents: Vec<Value>,
    system_instruction: Option<Value>,
    /// `[{"functionDeclarations": [...]}]`.
    tools: Option<[&'a RawValue; 1]>,
    tool_config: Option<Value>,
    generation_config: Option<Value>,
}

/// The `toolConfig` of a request that offers tools
/// (<https://ai.google.dev/api/caching#ToolConfig>); `Auto` is the API's default and is not
/// sent. A named tool is mode `ANY` limited to that one name, the only way Gemini forces a
/// particular function.
fn wire_tool_config(choice: &ToolChoice) -> Option<Value> {
    let config = match choice {
        ToolChoice::Auto => return None,
        ToolChoice::None => json!({ "mode": "NONE" }),
        ToolChoice::Required => json!({ "mode": "ANY" }),
        ToolChoice::Tool(name) => json!({ "mode": "ANY", "allowedFunctionNames": [name] }),
        // `VALIDATED`: a call to one of the names, or text.
        ToolChoice::Allowed { tools, required } => json!({
            "mode": if *required { "ANY" } else { "VALIDATED" },
            "allowedFunctionNames": tools,
        }),
    };
    Some(json!({ "functionCallingConfig": config }))
}

/// The `functionCall` part of a call, with its signature and Gemini id if it had them.
fn call_part(call: &ToolCall) -> Value {
    let mut function = Map::new();
    function.insert("name".into(), json!(call.name));
    function.insert("args".into(), arguments_object(&call.arguments));
    if let Some(id) = gemini_id(call) {
        function.insert("id".into(), json!(id));
    }
    let mut part = Map::new();
    part.insert("functionCall".into(), Value::Object(function));
    if let Some(signature) = metadata(call, "thoughtSignature") {
        part.insert("thoughtSignature".into(), json!(signature));
    }
    Value::Object(part)
}

/// The id Gemini gave the call (ids made up for calls without one are not sent).
fn gemini_id(call: &ToolCall) -> Option<&str> {
    metadata(call, "functionCallId")
}

fn metadata<'a>(call: &'a ToolCall, key: &str) -> Option<&'a str> {
    call.provider_metadata.as_ref()?.get(key)?.as_str()
}

fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY" => {
            FinishReason::ContentFilter
        }
        other => FinishReason::Other(other.to_owned()),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Response<'a> {
    #[cfg(feature = "otel")]
    #[serde(default, borrow, rename = "responseId")]
    id: Option<Text<'a>>,
    #[cfg(feature = "otel")]
    #[serde(default, borrow, rename = "modelVersion")]
    model: Option<Text<'a>>,
    #[serde(default, borrow)]
    candidates: Vec<Candidate<'a>>,
    #[serde(default)]
    usage_metadata: Option<UsageMetadata>,
    #[serde(default, borrow)]
    prompt_feedback: Option<PromptFeedback<'a>>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate<'a> {
    #[serde(default, borrow)]
    content: Option<Content<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Text<'a>>,
    #[serde(default)]
    index: u32,
}

#[derive(Deserialize)]
struct Content<'a> {
    #[serde(default, borrow)]
    parts: Vec<Part<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part<'a> {
    #[serde(default, borrow)]
    text: Option<Text<'a>>,
    #[serde(default)]
    thought: bool,
    #[serde(default, borrow)]
    function_call: Option<FunctionCall<'a>>,
    #[serde(default, borrow)]
    thought_signature: Option<Text<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FunctionCall<'a> {
    #[serde(default, borrow)]
    name: Option<Text<'a>>,
    #[serde(default, borrow)]
    args: Option<&'a RawValue>,
    #[serde(default, borrow)]
    id: Option<Text<'a>>,
    #[serde(default)]
    partial_args: Option<Vec<PartialArg>>,
    #[serde(default)]
    will_continue: bool,
}

/// One piece of streamed arguments (Vertex `streamFunctionCallArguments`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PartialArg {
    json_path: String,
    #[serde(default)]
    string_value: Option<String>,
    #[serde(default)]
    number_value: Option<serde_json::Number>,
    #[serde(default)]
    bool_value: Option<bool>,
    #[serde(default)]
    null_value: Option<Value>,
}

/// `usageMetadata` (<https://ai.google.dev/api/generate-content#UsageMetadata>); streamed
/// chunks carry the counts so far.
#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "camelCase")]
// The field names are the wire's.
#[allow(clippy::struct_field_names)]
struct UsageMetadata {
    /// The whole prompt, cached content included.
    #[serde(default)]
    prompt_token_count: u64,
    /// The answer, thoughts not included.
    #[serde(default)]
    candidates_token_count: u64,
    /// The thinking, beside `candidatesTokenCount`.
    #[serde(default)]
    thoughts_token_count: u64,
    /// The part of `promptTokenCount` read from cached content.
    #[serde(default)]
    cached_content_token_count: u64,
}

impl From<UsageMetadata> for Usage {
    fn from(usage: UsageMetadata) -> Self {
        // Thoughts are generated (and billed) output, so they count in the output, and are
        // reported again as its reasoning part.
        Usage::new(
            usage.prompt_token_count,
            usage
                .candidates_token_count
                .saturating_add(usage.thoughts_token_count),
        )
        .cache_read_tokens(usage.cached_content_token_count)
        .reasoning_tokens(usage.thoughts_token_count)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback<'a> {
    #[serde(default, borrow)]
    block_reason: Option<Text<'a>>,
}

#[derive(Default)]
pub(crate) struct GeminiDecoder {
    answer: Answer,
    finish: Option<FinishReason>,
    /// A call whose arguments are still streaming in `partialArgs`: its slot and arguments.
    partial: Option<(usize, Value)>,
    /// The body is a whole `generateContent` answer, complete even without `finishReason`.
    whole: bool,
    /// Whether the answer's id and model were recorded on the span (`otel` feature).
    #[cfg(feature = "otel")]
    described: bool,
}

impl GeminiDecoder {
    /// Reads one response; `frame` is the text it was parsed from (the calls' arguments are
    /// shared with it, not copied).
    fn response(&mut self, response: Response<'_>, frame: &SharedStr, out: &mut Vec<ModelEvent>) {
        #[cfg(feature = "otel")]
        if !self.described && (response.id.is_some() || response.model.is_some()) {
            self.described = true;
            super::wire::record_response(response.id.as_deref(), response.model.as_deref());
        }
        if let Some(usage) = response.usage_metadata {
            self.answer.usage(usage.into());
        }
        if response.candidates.is_empty()
            && response
                .prompt_feedback
                .as_ref()
                .is_some_and(|feedback| feedback.block_reason.is_some())
        {
            self.finish = Some(FinishReason::ContentFilter);
        }
        for candidate in response.candidates.into_iter().filter(|c| c.index == 0) {
            for part in candidate.content.map(|c| c.parts).unwrap_or_default() {
                self.part(part, frame, out);
            }
            if let Some(reason) = candidate.finish_reason {
                self.finish = Some(finish_reason(&reason));
            }
        }
    }

    fn part(&mut self, part: Part<'_>, frame: &SharedStr, out: &mut Vec<ModelEvent>) {
        // Thought summaries (`thought: true`) are not part of the answer.
        if let Some(text) = part.text.as_ref().filter(|_| !part.thought) {
            self.answer.text(text, out);
        }
        let Some(call) = part.function_call else {
            return;
        };
        let signature = part.thought_signature.as_deref();
        if let Some(name) = call.name.as_deref() {
            // A new call: any call still streaming its arguments is over.
            self.close_partial(out);
            let calls = &mut self.answer.calls;
            let slot = calls.push();
            let id = call.id.as_deref().filter(|id| !id.is_empty());
            if let Some(id) = id {
                calls.set_id(slot, id);
            }
            let mut metadata = Map::new();
            if let Some(signature) = signature {
                metadata.insert("thoughtSignature".into(), json!(signature));
            }
            if let Some(id) = id {
                metadata.insert("functionCallId".into(), json!(id));
            }
            if !metadata.is_empty() {
                calls.set_metadata(slot, Value::Object(metadata));
            }
            calls.set_name(slot, name, out);
            if call.will_continue {
                let mut arguments = Value::Object(Map::new());
                apply_partial_args(&mut arguments, call.partial_args.unwrap_or_default());
                self.partial = Some((slot, arguments));
            } else {
                let arguments = match call.args.map(RawValue::get) {
                    // Shared with the event when they are most of it (a large call); copied
                    // otherwise, so that a small call does not keep a large event alive.
                    Some(args) if args.len() * 2 >= frame.len() => frame.slice_ref(args),
                    Some(args) => SharedStr::from(args),
                    None => SharedStr::from_static("{}"),
                };
                calls.append_shared(slot, arguments, out);
                calls.end(slot, out);
            }
            return;
        }
        // A continuation of the streaming call; one without `willContinue` (or an empty
        // `functionCall: {}`) ends it.
        if let Some((_, arguments)) = &mut self.partial {
            apply_partial_args(arguments, call.partial_args.unwrap_or_default());
        }
        if !call.will_continue {
            self.close_partial(out);
        }
    }

    fn close_partial(&mut self, out: &mut Vec<ModelEvent>) {
        if let Some((slot, arguments)) = self.partial.take() {
            self.answer
                .calls
                .append_shared(slot, SharedStr::from(arguments.to_string()), out);
            self.answer.calls.end(slot, out);
        }
    }

    fn done(&mut self, out: &mut Vec<ModelEvent>) {
        self.close_partial(out);
        let finish = self.finish.take().unwrap_or(FinishReason::Stop);
        std::mem::take(&mut self.answer).done(finish, out);
    }
}

impl Decoder for GeminiDecoder {
    fn open_call(&self) -> Option<&str> {
        self.answer.open_call()
    }

    fn feed(&mut self, frame: Frame, out: &mut Vec<ModelEvent>) -> Result<bool, ProviderError> {
        let sse = sse_event(PROVIDER, frame)?;
        let data = SharedStr::from(sse.data);
        let response: Response<'_> = serde_json::from_str(&data)
            .map_err(|error| unreadable(PROVIDER, sse.unterminated, "a chunk", &error))?;
        if let Some(error) = &response.error {
            let text = json!({ "error": error }).to_string();
            return Err(stream_error(PROVIDER, &text));
        }
        self.response(response, &data, out);
        Ok(false)
    }

    fn finish(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ProviderError> {
        if self.finish.is_some() || self.whole {
            self.done(out);
            Ok(())
        } else {
            Err(truncated(PROVIDER))
        }
    }
}

/// Applies streamed argument pieces: a string piece is appended to the string already at its
/// path, any other value is set there.
fn apply_partial_args(arguments: &mut Value, pieces: Vec<PartialArg>) {
    for piece in pieces {
        let Some(slot) = path_slot(arguments, &piece.json_path) else {
            tracing::warn!(path = %piece.json_path, "unsupported partialArgs path; piece ignored");
            continue;
        };
        if let Some(text) = piece.string_value {
            match slot {
                Value::String(existing) => existing.push_str(&text),
                other => *other = Value::String(text),
            }
        } else if let Some(number) = piece.number_value {
            *slot = Value::Number(number);
        } else if let Some(flag) = piece.bool_value {
            *slot = Value::Bool(flag);
        } else if piece.null_value.is_some() {
            *slot = Value::Null;
        }
    }
}

/// The value at a JSON path like `$.operations[0].action` (`$`, `.key`, `['key']`, `[n]`),
/// creating objects, arrays and `null` placeholders on the way.
fn path_slot<'a>(root: &'a mut Value, path: &str) -> Option<&'a mut Value> {
    let mut rest = path.strip_prefix('$')?;
    let mut node = root;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let (key, tail) = after.split_at(end);
            node = object_entry(node, key)?;
            rest = tail;
        } else if let Some(after) = rest.strip_prefix("['") {
            let end = after.find("']")?;
            node = object_entry(node, &after[..end])?;
            rest = &after[end + 2..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']')?;
            let index: usize = after[..end].trim().parse().ok()?;
            if !node.is_array() {
                *node = Value::Array(Vec::new());
            }
            let items = node.as_array_mut()?;
            if items.len() <= index {
                items.resize(index + 1, Value::Null);
            }
            node = &mut items[index];
            rest = &after[end + 1..];
        } else {
            return None;
        }
    }
    Some(node)
}

fn object_entry<'a>(node: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    if key.is_empty() {
        return None;
    }
    if !node.is_object() {
        *node = Value::Object(Map::new());
    }
    Some(node.as_object_mut()?.entry(key).or_insert(Value::Null))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_args_build_nested_values() {
        let mut arguments = json!({});
        let piece = |path: &str, value: Value| PartialArg {
            json_path: path.into(),
            string_value: value.as_str().map(str::to_owned),
            number_value: value.as_number().cloned(),
            bool_value: value.as_bool(),
            null_value: None,
        };
        apply_partial_args(
            &mut arguments,
            vec![
                piece("$.operations[0].action", json!("ad")),
                piece("$.operations[0].action", json!("d")),
                piece("$.operations[1].price", json!(0.5)),
                piece("$['flag']", json!(true)),
            ],
        );
        assert_eq!(
            arguments,
            json!({"operations": [{"action": "add"}, {"price": 0.5}], "flag": true})
        );
    }
}
