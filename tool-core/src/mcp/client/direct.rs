//! A `tools/call` over streamable HTTP sent with the connection's own `reqwest` client, beside
//! `rmcp`'s client, which keeps the connection (the handshake, the session, listing, the
//! server's notifications on its stream).
//!
//! `rmcp` sends every request through one worker task and decodes every message into its
//! `ServerJsonRpcMessage`, trying each kind of result in turn; for a gateway, which makes one
//! such call per call it serves, that is most of the work of a call. Here the request is one
//! POST with the headers `rmcp` sends (the negotiated protocol version, the configured headers,
//! the session id when the server gave one), and the answer, JSON or an SSE stream, is decoded
//! straight into what a tool result needs. On the stream, progress notifications go where
//! `rmcp`'s do (the call's context and the client's subscribers, in order), `list_changed` has
//! the tools listed again, and a request of the server is answered as the client's `rmcp`
//! handler answers it. A call given up before its answer is cancelled on the server (through
//! `rmcp`'s peer, with the call's id), as one sent through `rmcp`.

use std::sync::Arc;

use reqwest::{
    StatusCode,
    header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue},
};
use rmcp::model::{ContentBlock, ErrorData, ProgressNotificationParam};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{http::LostAnswer, lines::MAX_MESSAGE_SIZE};
use crate::JsonObject;

/// What a direct call needs of a connection over HTTP.
pub(super) struct DirectHttp {
    client: reqwest::Client,
    url: reqwest::Url,
    /// The configured headers, the negotiated protocol version, the content type and what is
    /// accepted.
    headers: HeaderMap,
}

impl DirectHttp {
    /// For the server at `url`, with the configured `headers` and the negotiated `version`.
    pub(super) fn new(
        client: reqwest::Client,
        url: &str,
        custom: impl IntoIterator<Item = (HeaderName, HeaderValue)>,
        version: &str,
    ) -> Option<Self> {
        let url = reqwest::Url::parse(url).ok()?;
        let mut headers: HeaderMap = custom.into_iter().collect();
        headers.insert(ACCEPT, HeaderValue::from_static(ACCEPTED));
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(JSON));
        headers.insert(
            HeaderName::from_static("mcp-protocol-version"),
            HeaderValue::from_str(version).ok()?,
        );
        Some(Self {
            client,
            url,
            headers,
        })
    }

    /// POSTs `body` (with the session id `session`): the response, or why there is none.
    async fn post(
        &self,
        body: Vec<u8>,
        session: Option<&str>,
    ) -> Result<reqwest::Response, reqwest::Error> {
        let mut request = self
            .client
            .post(self.url.clone())
            .headers(self.headers.clone())
            .body(body);
        if let Some(session) = session {
            request = request.header(crate::mcp::SESSION_ID_HEADER, session);
        }
        request.send().await
    }
}

const ACCEPTED: &str = "application/json, text/event-stream";
const JSON: &str = "application/json";
const EVENT_STREAM: &str = "text/event-stream";

/// A `tools/call` request.
#[derive(Serialize)]
struct CallRequest<'a> {
    jsonrpc: &'static str,
    id: &'a str,
    method: &'static str,
    params: CallParams<'a>,
}

#[derive(Serialize)]
struct CallParams<'a> {
    name: &'a str,
    arguments: &'a JsonObject,
    #[serde(rename = "_meta")]
    meta: &'a JsonObject,
}

/// The body of the `tools/call` request `id` of `remote` with `args` and `meta`.
pub(super) fn call_body(id: &str, remote: &str, args: &JsonObject, meta: &JsonObject) -> Vec<u8> {
    let request = CallRequest {
        jsonrpc: "2.0",
        id,
        method: "tools/call",
        params: CallParams {
            name: remote,
            arguments: args,
            meta,
        },
    };
    // A map of strings to JSON values always serializes.
    serde_json::to_vec(&request).unwrap_or_default()
}

/// One message of the server: an answer, a notification or a request of its own.
#[derive(Deserialize)]
struct Incoming {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<Value>,
    #[serde(default)]
    result: Option<ToolAnswer>,
    #[serde(default)]
    error: Option<ErrorData>,
}

/// The parts of a `tools/call` result the client reads.
#[derive(Deserialize)]
pub(super) struct ToolAnswer {
    #[serde(default)]
    pub(super) content: Option<Vec<ContentBlock>>,
    #[serde(default, rename = "structuredContent")]
    pub(super) structured_content: Option<Value>,
    #[serde(default, rename = "isError")]
    pub(super) is_error: Option<bool>,
}

