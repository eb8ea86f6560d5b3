//! What one user may hold of the gateway: HTTP sessions and open streams (standalone `GET`
//! streams and 2026-07-28 `subscriptions/listen` streams) are capped per user, and every
//! request counts against a per-user rate, so that one user (one token) cannot take what the
//! gateway's global caps leave to everyone; a request without a user, or one refused for its
//! `Origin`, counts for nobody. And a loopback gateway with an `anonymous_user` does not give
//! that user to requests a reverse proxy on the same host forwards.
//!
//! The `mcp_gateway` example in front of the official Python SDK's upstream
//! (`tests/mcp_python/gateway_upstream.py`), over real loopback HTTP.

use std::time::{Duration, Instant};

use reqwest::{Method, header::HeaderMap};
use serde_json::{Value, json};

use crate::mcp_gateway::{
    ALICE, BOB, Gateway, LIMIT, SESSION_VERSION, begin_session, post, py_tools_without, runtime,
    session_post, session_status, session_tools, switch_off_request,
};
use crate::mcp_python::{background_runtime, python};
use crate::served::open_listen;

/// The JSON-RPC error code of a request over one of the user's limits.
const LIMITED: i64 = -32003;

fn initialize() -> Value {
    json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": SESSION_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "limits-test", "version": "1"}
        }
    })
}

fn tools_list() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
}

/// Asserts that `answer` is the JSON-RPC error of a request over a user's limit, whose message
/// begins with `message`.
fn assert_limited(answer: &Value, message: &str) {
    assert_eq!(answer["id"], Value::Null, "{answer}");
    assert_eq!(answer["error"]["code"], LIMITED, "{answer}");
    let text = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(text.starts_with(message), "{answer}");
}

