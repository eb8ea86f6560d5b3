//! Ollama's native chat API (`POST {host}/api/chat`,
//! <https://github.com/ollama/ollama/blob/main/docs/api.md#generate-a-chat-completion>).
//!
//! Streaming is newline-delimited JSON, one object per line, the last with `done: true`. Tool
//! calls come whole, with `arguments` as a JSON object and no id (one is made up; newer servers
//! send one, which is kept). A call, and text, can arrive in the `done: true` line itself, and
//! an `{"error": "..."}` line can follow a 200 status. Tool results go back as
//! `{"role": "tool", "tool_name": ..., "content": ...}`.
//!
//! `/api/chat` has no tool choice. [`ToolChoice::None`] is honoured by sending no `tools` (the
//! model cannot call what it is not offered); [`ToolChoice::Required`] and
//! [`ToolChoice::Tool`] cannot be honoured, so they fail with [`ProviderError::Config`] before
//! anything is sent rather than being dropped without a word. Ollama's OpenAI-compatible `/v1`
//! accepts a `tool_choice` but has been reported to ignore it as well
//! (<https://github.com/ollama/ollama/issues/17921>), so prompting is the way to ask for a call.

use std::{borrow::Cow, sync::Arc};

use bytes::Bytes;
use futures::Stream;
use serde::{Deserialize, Serialize};
use serde_json::{Value, value::RawValue};

use super::{
    ChatModel, ChatRequest, ChatResponse, FinishReason, Message, ModelEvent, ModelStream,
    ProviderError, ToolChoice, Usage,
    accumulate::{Answer, arguments_object},
    decode::{Decoder, Text, decoded, stream_error, truncated, unreadable},
    endpoint::{Endpoint, EnvNames, KeyHeader, endpoint_setters},
    framing::{self, Frame},
    http::Http,
};
use crate::schema::Provider;

const PROVIDER: Provider = Provider::Ollama;

/// Settings of an [`OllamaClient`]: its [`Endpoint`], whose base URL is the server's.
///
/// ```
/// use tool_core::model::OllamaConfig;
///
/// let config = OllamaConfig::from_vars(&|name| (name == "OLLAMA_HOST").then(|| "gpu-box".into()));
/// assert_eq!(config.endpoint.base_url, "http://gpu-box:11434");
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct OllamaConfig {
    /// The server's URL (default `http://localhost:11434`), the model (default `llama3.2`), the
    /// key (sent as `Authorization: Bearer …`, for Ollama's hosted service or a proxy; usually
    /// none), extra headers, timeouts and retries.
    pub endpoint: Endpoint,
}

/// The variables [`OllamaConfig::from_env`] reads.
const ENV: EnvNames = EnvNames {
    api_key: &["OLLAMA_API_KEY"],
    base_url: "OLLAMA_HOST",
    model: "OLLAMA_MODEL",
};

impl Default for OllamaConfig {
    fn default() -> Self {
        Self {
            endpoint: Endpoint::new("http://localhost:11434", "llama3.2"),
        }
    }
}

endpoint_setters!(OllamaConfig);

impl OllamaConfig {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// The settings from the environment: `OLLAMA_HOST` (as Ollama reads it: `host`,
    /// `host:port` or a URL), `OLLAMA_MODEL` and `OLLAMA_API_KEY`.
    pub fn from_env() -> Self {
        Self::from_vars(&super::env::process_vars)
    }

    /// The settings from variables looked up with `vars`.
    pub fn from_vars(vars: &dyn Fn(&str) -> Option<String>) -> Self {
        let mut endpoint = Self::default().endpoint.overridden_by(vars, &ENV);
        endpoint.base_url = host_url(&endpoint.base_url);
        Self { endpoint }
    }

    /// Sets the server as `OLLAMA_HOST` names it: a URL, or `host[:port]` (the scheme defaults
    /// to `http`, and the port of `http` to 11434). [`base_url`](Self::base_url)
    /// takes the URL as it is.
    #[must_use]
    pub fn host(mut self, host: impl AsRef<str>) -> Self {
        self.endpoint.base_url = host_url(host.as_ref());
        self
    }
}

