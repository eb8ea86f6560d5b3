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

use bytes::Bytes;
use futures::Stream;
use serde::{Deserialize, Serialize};
use serde_json::{Value, value::RawValue};
use serde_with::skip_serializing_none;

use super::wire::framing::{self, FrameStream};
use super::wire::prelude::*;

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
    read_base_url: host_url,
    model: "OLLAMA_MODEL",
};

impl Default for OllamaConfig {
    fn default() -> Self {
        Self {
            endpoint: Endpoint::new("http://localhost:11434", "llama3.2"),
        }
    }
}

provider_config!(
    OllamaConfig,
    ENV,
    /// The settings from the environment: `OLLAMA_HOST` (as Ollama reads it: `host`,
    /// `host:port` or a URL), `OLLAMA_MODEL` and `OLLAMA_API_KEY`.
);

impl OllamaConfig {
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
        (true, _) | (false, "https") => "",
        (false, _) => ":11434",
    };
    format!("{scheme}://{authority}{port}{path}")
}

http_client!(
    /// A client of Ollama's native `/api/chat`.
    OllamaClient,
    OllamaChat,
    OllamaConfig
);

/// Ollama's native `/api/chat` wire.
#[derive(Debug)]
pub(crate) struct OllamaChat;

impl Wire for OllamaChat {
    type Config = OllamaConfig;
    type Decoder = OllamaDecoder;
    const PROVIDER: Provider = PROVIDER;
    const KEY: KeyHeader = KeyHeader::Bearer;
    const ACCEPT_EVENT_STREAM: bool = false;

    fn urls(endpoint: &Endpoint) -> (String, String) {
        let url = endpoint.url("/api/chat");
        (url.clone(), url)
    }

    /// Newline-delimited JSON (lines of `/api/generate`, with text in `response`, are read too).
    fn frames<S, B, E>(body: S) -> FrameStream
    where
        S: Stream<Item = Result<B, E>> + Send + 'static,
        B: Into<Bytes>,
        E: std::fmt::Display,
    {
        framing::ndjson(body)
    }

    fn request_body(
        config: &OllamaConfig,
        request: &ChatRequest,
        stream: bool,
    ) -> Result<Bytes, ProviderError> {
        let tools = match &request.tool_choice {
            ToolChoice::Required => return Err(cannot_force("`required`")),
            ToolChoice::Tool(name) => return Err(cannot_force(&format!("tool `{name}`"))),
            ToolChoice::Allowed { .. } => return Err(cannot_force("an allowed-tools list")),
            ToolChoice::None => None,
            ToolChoice::Auto => {
                (!request.tools.is_empty()).then(|| request.tools.provider_json(PROVIDER))
            }
        };
        let settings = &request.settings;
        let options = (settings.temperature.is_some() || settings.max_tokens.is_some()).then_some(
            WireOptions {
                temperature: settings.temperature,
                num_predict: settings.max_tokens,
            },
        );
        ChatBody {
            model: &config.endpoint.model,
            messages: request.messages.iter().map(WireMessage::from).collect(),
            stream,
            tools: tools.as_deref(),
            own: OwnFields {
                options,
                // <https://github.com/ollama/ollama/blob/main/docs/api.md#request-structured-outputs>
                format: request.response_format.as_ref().map(|format| match format {
                    ResponseFormat::JsonSchema { schema, .. } => schema.clone(),
                    _ => Value::from("json"),
                }),
            },
        }
        .write()
    }

    fn answer(body: &[u8]) -> Result<ChatResponse, ProviderError> {
        let reply: OwnedReply = read_json(PROVIDER, body)?;
        let mut answer = Answer::default();
        let mut sink = Vec::new();
        let message = reply.message.unwrap_or_default();
        answer.text(&message.content, &mut sink);
        for call in message.tool_calls {
            add_call(
                &mut answer,
                call.id.as_deref(),
                &call.function.name,
                arguments_text(call.function.arguments.as_deref()),
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
}

/// The error for a tool choice that forces a call, which `/api/chat` cannot express.
fn cannot_force(choice: &str) -> ProviderError {
    ProviderError::Config(format!(
        "ollama cannot force a tool call: /api/chat has no tool choice (asked for {choice})"
    ))
}

/// What an `/api/chat` request sends beside the [`ChatBody`] fields.
#[skip_serializing_none]
#[derive(Serialize)]
struct OwnFields {
    options: Option<WireOptions>,
    format: Option<Value>,
}

#[skip_serializing_none]
#[derive(Serialize)]
struct WireOptions {
    temperature: Option<f32>,
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
                ..
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
    arguments: SharedStr,
    out: &mut Vec<ModelEvent>,
) {
    let slot = answer.calls.push();
    answer.calls.set_id(slot, id.unwrap_or_default());
    answer.calls.set_name(slot, name, out);
    answer.calls.append_shared(slot, arguments, out);
    answer.calls.end(slot, out);
}

/// A call's arguments as text: JSON as the server wrote it (an object, usually), or the
/// content of a string. The text is not parsed again nor re-serialised: `serde_json` has checked
/// it while reading the line (a large call decoded several times slower than it parsed when it
/// was re-serialised).
fn arguments_text(raw: Option<&RawValue>) -> SharedStr {
    let Some(raw) = raw else {
        return SharedStr::default();
    };
    let text = raw.get();
    if text.starts_with('"') {
        if let Ok(content) = serde_json::from_str::<String>(text) {
            return SharedStr::from(content);
        }
    }
    if text == "null" {
        return SharedStr::default();
    }
    SharedStr::from(text)
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
    arguments: Option<Box<RawValue>>,
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
pub(crate) struct OllamaDecoder {
    answer: Answer,
}

impl Decoder for OllamaDecoder {
    fn feed(&mut self, frame: Frame, out: &mut Vec<ModelEvent>) -> Result<bool, ProviderError> {
        let (line, unterminated) = match frame {
            Frame::Line { line, unterminated } => (line, unterminated),
            Frame::Event { data, .. } => (Bytes::from(data), false),
            Frame::Raw(text) => return Err(stream_error(PROVIDER, &text)),
        };
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
            for call in message.tool_calls.unwrap_or_default() {
                add_call(
                    &mut self.answer,
                    call.id.as_deref(),
                    &call.function.name,
                    arguments_text(call.function.arguments),
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
