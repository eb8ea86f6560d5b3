//! What bounds the HTTP servers' use of memory and sockets: the MCP session cap (a refused
//! `initialize` over it, a new session once one ended), the header-read timeout (a half-sent
//! request is closed), and the connection cap (connections over it are refused while the
//! existing ones go on). The MCP server and `http_server::serve` (which the web chat uses too),
//! over raw TCP and HTTP on loopback; every wait is bounded and the tests count, never time.

use std::{
    net::SocketAddr,
    time::{Duration, Instant},
};

use serde_json::Value;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};
use tool_core::{
    ToolContext, create_default_tool_registry,
    http_server::{ServerLimits, serve},
    mcp::{McpOptions, McpServer},
};

use crate::{
    mcp_python::{background_runtime, python},
    mcp_server_access::{initialize, post, run_probe},
};

/// How long a test waits for something that should happen at once.
const BOUND: Duration = Duration::from_secs(10);

fn server(options: McpOptions) -> McpServer {
    let registry = std::sync::Arc::new(create_default_tool_registry(ToolContext::default()));
    McpServer::with_options(registry, options)
}

async fn delete_session(url: &str, session: &str) -> u16 {
    crate::http_client::client()
        .delete(url)
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Sends `initialize` until the server admits it (at most until [`BOUND`]); the number of
/// refusals on the way, each checked to be the session-cap answer.
async fn initialize_when_admitted(url: &str, limit: usize) -> (String, usize) {
    let deadline = Instant::now() + BOUND;
    let mut refusals = 0;
    loop {
        let answer = post(url, &[], initialize(1)).await;
        if answer.status == 200 {
            let session = answer.headers["mcp-session-id"]
                .to_str()
                .unwrap()
                .to_owned();
            return (session, refusals);
        }
        check_session_cap_refusal(&answer.status, &answer.message(), limit);
        refusals += 1;
        assert!(Instant::now() < deadline, "no session was freed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn check_session_cap_refusal(status: &u16, message: &Value, limit: usize) {
    assert_eq!(*status, 503, "{message}");
    assert_eq!(
        message["error"]["message"],
        format!(
            "the server has reached its limit of {limit} mcp sessions; \
             end one (HTTP DELETE) or wait for an idle one to expire"
        ),
        "{message}"
    );
}

#[tokio::test]
async fn mcp_http_refuses_an_initialize_over_the_session_cap_until_a_session_ends() {
    let http = server(McpOptions::new().max_sessions(2))
        .start_http("127.0.0.1:0")
        .await
        .unwrap();
    let url = http.url();
    let mut sessions = Vec::new();
    for _ in 0..2 {
        let answer = post(&url, &[], initialize(1)).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        sessions.push(
            answer.headers["mcp-session-id"]
                .to_str()
                .unwrap()
                .to_owned(),
        );
    }
    for id in 2..5 {
        let refused = post(&url, &[], initialize(id)).await;
        assert!(!refused.headers.contains_key("mcp-session-id"));
        check_session_cap_refusal(&refused.status, &refused.message(), 2);
    }

    // A session the client ends makes room for one more, and only one.
    assert!(matches!(
        delete_session(&url, &sessions[0]).await,
        200 | 202 | 204
    ));
    let (third, _) = initialize_when_admitted(&url, 2).await;
    assert_ne!(third, sessions[1]);
    let refused = post(&url, &[], initialize(9)).await;
    check_session_cap_refusal(&refused.status, &refused.message(), 2);
    http.shutdown().await.unwrap();
}

#[tokio::test]
async fn mcp_http_frees_the_slot_of_a_session_idle_past_its_timeout() {
    let options = McpOptions::new()
        .max_sessions(1)
        .session_idle_timeout(Duration::from_millis(200));
    let http = server(options).start_http("127.0.0.1:0").await.unwrap();
    let url = http.url();
    let first = post(&url, &[], initialize(1)).await;
    assert_eq!(first.status, 200);
    let first = first.headers["mcp-session-id"].to_str().unwrap().to_owned();
    let (second, _) = initialize_when_admitted(&url, 1).await;
    assert_ne!(first, second);
    // The expired session is gone, not merely over the count.
    let gone = crate::http_client::client()
        .post(&url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &first)
        .header("mcp-protocol-version", "2025-06-18")
        .json(&serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), 404);
    http.shutdown().await.unwrap();
}

#[test]
fn python_sdk_over_the_session_cap_gets_a_clear_error() {
    let Some(python) = python() else { return };
    let runtime = background_runtime();
    let http = runtime
        .block_on(server(McpOptions::new().max_sessions(1)).start_http("127.0.0.1:0"))
        .unwrap();
    let url = http.url();
    let held = runtime.block_on(post(&url, &[], initialize(1)));
    assert_eq!(held.status, 200);

    let report = run_probe(python, &[&url]);
    let error = report["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("the server has reached its limit of 1 mcp sessions"),
        "{report}"
    );
    runtime.block_on(http.shutdown()).unwrap();
}

/// Reads until the end of a response head (or the connection's end); `None` when the
/// connection ended (or was reset) before any byte came.
async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        let read = tokio::time::timeout(BOUND, stream.read(&mut byte))
            .await
            .expect("the server neither answered nor closed the connection");
        match read {
            Ok(1) => {
                head.push(byte[0]);
                if head.ends_with(b"\r\n\r\n") {
                    break;
                }
            }
            Ok(_) | Err(_) => break,
        }
    }
    (!head.is_empty()).then(|| String::from_utf8_lossy(&head).into_owned())
}