/// `OLLAMA_HOST` as a URL: the scheme defaults to `http`, and the port of `http` to 11434.
fn host_url(host: &str) -> String {
    let host = host.trim().trim_end_matches('/');
    let (scheme, rest) = match host.split_once("://") {
        Some((scheme, rest)) => (scheme, rest),
        None => ("http", host),
    };
    let (authority, path) = match rest.find('/') {
        Some(slash) => rest.split_at(slash),
        None => (rest, ""),
    };
    let has_port = match authority.rsplit_once(':') {
        Some((_, port)) => !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()),
        None => false,
    } && !authority.ends_with(']');
    let port = match (has_port, scheme) {
        (true, _) => "",
        (false, "https") => "",
        (false, _) => ":11434",
    };
    format!("{scheme}://{authority}{port}{path}")
}

/// A client of Ollama's native `/api/chat`.
#[derive(Clone, Debug)]
pub struct OllamaClient {
    config: Arc<OllamaConfig>,
    http: Http,
    url: String,
}

impl OllamaClient {
    /// A client with these settings.
    pub fn new(config: OllamaConfig) -> Result<Self, ProviderError> {
        let endpoint = &config.endpoint;
        let http = endpoint.connect(PROVIDER, KeyHeader::Bearer, [], false)?;
        let url = endpoint.url("/api/chat");
        Ok(Self {
            config: Arc::new(config),
            http,
            url,
        })
    }

    /// A client configured from the environment (see [`OllamaConfig::from_env`]).
    pub fn from_env() -> Result<Self, ProviderError> {
        Self::new(OllamaConfig::from_env())
    }

    /// The settings.
    pub fn config(&self) -> &OllamaConfig {
        &self.config
    }

    async fn post(
        &self,
        request: &ChatRequest,
        stream: bool,
    ) -> Result<reqwest::Response, ProviderError> {
        let body = request_body(&self.config, request, stream)?;
        self.http.post(&self.url, body, stream).await
    }
}

#[async_trait::async_trait]
impl ChatModel for OllamaClient {
    fn provider(&self) -> Provider {
        PROVIDER
    }

    fn model_name(&self) -> &str {
        &self.config.endpoint.model
    }

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        let response = self.post(&request, false).await?;
        let reply: OwnedReply = self.http.json(response).await?;
        let mut answer = Answer::default();
        let mut sink = Vec::new();
        let message = reply.message.unwrap_or_default();
        answer.text(&message.content, &mut sink);
        for call in message.tool_calls {
            add_call(
                &mut answer,
                call.id.as_deref(),
                &call.function.name,
                value_arguments(call.function.arguments.as_ref(), 0),
                &mut sink,
            );
        }
        // `prompt_eval_count` is the whole prompt (cache reuse does not change it), `eval_count`
        // the tokens generated, thinking included; Ollama reports no cache or reasoning
        // breakdown.
        answer.usage(Usage::new(reply.prompt_eval_count, reply.eval_count));
        let (message, usage) = answer.into_message();
        let mut finish = finish_reason(reply.done_reason.as_deref());
        if finish == FinishReason::Stop
            && matches!(&message, Message::Assistant { tool_calls, .. } if !tool_calls.is_empty())
        {
            finish = FinishReason::ToolCalls;
        }
        let mut response = ChatResponse::new(message, finish);
        response.usage = usage;
        Ok(response)
    }

    async fn stream(&self, request: ChatRequest) -> Result<ModelStream, ProviderError> {
        let response = self.post(&request, true).await?;
        Ok(decode_stream(super::http::body_stream(response)))
    }
}

/// Decodes an Ollama `/api/chat` NDJSON body (for example a recorded one) into model events.
/// Lines of `/api/generate` (text in `response`) are read too.
pub fn decode_stream<S, B, E>(body: S) -> ModelStream
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: Into<Bytes>,
    E: std::fmt::Display,
{
    decoded(framing::ndjson(body), OllamaDecoder::default())
}

