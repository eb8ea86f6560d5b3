//! A loopback HTTP server that plays scripted replies (provider wire transcripts, byte for byte)
//! to the real provider clients, and records the requests it received.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    Router,
    body::{Body, Bytes},
    extract::{Request, State},
    http::{HeaderMap, StatusCode},
    response::Response,
};
use futures::StreamExt;
use tool_core::model::{
    ChatModel, ChatRequest, HttpOptions, Message, ModelEvent, ModelStream, ProviderError,
};

/// One scripted reply.
#[derive(Clone, Debug)]
pub(crate) struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Bytes,
    /// Send the body in pieces of this many bytes.
    chunk_size: Option<usize>,
    /// Wait this long before each piece (and before the headers, with `headers_delay`).
    chunk_delay: Duration,
    headers_delay: Duration,
    /// Abort the connection after this many bytes of the body.
    cut_after: Option<usize>,
}

impl Reply {
    fn new(status: u16, content_type: &str, body: &'static [u8]) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            body: Bytes::from_static(body),
            chunk_size: None,
            chunk_delay: Duration::ZERO,
            headers_delay: Duration::ZERO,
            cut_after: None,
        }
    }

    /// A 200 `text/event-stream` body built by the test.
    pub(crate) fn sse_owned(body: impl Into<Bytes>) -> Self {
        Self {
            body: body.into(),
            ..Self::sse(b"")
        }
    }

    /// A 200 `text/event-stream` body.
    pub(crate) fn sse(body: &'static [u8]) -> Self {
        Self::new(200, "text/event-stream", body)
    }

    /// A 200 `application/x-ndjson` body.
    pub(crate) fn ndjson(body: &'static [u8]) -> Self {
        Self::new(200, "application/x-ndjson", body)
    }

    /// A 200 `application/json` body built by the test.
    pub(crate) fn json_owned(body: impl Into<Bytes>) -> Self {
        Self {
            body: body.into(),
            ..Self::json(b"")
        }
    }

    /// A 200 `application/json` body.
    pub(crate) fn json(body: &'static [u8]) -> Self {
        Self::new(200, "application/json", body)
    }

    /// An error status with a JSON body.
    pub(crate) fn error(status: u16, body: &'static [u8]) -> Self {
        Self::new(status, "application/json", body)
    }

    /// The same reply with another body (one built by the test).
    pub(crate) fn body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = body.into();
        self
    }

    /// Adds a header.
    pub(crate) fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sends the body in `size`-byte pieces, each after `delay` (a slow, chunked stream).
    pub(crate) fn chunked(mut self, size: usize, delay: Duration) -> Self {
        self.chunk_size = Some(size.max(1));
        self.chunk_delay = delay;
        self
    }

    /// Sends the first `bytes` bytes of the body, then aborts the connection (the body stream
    /// fails, and the server drops the connection without finishing the chunked body).
    pub(crate) fn cut_after(mut self, bytes: usize) -> Self {
        self.cut_after = Some(bytes);
        self
    }

    /// Waits before sending the status line.
    pub(crate) fn delayed(mut self, delay: Duration) -> Self {
        self.headers_delay = delay;
        self
    }
}

/// A request the server received.
#[derive(Clone, Debug)]
pub(crate) struct Recorded {
    /// The path and query.
    pub(crate) uri: String,
    /// The headers.
    pub(crate) headers: HeaderMap,
    /// The body.
    pub(crate) body: Bytes,
}

impl Recorded {
    /// The body as JSON.
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("the request body is JSON")
    }

    /// A header's value.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

#[derive(Default)]
struct Script {
    replies: VecDeque<Reply>,
    requests: Vec<Recorded>,
}

/// The running server.
pub(crate) struct Server {
    url: String,
    script: Arc<Mutex<Script>>,
}

impl Server {
    /// Starts a server that answers successive requests with `replies`, then with 418.
    pub(crate) async fn start(replies: Vec<Reply>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        Self::serve(listener, url, replies)
    }

    /// Like [`start`](Self::start), over HTTPS with the certificate in `tests/tls/` (for
    /// `localhost` and `127.0.0.1`, issued by the test authority `tests/tls/ca.pem`).
    pub(crate) async fn start_tls(replies: Vec<Reply>) -> Self {
        let listener = TlsListener::bind().await;
        let url = format!("https://{}", listener.tcp.local_addr().unwrap());
        Self::serve(listener, url, replies)
    }