/// Asserts that the server closes `stream` (end of file or reset) within [`BOUND`] without
/// having answered a request on it; any bytes it sent first are returned.
async fn assert_closed(stream: &mut TcpStream) -> String {
    let mut seen = Vec::new();
    let mut buffer = [0u8; 1024];
    loop {
        let read = tokio::time::timeout(BOUND, stream.read(&mut buffer))
            .await
            .expect("the connection is still open");
        match read {
            Ok(0) | Err(_) => return String::from_utf8_lossy(&seen).into_owned(),
            Ok(n) => seen.extend_from_slice(&buffer[..n]),
        }
    }
}

/// A complete request for a path nothing serves (a `404` with an empty body), on a connection
/// kept alive.
const NOT_FOUND: &[u8] = b"GET /nothing-here HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

async fn get_404(stream: &mut TcpStream) {
    stream.write_all(NOT_FOUND).await.unwrap();
    let head = read_head(stream).await.expect("no answer");
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
}

/// Checks the header timeout on a server at `addr` whose timeout is short: a request whose
/// head never ends is closed unanswered, and a connection that sends nothing is closed too.
async fn check_header_timeout(addr: SocketAddr) {
    let mut half_sent = TcpStream::connect(addr).await.unwrap();
    half_sent
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n")
        .await
        .unwrap();
    let answered = assert_closed(&mut half_sent).await;
    assert!(!answered.starts_with("HTTP/1.1 2"), "{answered}");

    let mut silent = TcpStream::connect(addr).await.unwrap();
    let answered = assert_closed(&mut silent).await;
    assert!(!answered.starts_with("HTTP/1.1 2"), "{answered}");

    // A prompt client is served as usual.
    let mut prompt = TcpStream::connect(addr).await.unwrap();
    get_404(&mut prompt).await;
}

/// Checks the connection cap of 2 on a server at `addr`: a third connection is refused while
/// two are open, the open ones keep working, and closing one lets a new one in.
async fn check_connection_cap(addr: SocketAddr) {
    let mut first = TcpStream::connect(addr).await.unwrap();
    get_404(&mut first).await;
    let mut second = TcpStream::connect(addr).await.unwrap();
    get_404(&mut second).await;

    for _ in 0..3 {
        let mut over = TcpStream::connect(addr).await.unwrap();
        let answered = assert_closed(&mut over).await;
        assert!(
            answered.is_empty() || answered.starts_with("HTTP/1.1 503"),
            "{answered}"
        );
    }
    // The two connections within the cap still work.
    get_404(&mut first).await;
    get_404(&mut second).await;

    drop(second);
    let deadline = Instant::now() + BOUND;
    loop {
        let mut next = TcpStream::connect(addr).await.unwrap();
        let _ = next.write_all(NOT_FOUND).await;
        if let Some(head) = read_head(&mut next).await {
            if head.starts_with("HTTP/1.1 404") {
                break;
            }
            assert!(head.starts_with("HTTP/1.1 503"), "{head}");
        }
        assert!(
            Instant::now() < deadline,
            "the closed connection's slot was not freed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    get_404(&mut first).await;
}

#[tokio::test]
async fn mcp_http_closes_a_request_whose_head_never_ends() {
    let options = McpOptions::new()
        .http_limits(ServerLimits::new().header_read_timeout(Duration::from_millis(200)));
    let http = server(options).start_http("127.0.0.1:0").await.unwrap();
    check_header_timeout(http.local_addr()).await;
    http.shutdown().await.unwrap();
}

#[tokio::test]
async fn mcp_http_refuses_connections_over_the_cap_and_serves_the_others() {
    let http = server(McpOptions::new().http_limits(ServerLimits::new().max_connections(2)))
        .start_http("127.0.0.1:0")
        .await
        .unwrap();
    check_connection_cap(http.local_addr()).await;
    http.shutdown().await.unwrap();
}

/// `http_server::serve` (the web chat's server) around a plain router.
async fn serve_router(limits: ServerLimits) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = axum::Router::new().route("/", axum::routing::get(|| async { "hello" }));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(serve(listener, router, limits, async move {
        let _ = stopped.await;
    }));
    (addr, stop)
}

#[tokio::test]
async fn bounded_serve_closes_slow_heads_and_refuses_connections_over_the_cap() {
    let limits = ServerLimits::new().header_read_timeout(Duration::from_millis(200));
    let (addr, _stop) = serve_router(limits).await;
    check_header_timeout(addr).await;

    let (addr, _stop) = serve_router(ServerLimits::new().max_connections(2)).await;
    check_connection_cap(addr).await;

    let mut hello = TcpStream::connect(addr).await.unwrap();
    hello
        .write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let answer = assert_closed(&mut hello).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with("hello"), "{answer}");
}

#[tokio::test]
async fn bounded_serve_returns_after_its_shutdown_signal() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = axum::Router::new().route("/", axum::routing::get(|| async { "hello" }));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(serve(
        listener,
        router,
        ServerLimits::default(),
        async move {
            let _ = stopped.await;
        },
    ));
    let mut open = TcpStream::connect(addr).await.unwrap();
    get_404(&mut open).await;
    stop.send(()).unwrap();
    // The idle keep-alive connection is closed and the server returns.
    assert_closed(&mut open).await;
    tokio::time::timeout(BOUND, served)
        .await
        .expect("serve did not return")
        .unwrap()
        .unwrap();
    assert!(TcpStream::connect(addr).await.is_err());
}