/// One HTTP request to the MCP endpoint in session `session` (if any) as the user of `token`
/// (none: no credentials), with `headers`; the status, the headers and the body. The body of
/// an event stream is read until it ends or for 2 s.
fn request(
    method: Method,
    url: &str,
    token: Option<&str>,
    session: Option<&str>,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> (u16, HeaderMap, String) {
    runtime().block_on(async {
        let sent = send(method, url, token, session, headers, body);
        let response = tokio::time::timeout(LIMIT, sent).await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        (
            status,
            headers,
            read_for(response, Duration::from_secs(2)).await,
        )
    })
}

async fn send(
    method: Method,
    url: &str,
    token: Option<&str>,
    session: Option<&str>,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> reqwest::Response {
    // A client of its own: each request is a connection of its own, as each stream is. No
    // timeout here, which would end a stream the test holds: the callers bound the wait.
    let mut request = crate::http_client::client()
        .request(method, url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", SESSION_VERSION);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    request.send().await.unwrap()
}

/// The body of `response` as it comes within `wait`.
async fn read_for(mut response: reqwest::Response, wait: Duration) -> String {
    let mut body = String::new();
    let deadline = tokio::time::Instant::now() + wait;
    while let Ok(Ok(Some(chunk))) = tokio::time::timeout_at(deadline, response.chunk()).await {
        body.push_str(&String::from_utf8_lossy(&chunk));
    }
    body
}

/// The JSON-RPC messages of an event stream's body (or the body itself, when it is JSON).
fn messages(body: &str) -> Vec<Value> {
    if let Ok(message) = serde_json::from_str::<Value>(body) {
        return vec![message];
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect()
}

/// Opens the session's standalone event stream (HTTP `GET`) as the user of `token`, on
/// `runtime` (which keeps it open until the answer is dropped).
fn open_stream(
    runtime: &tokio::runtime::Runtime,
    url: &str,
    token: &str,
    session: &str,
) -> reqwest::Response {
    let sent = send(Method::GET, url, Some(token), Some(session), &[], None);
    runtime.block_on(async { tokio::time::timeout(LIMIT, sent).await.unwrap() })
}

/// A refused answer's status and JSON body (a refusal is not a stream).
fn refusal(runtime: &tokio::runtime::Runtime, response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let body = runtime.block_on(response.text()).unwrap();
    let body = serde_json::from_str(&body).unwrap_or_else(|_| panic!("{status}: {body}"));
    (status, body)
}

/// Opens a 2026-07-28 `subscriptions/listen` stream as the user of `token`, on `runtime`: the
/// status, the JSON-RPC messages that came first (the acknowledgment, and the request's answer
/// when it came within 2 s of it) and the answer, which keeps the stream open until dropped.
fn listen(
    runtime: &tokio::runtime::Runtime,
    url: &str,
    token: &str,
) -> (u16, Vec<Value>, reqwest::Response) {
    runtime.block_on(async {
        let client = crate::http_client::client();
        let sent = open_listen(&client, url, token);
        let mut response = tokio::time::timeout(LIMIT, sent).await.unwrap().unwrap();
        let status = response.status().as_u16();
        let mut seen = String::new();
        let mut deadline = tokio::time::Instant::now() + LIMIT;
        let mut acknowledged = false;
        loop {
            let found = messages(&seen);
            if found.iter().any(|message| message["id"] == 7) {
                break;
            }
            let ack = "notifications/subscriptions/acknowledged";
            if !acknowledged && found.iter().any(|message| message["method"] == ack) {
                acknowledged = true;
                deadline = tokio::time::Instant::now() + Duration::from_secs(2);
            }
            match tokio::time::timeout_at(deadline, response.chunk()).await {
                Ok(Ok(Some(chunk))) => seen.push_str(&String::from_utf8_lossy(&chunk)),
                _ => break,
            }
        }
        (status, messages(&seen), response)
    })
}

/// Tries `attempt` every 200 ms until it answers `Some`, for at most `LIMIT`.
fn within_limit<T>(what: &str, mut attempt: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + LIMIT;
    loop {
        if let Some(done) = attempt() {
            return done;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_users_sessions_are_capped_and_an_ended_one_makes_room_for_that_user_alone() {
    let Some(python) = python() else { return };
    let gateway = Gateway::with_python(python, "max_sessions_per_user = 2");
    let url = &gateway.url;
    let first = begin_session(url, ALICE);
    let second = begin_session(url, ALICE);

    // A third is refused with a JSON-RPC error, and no session is made.
    let (status, session, answer) = session_post(url, ALICE, None, &initialize());
    assert_eq!(status, 429, "{answer:?}");
    assert_eq!(session, None);
    assert_limited(
        &answer.unwrap(),
        "session limit: at most 2 mcp sessions at once per user",
    );
    // Alice's sessions serve her as before; Bob's are his own.
    assert_eq!(session_tools(url, ALICE, &second), py_tools_without(&[]));
    let bobs = [begin_session(url, BOB), begin_session(url, BOB)];
    assert_eq!(session_tools(url, BOB, &bobs[1]), py_tools_without(&[]));

    // Ending one (HTTP DELETE) makes room for one more, and only one.
    assert_eq!(session_status(Method::DELETE, url, ALICE, &first), 202);
    let (status, _, _) = session_post(url, ALICE, Some(&first), &tools_list());
    assert_eq!(status, 404);
    let third = begin_session(url, ALICE);
    assert_eq!(session_tools(url, ALICE, &third), py_tools_without(&[]));
    let (status, session, answer) = session_post(url, ALICE, None, &initialize());
    assert_eq!((status, session), (429, None), "{answer:?}");
    // Bob, at his own cap, is refused too, whatever Alice holds.
    let (status, _, answer) = session_post(url, BOB, None, &initialize());
    assert_eq!(status, 429, "{answer:?}");
    let log = gateway.log();
    assert!(!log.contains("panicked"), "{log}");
}

#[test]
fn a_session_that_ends_idle_makes_room_for_another() {
    let Some(python) = python() else { return };
    let gateway = Gateway::with_python(
        python,
        "max_sessions_per_user = 1\nsession_idle_timeout_secs = 3",
    );
    let url = &gateway.url;
    let idle = begin_session(url, ALICE);
    let (status, _, answer) = session_post(url, ALICE, None, &initialize());
    assert_eq!(status, 429, "{answer:?}");
    // Left alone, the session ends, and Alice may begin another.
    let next = within_limit("the idle session to end and make room", || {
        let (status, session, _) = session_post(url, ALICE, None, &initialize());
        (status == 200).then_some(session).flatten()
    });
    assert_ne!(next, idle);
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, _) = session_post(url, ALICE, Some(&next), &initialized);
    assert_eq!(status, 202);
    assert_eq!(session_tools(url, ALICE, &next), py_tools_without(&[]));
}

#[test]
fn a_users_open_streams_are_capped_and_a_closed_one_makes_room_for_that_user_alone() {
    let Some(python) = python() else { return };
    let gateway = Gateway::with_python(python, "max_streams_per_user = 2");
    let url = &gateway.url;
    let streams = background_runtime();
    let session = begin_session(url, ALICE);
    let other = begin_session(url, ALICE);
    let mut held = Vec::new();
    for id in [&session, &other] {
        let stream = open_stream(&streams, url, ALICE, id);
        assert_eq!(stream.status().as_u16(), 200);
        held.push(stream);
    }

    // A third stream, in either session or as a 2026-07-28 listen stream, is refused with a
    // JSON-RPC error; the requests that open no stream still serve her.
    for id in [&session, &other] {
        let (status, answer) = refusal(&streams, open_stream(&streams, url, ALICE, id));
        assert_eq!(status, 429, "{answer}");
        assert_limited(
            &answer,
            "stream limit: at most 2 open streams at once per user",
        );
    }
    let (status, answer, _refused) = listen(&streams, url, ALICE);
    assert_eq!(status, 200, "{answer:?}");
    let refused = answer.iter().find(|message| message["id"] == 7);
    let refused = refused.unwrap_or_else(|| panic!("no answer to the listen request: {answer:?}"));
    assert_eq!(refused["error"]["code"], LIMITED, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("stream limit: at most 2 open streams at once per user"),
        "{refused}"
    );
    assert_eq!(session_tools(url, ALICE, &session), py_tools_without(&[]));

    // Bob's streams are his own.
    let bobs = begin_session(url, BOB);
    let bob_stream = open_stream(&streams, url, BOB, &bobs);
    assert_eq!(bob_stream.status().as_u16(), 200);
    let (status, acknowledged, bob_listens) = listen(&streams, url, BOB);
    assert_eq!(status, 200);
    assert!(
        acknowledged
            .iter()
            .any(|message| message["method"] == "notifications/subscriptions/acknowledged"),
        "{acknowledged:?}"
    );
    assert!(
        !acknowledged.iter().any(|message| message["id"] == 7),
        "{acknowledged:?}"
    );

    // Closing one of Alice's makes room for one more of hers.
    drop(held.pop());
    let reopened = within_limit("the closed stream to make room", || {
        let stream = open_stream(&streams, url, ALICE, &other);
        (stream.status().as_u16() == 200).then_some(stream)
    });
    held.push(reopened);
    let (status, _) = refusal(&streams, open_stream(&streams, url, ALICE, &session));
    assert_eq!(status, 429);
    // Her held streams are streams still: a switch reaches her session's first one.
    gateway.switch("alice", "py_echo", false);
    let first = held.remove(0);
    let told = streams.block_on(read_until(first, "notifications/tools/list_changed"));
    assert!(told, "the switch did not reach Alice's open stream");
    drop((bob_stream, bob_listens));
}

/// Whether `text` comes on `response` within 30 s.
async fn read_until(mut response: reqwest::Response, text: &str) -> bool {
    let mut seen = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while let Ok(Ok(Some(chunk))) = tokio::time::timeout_at(deadline, response.chunk()).await {
        seen.push_str(&String::from_utf8_lossy(&chunk));
        if seen.contains(text) {
            return true;
        }
    }
    false
}

#[test]
fn every_request_counts_against_its_users_rate_and_refused_ones_count_for_nobody() {
    let Some(python) = python() else { return };
    let gateway = Gateway::with_python(python, "requests_per_minute = 4");
    let url = &gateway.url;
    // Refused requests: without credentials, with a wrong token, and Alice's with a foreign
    // `Origin` (a web page's): none counts against anyone's requests.
    for _ in 0..3 {
        let (status, _, _) = request(Method::POST, url, None, None, &[], Some(&initialize()));
        assert_eq!(status, 401);
        let wrong = Some("not-a-token");
        let (status, _, _) = request(Method::POST, url, wrong, None, &[], Some(&initialize()));
        assert_eq!(status, 401);
        let foreign = [("origin", "https://evil.example")];
        let alice = Some(ALICE);
        let (status, _, _) = request(
            Method::POST,
            url,
            alice,
            None,
            &foreign,
            Some(&initialize()),
        );
        assert_eq!(status, 403);
    }

    // Alice's four: initialize, initialized, a stream (GET) and tools/list.
    let session = begin_session(url, ALICE);
    let (status, _, _) = request(Method::GET, url, Some(ALICE), Some(&session), &[], None);
    assert_eq!(status, 200);
    assert_eq!(session_tools(url, ALICE, &session), py_tools_without(&[]));
    // Her fifth, whatever it is, is refused with a JSON-RPC error and a time to wait.
    let (status, headers, body) = request(
        Method::POST,
        url,
        Some(ALICE),
        Some(&session),
        &[],
        Some(&tools_list()),
    );
    assert_eq!(status, 429, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_limited(&answer, "rate limit: at most 4 requests per minute");
    let wait: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=15).contains(&wait), "{wait}");
    for method in [Method::GET, Method::DELETE] {
        let (status, _, body) = request(method, url, Some(ALICE), Some(&session), &[], None);
        assert_eq!(status, 429, "{body}");
    }
    let alice = format!("Bearer {ALICE}");
    let (status, answer) = post(
        url,
        &[("authorization", alice.as_str())],
        switch_off_request("py_echo"),
    );
    assert_eq!(status, 429, "{answer}");
    assert_eq!(gateway.is_on("alice", "py_echo"), Some(true));

    // Bob's are his own: a session, its list and a call.
    let bobs = begin_session(url, BOB);
    assert_eq!(session_tools(url, BOB, &bobs), py_tools_without(&[]));
    let (status, answer) = gateway.call(BOB, "py_echo", json!({"text": "still"}));
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("\"still\""), "{answer}");
}

#[test]
fn a_request_a_same_host_proxy_forwards_is_not_the_anonymous_user() {
    let Some(python) = python() else { return };
    let gateway = Gateway::with_python(python, "anonymous_user = \"local\"\nstateless = true");
    let list = |headers: &[(&str, &str)]| {
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/list",
            "params": {"_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {}
            }}
        });
        post(&gateway.url, headers, body.to_string())
    };
    // A client on this host, without credentials, is the anonymous user (the quick start).
    let (status, answer) = list(&[]);
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("py_echo"), "{answer}");

    // The same request as a reverse proxy on this host forwards it (nginx with
    // `proxy_add_x_forwarded_for`, Caddy, Traefik, an RFC 7239 proxy, a `Via`-adding one) is
    // refused as a request without credentials.
    let forwarded = [
        ("x-forwarded-for", "203.0.113.7"),
        ("forwarded", "for=203.0.113.7;proto=https"),
        ("x-real-ip", "203.0.113.7"),
        ("x-forwarded-host", "mcp.example.com"),
        ("via", "1.1 proxy"),
    ];
    for header in forwarded {
        let (status, answer) = list(&[header]);
        assert_eq!(status, 401, "{header:?}: {answer}");
        let answer: Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(answer["error"]["code"], -32001, "{answer}");
        let (status, answer) = post(&gateway.url, &[header], switch_off_request("py_echo"));
        assert_eq!(status, 401, "{header:?}: {answer}");
    }
    assert_eq!(gateway.is_on("local", "py_echo"), Some(true));
    // With a token, a forwarded request is its user's.
    let alice = format!("Bearer {ALICE}");
    let (status, answer) = list(&[
        ("authorization", alice.as_str()),
        ("x-forwarded-for", "203.0.113.7"),
    ]);
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("py_echo"), "{answer}");
    let log = gateway.log();
    assert!(
        log.contains("`anonymous_user` is for clients on this host only"),
        "{log}"
    );
}

#[test]
fn a_request_from_the_trusted_proxy_without_its_user_header_is_nobody() {
    let Some(python) = python() else { return };
    let gateway = Gateway::with_python(
        python,
        "anonymous_user = \"local\"\nstateless = true\n\
         [gateway.trusted_proxy]\naddresses = [\"127.0.0.1\"]\nuser_header = \"x-forwarded-user\"",
    );
    let switch = switch_off_request("py_echo");
    // From the proxy's address, the user is the one the proxy names, or nobody.
    let (status, answer) = post(&gateway.url, &[], switch.clone());
    assert_eq!(status, 401, "{answer}");
    assert_eq!(gateway.is_on("local", "py_echo"), Some(true));
    let (status, answer) = post(&gateway.url, &[("x-forwarded-user", "bob")], switch);
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("py_echo is off"), "{answer}");
    assert_eq!(gateway.is_on("bob", "py_echo"), Some(false));
    assert_eq!(gateway.is_on("local", "py_echo"), Some(true));
}