    fn serve<L>(listener: L, url: String, replies: Vec<Reply>) -> Self
    where
        L: axum::serve::Listener,
        L::Addr: std::fmt::Debug,
    {
        let script = Arc::new(Mutex::new(Script {
            replies: replies.into(),
            requests: Vec::new(),
        }));
        let app = Router::new()
            .fallback(answer)
            .with_state(Arc::clone(&script));
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self { url, script }
    }

    /// The server's root URL (`http://127.0.0.1:port`).
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// The requests received so far.
    pub(crate) fn requests(&self) -> Vec<Recorded> {
        self.script.lock().unwrap().requests.clone()
    }
}

/// A loopback listener that hands axum only the connections whose TLS handshake succeeded.
struct TlsListener {
    tcp: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
}

impl TlsListener {
    async fn bind() -> Self {
        use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject as _};

        let chain = CertificateDer::pem_slice_iter(include_bytes!("../tls/localhost.pem"))
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_slice(include_bytes!("../tls/localhost.key")).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap();
        Self {
            tcp: tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(),
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
        }
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let (stream, address) = self.tcp.accept().await.unwrap();
            // A client that refuses the certificate ends its handshake; wait for the next one.
            let handshake = self.acceptor.accept(stream);
            if let Ok(Ok(stream)) = tokio::time::timeout(Duration::from_secs(10), handshake).await {
                return (stream, address);
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}

async fn answer(State(script): State<Arc<Mutex<Script>>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    let reply = {
        let mut script = script.lock().unwrap();
        script.requests.push(Recorded {
            uri: parts.uri.to_string(),
            headers: parts.headers,
            body,
        });
        script.replies.pop_front()
    };
    let Some(reply) = reply else {
        return Response::builder()
            .status(StatusCode::IM_A_TEAPOT)
            .body(Body::from("no more scripted replies"))
            .unwrap();
    };
    tokio::time::sleep(reply.headers_delay).await;
    let mut response = Response::builder().status(reply.status);
    for (name, value) in &reply.headers {
        response = response.header(name, value);
    }
    let body = match (reply.chunk_size, reply.cut_after) {
        (None, None) => Body::from(reply.body),
        (size, cut) => {
            let sent = cut.unwrap_or(reply.body.len()).min(reply.body.len());
            let size = size.unwrap_or(sent.max(1));
            let pieces: Vec<Result<Bytes, std::io::Error>> = (0..sent)
                .step_by(size)
                .map(|at| Ok(reply.body.slice(at..(at + size).min(sent))))
                .chain(cut.map(|_| {
                    Err(std::io::Error::new(
                        std::io::ErrorKind::ConnectionReset,
                        "cut by the test",
                    ))
                }))
                .collect();
            let delay = reply.chunk_delay;
            Body::from_stream(futures::stream::iter(pieces).then(move |piece| async move {
                tokio::time::sleep(delay).await;
                piece
            }))
        }
    };
    response.body(body).unwrap()
}

/// A loopback address nothing listens on (a port that was free a moment ago): connecting to
/// it is refused.
pub(crate) fn closed_address() -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

/// Retries that happen at once (the tests count requests, they do not time them).
pub(crate) fn fast_retries() -> HttpOptions {
    HttpOptions::default()
        .initial_backoff(Duration::from_millis(1))
        .max_backoff(Duration::from_millis(50))
}

/// The conversation the provider tests send: a terse system prompt and a question about the
/// weather in `city`.
pub(crate) fn question_about(city: &str) -> Vec<Message> {
    vec![
        Message::system("You are terse."),
        Message::user(format!("What is the weather in {city}?")),
    ]
}

/// Starts a server that gives `reply`, streams `request` through the client `connect` makes
/// for it, and reads the stream to its end.
pub(crate) async fn stream_once<M: ChatModel>(
    reply: Reply,
    request: ChatRequest,
    connect: impl FnOnce(&Server) -> M,
) -> (Collected, Server) {
    let server = Server::start(vec![reply]).await;
    let collected = Collected::from(connect(&server).stream(request).await.unwrap()).await;
    (collected, server)
}

/// What a stream produced: its events, and the error that ended it, if any.
#[derive(Debug)]
pub(crate) struct Collected {
    pub(crate) events: Vec<ModelEvent>,
    pub(crate) error: Option<ProviderError>,
}

impl Collected {
    /// Reads a stream to its end.
    pub(crate) async fn from(mut stream: ModelStream) -> Self {
        let mut events = Vec::new();
        while let Some(item) = stream.next().await {
            match item {
                Ok(event) => events.push(event),
                Err(error) => {
                    assert!(
                        stream.next().await.is_none(),
                        "a stream ends after its error"
                    );
                    return Self {
                        events,
                        error: Some(error),
                    };
                }
            }
        }
        Self {
            events,
            error: None,
        }
    }