/// How a direct call ended.
pub(super) enum Outcome {
    /// The server's result.
    Result(ToolAnswer),
    /// The server's error.
    Error(ErrorData),
    /// The request could not be sent or its response not begun: the connection is lost.
    Unreachable(String),
    /// The answer could not be had.
    Lost(LostAnswer),
}

/// The server no longer knows the session (`404 Not Found`): the call was not run, and
/// `rmcp` begins a new session.
pub(super) struct SessionGone;

/// What a direct call reports while it waits for its answer.
pub(super) trait Events {
    /// A progress notification of the call, in the order the server sent it.
    fn progress(&self, params: ProgressNotificationParam);
    /// The server's tools changed.
    fn tools_changed(&self);
}

/// Sends the `tools/call` request `body` (whose id is `id`) and waits for its answer.
pub(super) async fn call(
    http: &DirectHttp,
    session: Option<Arc<str>>,
    id: &str,
    body: Vec<u8>,
    events: &impl Events,
) -> Result<Outcome, SessionGone> {
    let response = match http.post(body, session.as_deref()).await {
        Ok(response) => response,
        Err(error) => return Ok(Outcome::Unreachable(super::with_causes(&error))),
    };
    if response.status() == StatusCode::NOT_FOUND && session.is_some() {
        return Err(SessionGone);
    }
    Ok(read_answer(http, session, id, response, events).await)
}

/// The outcome `response` gives the call `id`.
async fn read_answer(
    http: &DirectHttp,
    session: Option<Arc<str>>,
    id: &str,
    mut response: reqwest::Response,
    events: &impl Events,
) -> Outcome {
    let status = response.status();
    if !status.is_success() || status == StatusCode::ACCEPTED {
        return refusal(status, response).await;
    }
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    if content_type.starts_with(JSON) {
        let mut body = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    if body.len() + chunk.len() > MAX_MESSAGE_SIZE {
                        return Outcome::Lost(LostAnswer::TooLarge);
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(error) => {
                    return Outcome::Lost(LostAnswer::Other(super::with_causes(&error)));
                }
            }
        }
        return match serde_json::from_slice::<Incoming>(&body) {
            Ok(message) => answer(message, id).unwrap_or_else(|| {
                Outcome::Lost(LostAnswer::Other(
                    "the response is not the call's answer".to_owned(),
                ))
            }),
            Err(error) => Outcome::Lost(LostAnswer::Other(format!(
                "the response is not a JSON-RPC message: {error}"
            ))),
        };
    }
    if !content_type.starts_with(EVENT_STREAM) {
        return Outcome::Lost(LostAnswer::Other(format!(
            "the response's content type is {content_type:?}"
        )));
    }
    let mut events_read = SseEvents::default();
    let mut ready = Vec::new();
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => {
                return Outcome::Lost(LostAnswer::Other(
                    "the stream ended before the answer".to_owned(),
                ));
            }
            Err(error) => return Outcome::Lost(LostAnswer::Other(super::with_causes(&error))),
        };
        if events_read.push(&chunk, &mut ready).is_err() {
            return Outcome::Lost(LostAnswer::TooLarge);
        }
        for data in ready.drain(..) {
            let Ok(message) = serde_json::from_slice::<Incoming>(&data) else {
                continue;
            };
            match (message.method.as_deref(), &message.id) {
                (Some(method), Some(request_id)) => {
                    answer_request(http, session.clone(), method, request_id.clone());
                }
                (Some("notifications/progress"), None) => {
                    if let Some(params) = message
                        .params
                        .and_then(|params| serde_json::from_value(params).ok())
                    {
                        events.progress(params);
                    }
                }
                (Some("notifications/tools/list_changed"), None) => events.tools_changed(),
                (Some(_), None) => {}
                (None, _) => {
                    if let Some(outcome) = answer(message, id) {
                        return outcome;
                    }
                }
            }
        }
    }
}

/// The longest part of an error response's body read for its message.
const MAX_REFUSAL: usize = 64 * 1024;