fn request_body(
    config: &OllamaConfig,
    request: &ChatRequest,
    stream: bool,
) -> Result<Bytes, ProviderError> {
    let tools = match &request.tool_choice {
        ToolChoice::Required => return Err(cannot_force("`required`")),
        ToolChoice::Tool(name) => return Err(cannot_force(&format!("tool `{name}`"))),
        ToolChoice::None => None,
        ToolChoice::Auto => {
            (!request.tools.is_empty()).then(|| request.tools.provider_json(PROVIDER))
        }
    };
    let settings = &request.settings;
    let options =
        (settings.temperature.is_some() || settings.max_tokens.is_some()).then_some(WireOptions {
            temperature: settings.temperature,
            num_predict: settings.max_tokens,
        });
    let body = RequestBody {
        model: &config.endpoint.model,
        messages: request.messages.iter().map(WireMessage::from).collect(),
        stream,
        tools: tools.as_deref(),
        options,
    };
    serde_json::to_vec(&body)
        .map(Bytes::from)
        .map_err(|error| ProviderError::Config(format!("cannot encode the request: {error}")))
}

/// The error for a tool choice that forces a call, which `/api/chat` cannot express.
fn cannot_force(choice: &str) -> ProviderError {
    ProviderError::Config(format!(
        "ollama cannot force a tool call: /api/chat has no tool choice (asked for {choice})"
    ))
}

#[derive(Serialize)]
struct RequestBody<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    options: Option<WireOptions>,
}

#[derive(Serialize)]
struct WireOptions {
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    num_predict: Option<u32>,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_name: Option<&'a str>,
}

#[derive(Serialize)]
struct WireCall<'a> {
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    /// Ollama wants an object; arguments that are not one (a cut-off call) go back as `{}`.
    arguments: Value,
}

impl<'a> From<&'a Message> for WireMessage<'a> {
    fn from(message: &'a Message) -> Self {
        let plain = |role, content| WireMessage {
            role,
            content,
            tool_calls: Vec::new(),
            tool_name: None,
        };
        match message {
            Message::System { content } => plain("system", content),
            Message::User { content } => plain("user", content),
            Message::Assistant {
                content,
                tool_calls,
            } => WireMessage {
                tool_calls: tool_calls
                    .iter()
                    .map(|call| WireCall {
                        function: WireFunction {
                            name: &call.name,
                            arguments: arguments_object(&call.arguments),
                        },
                    })
                    .collect(),
                ..plain("assistant", content)
            },
            // Ollama's tool message has `tool_name` and `content` but no error flag
            // (<https://github.com/ollama/ollama/blob/main/docs/api.md#chat-request-with-tools>):
            // a failure is told by the error text alone.
            Message::Tool { name, content, .. } => WireMessage {
                tool_name: Some(name),
                ..plain("tool", content)
            },
        }
    }
}

fn add_call(
    answer: &mut Answer,
    id: Option<&str>,
    name: &str,
    arguments: Cow<'_, str>,
    out: &mut Vec<ModelEvent>,
) {
    let slot = answer.calls.push();
    answer.calls.set_id(slot, id.unwrap_or_default());
    answer.calls.set_name(slot, name, out);
    answer.calls.append_cow(slot, arguments, out);
    answer.calls.end(slot, out);
}

/// A call's arguments as text: a string as it is, an object (or any other value) as compact
/// JSON with its keys sorted.
fn value_arguments(arguments: Option<&Value>, size_hint: usize) -> Cow<'_, str> {
    match arguments {
        Some(Value::String(text)) => Cow::Borrowed(text.as_str()),
        Some(Value::Null) | None => Cow::Borrowed(""),
        Some(value) => Cow::Owned(compact_json(value, size_hint)),
    }
}

/// A streamed call's arguments as text: the same as [`value_arguments`] gives, but without
/// parsing and re-serialising them when the wire text is already that text (Ollama's server
/// writes compact JSON with sorted keys), which made a large call several times slower to
/// decode than to parse.
fn raw_arguments(raw: Option<&RawValue>, size_hint: usize) -> Cow<'_, str> {
    let Some(raw) = raw else {
        return Cow::Borrowed("");
    };
    let text = raw.get();
    if !text.starts_with('"') && canonical::is_canonical(text.as_bytes()) {
        return Cow::Borrowed(text);
    }
    match serde_json::from_str::<Value>(text) {
        Ok(value) => Cow::Owned(value_arguments(Some(&value), size_hint).into_owned()),
        Err(_) => Cow::Borrowed(text),
    }
}