    /// The concatenated text deltas.
    pub(crate) fn text(&self) -> String {
        self.events
            .iter()
            .filter_map(|event| match event {
                ModelEvent::TextDelta(text) => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The final `Done` (asserting there is exactly one, and that it is the last event).
    pub(crate) fn done(&self) -> (&tool_core::model::Message, &tool_core::model::FinishReason) {
        assert!(self.error.is_none(), "the stream failed: {:?}", self.error);
        let dones = self
            .events
            .iter()
            .filter(|event| matches!(event, ModelEvent::Done { .. }))
            .count();
        assert_eq!(dones, 1, "exactly one Done: {:#?}", self.events);
        match self.events.last() {
            Some(ModelEvent::Done {
                message,
                finish_reason,
            }) => (message, finish_reason),
            other => panic!("the last event is not Done: {other:?}"),
        }
    }

    /// The tool calls of the final message.
    pub(crate) fn calls(&self) -> Vec<tool_core::model::ToolCall> {
        match self.done().0 {
            tool_core::model::Message::Assistant { tool_calls, .. } => tool_calls.clone(),
            other => panic!("not an assistant message: {other:?}"),
        }
    }

    /// The calls announced by `ToolCallFinished`, in order.
    pub(crate) fn ended_calls(&self) -> Vec<tool_core::model::ToolCall> {
        self.events
            .iter()
            .filter_map(|event| match event {
                ModelEvent::ToolCallFinished { call, .. } => Some(call.clone()),
                _ => None,
            })
            .collect()
    }

    /// The `(index, id, name)` of each `ToolCallStarted`.
    pub(crate) fn starts(&self) -> Vec<(usize, String, String)> {
        self.events
            .iter()
            .filter_map(|event| match event {
                ModelEvent::ToolCallStarted(start) => {
                    Some((start.index, start.id.clone(), start.name.clone()))
                }
                _ => None,
            })
            .collect()
    }

    /// The concatenated argument deltas of call `index`.
    pub(crate) fn argument_deltas(&self, index: usize) -> String {
        self.events
            .iter()
            .filter_map(|event| match event {
                ModelEvent::ToolCallDelta {
                    index: at,
                    arguments,
                } if *at == index => Some(arguments.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The last usage event.
    pub(crate) fn usage(&self) -> Option<tool_core::model::Usage> {
        self.events.iter().rev().find_map(|event| match event {
            ModelEvent::Usage(usage) => Some(*usage),
            _ => None,
        })
    }
}

/// A JSON value parsed from a call's arguments text.
pub(crate) fn args(call: &tool_core::model::ToolCall) -> serde_json::Value {
    serde_json::from_str(&call.arguments).expect("the arguments are JSON")
}

/// Two tools, `get_weather(city)` and `read_file(path)`, as plain schemas.
pub(crate) fn tools() -> tool_core::model::RequestTools {
    let tool = |name: &str, description: &str, field: &str| {
        tool_core::ChatTool::new(
            name,
            description,
            serde_json::json!({
                "type": "object",
                "properties": { field: { "type": "string" } },
                "required": [field]
            }),
        )
    };
    tool_core::model::RequestTools::from_definitions(vec![
        tool("get_weather", "Current weather in a city.", "city"),
        tool("read_file", "Read a text file.", "path"),
    ])
}

/// The status, code and message of a provider API error from `provider`; any other outcome
/// fails the test.
pub(crate) fn api_error(
    provider: tool_core::Provider,
    error: Option<ProviderError>,
) -> (Option<u16>, Option<String>, String) {
    match error {
        Some(ProviderError::Api {
            provider: from,
            status,
            code,
            message,
        }) if from == provider => (status, code, message),
        other => panic!("expected a {provider} API error, got {other:?}"),
    }
}

/// Where `needle` first occurs in `haystack` (a cut point in a transcript).
pub(crate) fn find(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
        .expect("the transcript holds the text")
}

/// A 5 MB file content with quotes, backslashes, newlines and non-ASCII text, so its JSON has
/// escapes throughout.
pub(crate) fn big_content() -> String {
    let line = "line \"quoted\" with a back\\slash, tab\t and café ünïcödé\n";
    line.repeat(5 * 1024 * 1024 / line.len() + 1)
}

/// How a connection cut by [`Reply::cut_after`] reads on the client side: the chunked body
/// stops before its closing chunk.
pub(crate) const CUT_CAUSE: &str = "error decoding response body: request or response body \
    error: error reading a body from connection: unexpected EOF during chunk size line";