/// The outcome of a response with the error status `status` (or `202 Accepted`, which answers
/// no request): the server's JSON-RPC error when the body is one, else the status with the
/// body's text.
async fn refusal(status: StatusCode, mut response: reqwest::Response) -> Outcome {
    let mut body = Vec::new();
    while body.len() < MAX_REFUSAL {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(MAX_REFUSAL);
    if let Ok(Incoming {
        error: Some(error), ..
    }) = serde_json::from_slice::<Incoming>(&body)
    {
        return Outcome::Error(error);
    }
    let text = String::from_utf8_lossy(&body);
    let text = text.trim();
    Outcome::Lost(LostAnswer::Other(if text.is_empty() {
        format!("HTTP status {status}")
    } else {
        format!("HTTP status {status}: {text}")
    }))
}

/// The outcome `message` gives call `id`, if it is its answer.
fn answer(message: Incoming, id: &str) -> Option<Outcome> {
    if message.method.is_some() || message.id.as_ref().and_then(Value::as_str) != Some(id) {
        return None;
    }
    match (message.result, message.error) {
        (_, Some(error)) => Some(Outcome::Error(error)),
        (Some(result), None) => Some(Outcome::Result(result)),
        (None, None) => None,
    }
}

/// Answers the server's request `method` (`id`) on a POST of its own, in the background, as the
/// client's `rmcp` handler does: `ping` and `roots/list` with an empty result, an elicitation
/// declined, anything else not found.
fn answer_request(http: &DirectHttp, session: Option<Arc<str>>, method: &str, id: Value) {
    let reply = match method {
        "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
        "roots/list" => json!({"jsonrpc": "2.0", "id": id, "result": {"roots": []}}),
        "elicitation/create" => {
            json!({"jsonrpc": "2.0", "id": id, "result": {"action": "decline"}})
        }
        _ => json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": -32601, "message": format!("method not found: {method}")},
        }),
    };
    let http = DirectHttp {
        client: http.client.clone(),
        url: http.url.clone(),
        headers: http.headers.clone(),
    };
    tokio::spawn(async move {
        let _ = http
            .post(reply.to_string().into_bytes(), session.as_deref())
            .await;
    });
}

/// The events of an SSE body, each event's `data` lines joined with `\n`; at most
/// [`MAX_MESSAGE_SIZE`] bytes an event. Lines end with LF or CRLF (what MCP servers send);
/// fields other than `data` and comments are skipped.
#[derive(Default)]
struct SseEvents {
    /// Bytes of a line not ended yet.
    line: Vec<u8>,
    /// The `data` of the event being read.
    data: Vec<u8>,
    /// Whether the event has a `data` field yet.
    has_data: bool,
}

/// An SSE event over [`MAX_MESSAGE_SIZE`].
struct TooLarge;

impl SseEvents {
    /// Reads `chunk`, adding each event it completes to `ready`.
    fn push(&mut self, mut chunk: &[u8], ready: &mut Vec<Vec<u8>>) -> Result<(), TooLarge> {
        while let Some(end) = chunk.iter().position(|byte| *byte == b'\n') {
            let line = if self.line.is_empty() {
                &chunk[..end]
            } else {
                self.line.extend_from_slice(&chunk[..end]);
                &self.line[..]
            };
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() {
                if self.has_data {
                    ready.push(std::mem::take(&mut self.data));
                    self.has_data = false;
                }
            } else if let Some(value) = line.strip_prefix(b"data") {
                let value = match value {
                    [b':', b' ', rest @ ..] | [b':', rest @ ..] => rest,
                    [] => &[],
                    // Another field whose name begins with `data`.
                    _ => {
                        self.line.clear();
                        chunk = &chunk[end + 1..];
                        continue;
                    }
                };
                if self.data.len() + value.len() + 1 > MAX_MESSAGE_SIZE {
                    return Err(TooLarge);
                }
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            self.line.clear();
            chunk = &chunk[end + 1..];
        }
        if self.line.len() + self.data.len() + chunk.len() > MAX_MESSAGE_SIZE {
            return Err(TooLarge);
        }
        self.line.extend_from_slice(chunk);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(chunks: &[&str]) -> Vec<String> {
        let mut parser = SseEvents::default();
        let mut ready = Vec::new();
        for chunk in chunks {
            assert!(parser.push(chunk.as_bytes(), &mut ready).is_ok());
        }
        ready
            .into_iter()
            .map(|data| String::from_utf8(data).unwrap())
            .collect()
    }

    #[test]
    fn sse_events_are_read_across_chunks_with_either_line_end() {
        assert_eq!(
            events(&[
                "event: message\r\nid: 1\r\ndata: {\"a\"",
                ":1}\r\n\r\n: a comment\n\ndata:x\ndata: y\n",
                "\n",
            ]),
            ["{\"a\":1}", "x\ny"]
        );
        assert_eq!(events(&["data: half\n"]), Vec::<String>::new());
        assert_eq!(events(&["datax: no\n\n"]), Vec::<String>::new());
    }

    #[test]
    fn an_sse_event_over_the_limit_is_refused() {
        let mut parser = SseEvents::default();
        let mut ready = Vec::new();
        let big = format!("data: {}\n", "x".repeat(MAX_MESSAGE_SIZE));
        assert!(parser.push(big.as_bytes(), &mut ready).is_err());
        let mut parser = SseEvents::default();
        assert!(
            parser
                .push(&vec![b'x'; MAX_MESSAGE_SIZE + 1], &mut ready)
                .is_err()
        );
    }
}