/// The same compact text as `Value`'s `Display`, written straight into a buffer of about the
/// right size (the formatter, and a buffer grown by doubling, made a large call several times
/// slower to re-serialise than to parse). `size_hint` is the size of the text it came from.
fn compact_json(value: &Value, size_hint: usize) -> String {
    let mut text = Vec::with_capacity(size_hint);
    match serde_json::to_writer(&mut text, value).map(|()| String::from_utf8(text)) {
        Ok(Ok(text)) => text,
        _ => value.to_string(),
    }
}

fn finish_reason(reason: Option<&str>) -> FinishReason {
    match reason.unwrap_or("stop") {
        "stop" => FinishReason::Stop,
        "length" => FinishReason::Length,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// A non-streamed reply.
#[derive(Deserialize)]
struct OwnedReply {
    #[serde(default)]
    message: Option<OwnedMessage>,
    #[serde(default)]
    done_reason: Option<String>,
    #[serde(default)]
    prompt_eval_count: u64,
    #[serde(default)]
    eval_count: u64,
}

#[derive(Deserialize, Default)]
struct OwnedMessage {
    #[serde(default)]
    content: String,
    #[serde(default)]
    tool_calls: Vec<OwnedCall>,
}

#[derive(Deserialize)]
struct OwnedCall {
    #[serde(default)]
    id: Option<String>,
    function: OwnedFunction,
}

#[derive(Deserialize)]
struct OwnedFunction {
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
}

/// One streamed line.
#[derive(Deserialize)]
struct Line<'a> {
    #[serde(default, borrow)]
    message: Option<LineMessage<'a>>,
    /// `/api/generate`'s text.
    #[serde(default, borrow)]
    response: Option<Text<'a>>,
    #[serde(default)]
    done: bool,
    #[serde(default, borrow)]
    done_reason: Option<Text<'a>>,
    #[serde(default)]
    prompt_eval_count: Option<u64>,
    #[serde(default)]
    eval_count: Option<u64>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct LineMessage<'a> {
    #[serde(default, borrow)]
    content: Option<Text<'a>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<LineCall<'a>>>,
}

/// A streamed call, borrowing its text from the line.
#[derive(Deserialize)]
struct LineCall<'a> {
    #[serde(default, borrow)]
    id: Option<Text<'a>>,
    #[serde(borrow)]
    function: LineFunction<'a>,
}

#[derive(Deserialize)]
struct LineFunction<'a> {
    #[serde(borrow)]
    name: Text<'a>,
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
}

#[derive(Default)]
struct OllamaDecoder {
    answer: Answer,
}

impl Decoder for OllamaDecoder {
    fn provider(&self) -> Provider {
        PROVIDER
    }

    fn feed(&mut self, frame: Frame, out: &mut Vec<ModelEvent>) -> Result<bool, ProviderError> {
        let (line, unterminated) = match frame {
            Frame::Line { line, unterminated } => (line, unterminated),
            Frame::Event { data, .. } => (Bytes::from(data), false),
            Frame::Raw(text) => return Err(stream_error(PROVIDER, &text)),
        };
        let size = line.len();
        let line: Line<'_> = serde_json::from_slice(&line)
            .map_err(|error| unreadable(PROVIDER, unterminated, "a line", &error))?;
        if let Some(error) = line.error {
            let text = serde_json::json!({ "error": error }).to_string();
            return Err(stream_error(PROVIDER, &text));
        }
        // Text and calls can come in the `done` line too: read them before finishing.
        if let Some(message) = line.message {
            if let Some(content) = message.content {
                self.answer.text(&content, out);
            }
            let calls = message.tool_calls.unwrap_or_default();
            // The line's size shared between its calls: a bound on each one's text that is
            // right for the one large call, and never allocates more than the line in all.
            let size_hint = size / calls.len().max(1);
            for call in calls {
                add_call(
                    &mut self.answer,
                    call.id.as_deref(),
                    &call.function.name,
                    raw_arguments(call.function.arguments, size_hint),
                    out,
                );
            }
        }
        if let Some(response) = line.response {
            self.answer.text(&response, out);
        }
        if !line.done {
            return Ok(false);
        }
        if line.prompt_eval_count.is_some() || line.eval_count.is_some() {
            self.answer.usage(Usage::new(
                line.prompt_eval_count.unwrap_or_default(),
                line.eval_count.unwrap_or_default(),
            ));
        }
        let finish = finish_reason(line.done_reason.as_deref());
        std::mem::take(&mut self.answer).done(finish, out);
        Ok(true)
    }

