//! A `tools/call` over streamable HTTP sent as a request of its own (with hyper's client for a
//! plain `http://` URL, see [`Plain`], else with the connection's own `reqwest` client), beside
//! `rmcp`'s client, which keeps the connection (the handshake, the session, listing, the
//! server's notifications on its stream).
//!
//! `rmcp` sends every request through one worker task and decodes every message into its
//! `ServerJsonRpcMessage`, trying each kind of result in turn; for a gateway, which makes one
//! such call per call it serves, that is most of the work of a call. Here the request is one
//! POST with the headers `rmcp` sends (the negotiated protocol version, the configured headers,
//! the session id when the server gave one), and the answer, JSON or an SSE stream, is decoded
//! straight into what a tool result needs. Where `rmcp` puts a `progressToken` on every
//! request, this one carries it only when someone reads the call's progress (its context, or
//! the client's subscribers): a server given a token sets up reports. On the stream, progress
//! notifications go where `rmcp`'s do (the call's context and the client's subscribers, in
//! order), `list_changed` has the tools listed again, and a request of the server is answered
//! as the client's `rmcp` handler answers it. A call given up before its answer is cancelled on the server (through
//! `rmcp`'s peer, with the call's id), as one sent through `rmcp`.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::{
    client::legacy::{self, connect::HttpConnector},
    rt::{TokioExecutor, TokioTimer},
};
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
#[derive(Clone)]
pub(super) struct DirectHttp {
    client: reqwest::Client,
    /// hyper's own client, for a URL `reqwest` would send to as it is; see [`Plain`].
    plain: Option<Plain>,
    url: reqwest::Url,
    /// The configured headers, the negotiated protocol version, the content type and what is
    /// accepted.
    headers: HeaderMap,
}

/// hyper's client, which `reqwest` wraps, used alone for a plain `http://` URL with no
/// credentials in it while no proxy is configured in the environment: there `reqwest` adds
/// nothing to a request but work (its redirect policy parses the URL again on every request,
/// its layers are boxed and cloned per request). A redirect is left to `reqwest`, which follows
/// it within the origin, as the connection's other requests do: the request is sent again
/// through `reqwest`, and so is every later one.
#[derive(Clone)]
struct Plain {
    client: legacy::Client<HttpConnector, Full<Bytes>>,
    uri: hyper::Uri,
    /// Whether the server has redirected a request.
    redirected: Arc<AtomicBool>,
}

/// Whether the environment names a proxy for plain `http://` URLs, where `reqwest` looks for
/// one (which it may then skip for some hosts: those are sent through `reqwest` too).
fn proxy_configured() -> bool {
    ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"]
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|value| !value.is_empty()))
}

impl Plain {
    /// hyper's client for `url`, if `reqwest` would send to it as it is (`proxied`: whether
    /// the environment names a proxy).
    fn for_url(url: &reqwest::Url, proxied: bool) -> Option<Self> {
        if url.scheme() != "http"
            || !url.username().is_empty()
            || url.password().is_some()
            || proxied
        {
            return None;
        }
        let uri = url.as_str().parse().ok()?;
        let mut connector = HttpConnector::new();
        // As `reqwest` does.
        connector.set_nodelay(true);
        let client = legacy::Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .timer(TokioTimer::new())
            .build(connector);
        Some(Self {
            client,
            uri,
            redirected: Arc::new(AtomicBool::new(false)),
        })
    }