    fn finish(&mut self, _out: &mut Vec<ModelEvent>) -> Result<(), ProviderError> {
        Err(truncated(PROVIDER))
    }
}

/// Whether JSON text is exactly what `serde_json::Value`'s `Display` writes for it, so that it
/// can be used as it is instead of parsed and re-serialised.
mod canonical {
    /// `json` must be valid JSON (it is only ever text serde_json has already read, within its
    /// nesting limit, so the recursion here is bounded). Conservative: `false` for anything
    /// whose re-serialised text might differ (whitespace, unsorted or escaped keys, escapes
    /// serde_json would not write, numbers that are not plain integers).
    pub(super) fn is_canonical(json: &[u8]) -> bool {
        let mut at = 0;
        value(json, &mut at) && at == json.len()
    }

    fn value(json: &[u8], at: &mut usize) -> bool {
        match json.get(*at) {
            Some(b'{') => object(json, at),
            Some(b'[') => array(json, at),
            Some(b'"') => string(json, at),
            Some(b't') => literal(json, at, b"true"),
            Some(b'f') => literal(json, at, b"false"),
            Some(b'n') => literal(json, at, b"null"),
            Some(b'-' | b'0'..=b'9') => integer(json, at),
            _ => false,
        }
    }

    fn object(json: &[u8], at: &mut usize) -> bool {
        *at += 1;
        if json.get(*at) == Some(&b'}') {
            *at += 1;
            return true;
        }
        let mut last: Option<&[u8]> = None;
        loop {
            let start = *at + 1;
            if json.get(*at) != Some(&b'"') || !string(json, at) {
                return false;
            }
            let key = &json[start..*at - 1];
            // A map sorts keys by their bytes; an escaped key's bytes are not its text's.
            if key.contains(&b'\\') || last.is_some_and(|last| last >= key) {
                return false;
            }
            last = Some(key);
            if json.get(*at) != Some(&b':') {
                return false;
            }
            *at += 1;
            if !value(json, at) {
                return false;
            }
            match json.get(*at) {
                Some(b',') => *at += 1,
                Some(b'}') => {
                    *at += 1;
                    return true;
                }
                _ => return false,
            }
        }
    }

    fn array(json: &[u8], at: &mut usize) -> bool {
        *at += 1;
        if json.get(*at) == Some(&b']') {
            *at += 1;
            return true;
        }
        loop {
            if !value(json, at) {
                return false;
            }
            match json.get(*at) {
                Some(b',') => *at += 1,
                Some(b']') => {
                    *at += 1;
                    return true;
                }
                _ => return false,
            }
        }
    }

    /// A string whose escapes are the ones serde_json writes: `\"`, `\\`, the short forms of
    /// control characters and `\u00xx` (lowercase) for the other control characters.
    fn string(json: &[u8], at: &mut usize) -> bool {
        *at += 1;
        loop {
            let Some(next) = json
                .get(*at..)
                .and_then(|rest| super::framing::find(rest, |b| b == b'"' || b == b'\\'))
            else {
                return false;
            };
            *at += next;
            if json[*at] == b'"' {
                *at += 1;
                return true;
            }
            match json.get(*at + 1) {
                Some(b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't') => *at += 2,
                Some(b'u') => {
                    let Some(hex) = json.get(*at + 2..*at + 6) else {
                        return false;
                    };
                    let lower_hex = |b: u8| matches!(b, b'0'..=b'9' | b'a'..=b'f');
                    if !(hex.starts_with(b"00")
                        && matches!(hex[2], b'0' | b'1')
                        && lower_hex(hex[3])
                        && !matches!(&hex[2..], b"08" | b"09" | b"0a" | b"0c" | b"0d"))
                    {
                        return false;
                    }
                    *at += 6;
                }
                _ => return false,
            }
        }
    }