    /// POSTs `body` with `headers`.
    async fn post(
        &self,
        headers: HeaderMap,
        body: Bytes,
    ) -> Result<hyper::Response<hyper::body::Incoming>, String> {
        let mut request = hyper::Request::post(self.uri.clone())
            .body(Full::new(body))
            .map_err(|error| error.to_string())?;
        *request.headers_mut() = headers;
        self.client
            .request(request)
            .await
            .map_err(|error| format!("error sending request: {}", super::with_causes(&error)))
    }
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
            plain: Plain::for_url(&url, proxy_configured()),
            url,
            headers,
        })
    }

    /// A request's headers: the connection's, and the session id `session`.
    fn headers(&self, session: Option<&str>) -> Result<HeaderMap, String> {
        let mut headers = self.headers.clone();
        if let Some(session) = session {
            let value = HeaderValue::from_str(session)
                .map_err(|_| "the session id is not a valid header value".to_owned())?;
            headers.insert(crate::mcp::SESSION_ID_HEADER, value);
        }
        Ok(headers)
    }

    /// POSTs `body` (with the session id `session`): the response, or why there is none.
    async fn post(&self, body: Vec<u8>, session: Option<&str>) -> Result<Answer, String> {
        let body = Bytes::from(body);
        if let Some(plain) = &self.plain
            && !plain.redirected.load(Ordering::Relaxed)
        {
            let response = plain.post(self.headers(session)?, body.clone()).await?;
            if !is_redirect(response.status()) {
                return Ok(Answer::Plain(response));
            }
            plain.redirected.store(true, Ordering::Relaxed);
        }
        self.client
            .post(self.url.clone())
            .headers(self.headers(session)?)
            .body(body)
            .send()
            .await
            .map(Answer::Reqwest)
            .map_err(|error| super::with_causes(&error))
    }
}

/// Whether `reqwest` follows a response with `status` (within the origin).
fn is_redirect(status: StatusCode) -> bool {
    matches!(status.as_u16(), 301 | 302 | 303 | 307 | 308)
}

/// A response to a direct call's POST, from either client.
enum Answer {
    Reqwest(reqwest::Response),
    Plain(hyper::Response<hyper::body::Incoming>),
}

impl Answer {
    fn status(&self) -> StatusCode {
        match self {
            Self::Reqwest(response) => response.status(),
            Self::Plain(response) => response.status(),
        }
    }

    fn headers(&self) -> &HeaderMap {
        match self {
            Self::Reqwest(response) => response.headers(),
            Self::Plain(response) => response.headers(),
        }
    }

    /// The next part of the body, `None` at its end.
    async fn chunk(&mut self) -> Result<Option<Bytes>, String> {
        match self {
            Self::Reqwest(response) => response
                .chunk()
                .await
                .map_err(|error| super::with_causes(&error)),
            Self::Plain(response) => loop {
                match response.body_mut().frame().await {
                    None => return Ok(None),
                    Some(Err(error)) => return Err(super::with_causes(&error)),
                    Some(Ok(frame)) => {
                        if let Ok(data) = frame.into_data() {
                            return Ok(Some(data));
                        }
                    }
                }
            },
        }
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
    /// Left out when empty.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<&'a JsonObject>,
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
            meta: (!meta.is_empty()).then_some(meta),
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
        Err(error) => return Ok(Outcome::Unreachable(error)),
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
    mut response: Answer,
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
                Err(error) => return Outcome::Lost(LostAnswer::Other(error)),
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
            Err(error) => return Outcome::Lost(LostAnswer::Other(error)),
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
async fn refusal(status: StatusCode, mut response: Answer) -> Outcome {
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
    let http = http.clone();
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

    /// hyper alone sends to a plain `http://` URL; `reqwest` to anything it would change on
    /// the way: TLS, credentials (a basic `authorization` header), a proxy.
    #[tokio::test]
    async fn hyper_alone_sends_only_what_reqwest_would_send_as_it_is() {
        let plain = |url: &str, proxied: bool| {
            Plain::for_url(&reqwest::Url::parse(url).unwrap(), proxied).map(|plain| plain.uri)
        };
        assert_eq!(
            plain("http://127.0.0.1:8080/mcp?x=1", false).unwrap(),
            "http://127.0.0.1:8080/mcp?x=1"
        );
        assert_eq!(
            plain("http://[::1]/mcp", false).unwrap(),
            "http://[::1]/mcp"
        );
        assert_eq!(plain("http://127.0.0.1:8080/mcp", true), None);
        assert_eq!(plain("https://127.0.0.1:8080/mcp", false), None);
        assert_eq!(plain("http://user@127.0.0.1:8080/mcp", false), None);
        assert_eq!(plain("http://:secret@127.0.0.1:8080/mcp", false), None);
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