    fn literal(json: &[u8], at: &mut usize, word: &[u8]) -> bool {
        let matched = json.get(*at..).is_some_and(|rest| rest.starts_with(word));
        *at += word.len();
        matched
    }

    /// A plain integer small enough for any integer type (`-0`, leading zeros, fractions and
    /// exponents are rewritten by a round trip).
    fn integer(json: &[u8], at: &mut usize) -> bool {
        let negative = json.get(*at) == Some(&b'-');
        let start = *at + usize::from(negative);
        let digits = json.get(start..).map_or(0, |rest| {
            rest.iter().take_while(|b| b.is_ascii_digit()).count()
        });
        *at = start + digits;
        let plain = match &json[start..*at] {
            [] => false,
            [b'0'] => !negative,
            [b'0', ..] => false,
            _ => digits <= 18,
        };
        plain && !matches!(json.get(*at), Some(b'.' | b'e' | b'E'))
    }

    #[cfg(test)]
    mod tests {
        use super::is_canonical;

        /// Text the check accepts is what a round trip through `Value` writes; the rest is
        /// either changed by one or (numbers with fractions) conservatively refused.
        #[test]
        fn canonical_text_is_what_a_round_trip_writes() {
            let samples = [
                (r#"{"a":1,"b":[true,false,null,"x"],"c":{"d":-5}}"#, true),
                (r#"{}"#, true),
                (r#"[]"#, true),
                (
                    "{\"content\":\"line \\\"q\\\" back\\\\slash\\ttab\\n caf\u{e9} \\u001f \\u0000\"}",
                    true,
                ),
                (r#"{"b":1,"a":2}"#, false),
                (r#"{"a":1,"a":2}"#, false),
                (r#"{ "a":1}"#, false),
                (r#"{"a": 1}"#, false),
                (r#"[1 ,2]"#, false),
                (r#"{"a":"\u00e9"}"#, false),
                (r#"{"a":"\u001F"}"#, false),
                (r#"{"a":"\u000a"}"#, false),
                (r#"{"a":"\u0008"}"#, false),
                (r#"{"a":"\/"}"#, false),
                (r#"{"a":"<\u003c>"}"#, false),
                (r#"{"\u0061":1}"#, false),
                (r#"{"a":1.0}"#, false),
                (r#"{"a":1e3}"#, false),
                (r#"{"a":-0}"#, false),
                (r#"{"a":0}"#, true),
                (r#"{"a":12345678901234567890123}"#, false),
                (r#"{"a":123456789012345678}"#, true),
                (r#"{"a":0,"b":-1}"#, true),
                ("{\"Z\":1,\"a\":2,\"\u{e9}\":3}", true),
                ("{\"a\":1}\n", false),
            ];
            for (json, canonical) in samples {
                let value: serde_json::Value = serde_json::from_str(json).unwrap();
                assert_eq!(is_canonical(json.as_bytes()), canonical, "{json}");
                let written = value.to_string();
                let round_trip = written == json;
                let conservative = json.contains("1.0");
                assert_eq!(round_trip, canonical || conservative, "{json}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::host_url;

    #[test]
    fn ollama_host_forms() {
        assert_eq!(host_url("localhost"), "http://localhost:11434");
        assert_eq!(host_url("0.0.0.0:8080"), "http://0.0.0.0:8080");
        assert_eq!(
            host_url("https://ollama.example.com"),
            "https://ollama.example.com"
        );
        assert_eq!(
            host_url("http://127.0.0.1:11434/"),
            "http://127.0.0.1:11434"
        );
        assert_eq!(host_url("[::1]"), "http://[::1]:11434");
    }
}
