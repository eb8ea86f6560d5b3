//! The `mcp_gateway` example in front of upstream servers over streamable HTTP, whose calls it
//! sends with requests of its own beside `rmcp`'s client: the official Python SDK's server
//! (`tests/mcp_python/server.py http`: a session, answers as SSE streams, a bearer token) and
//! the `mcp_server` example (stateless, JSON answers), reached by this crate's `McpClient`.

use std::{process::Command, sync::Arc, time::Duration};

use serde_json::json;
use tool_core::{
    ToolRegistry,
    mcp::{McpClient, McpServerConfig},
};

use crate::{
    mcp_client::{HttpServer, start_python_http},
    mcp_gateway::{ALICE, Gateway, call_request, config, jsonrpc_answer, post_as},
    mcp_python::{SERVER, python},
    proxy_support::{Faulty, first_id},
    served::Served,
};

const LIMIT: Duration = Duration::from_secs(30);

/// The `mcp_server` example serving stateless streamable HTTP; killed on drop.
fn example() -> Served {
    let mut command = Command::new(SERVER);
    command.args(["--http", "127.0.0.1:0", "--stateless"]);
    Served::start(command)
}

/// The Python SDK's server over HTTP, behind the bearer token `up-secret`, and its
/// `[[servers]]` entry (server `python`, prefix `py`) with `suffix` after its URL.
fn python_sdk(python: &std::path::Path, suffix: &str) -> (HttpServer, String) {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp_python/server.py");
    let sdk = start_python_http(python, &script, &["http", "--token", "up-secret"]);
    let entry = format!(
        "[[servers]]\nname = \"python\"\nprefix = \"py\"\nurl = \"{}{suffix}\"\n\
         headers = {{ Authorization = \"Bearer up-secret\" }}\n\n",
        sdk.url
    );
    (sdk, entry)
}

/// Alice's client of `gateway`.
async fn alice(gateway: &Gateway) -> McpClient {
    McpClient::connect(
        McpServerConfig::url(gateway.url.clone())
            .header("Authorization", format!("Bearer {ALICE}")),
    )
    .await
    .unwrap()
}

fn args(value: serde_json::Value) -> tool_core::JsonObject {
    value.as_object().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_reach_http_upstreams_with_their_session_and_progress_comes_back() {
    let Some(python) = python() else { return };
    let (_sdk, sdk_entry) = python_sdk(python, "");
    let example = example();
    let dir = tempfile::tempdir().unwrap();
    let servers = format!(
        "{sdk_entry}[[servers]]\nname = \"example\"\nprefix = \"ex\"\nurl = {:?}\n\n",
        example.url
    );
    let gateway = Gateway::start_with(&config(dir.path(), "", &servers), &[], &[]);

    let client = alice(&gateway).await;
    let mut progress = client.subscribe_progress();
    let registry = Arc::new(ToolRegistry::new());
    let _registration = client.register_into(&registry).await.unwrap();
    let call = |tool: &'static str, arguments: serde_json::Value| {
        let registry = registry.clone();
        async move {
            tokio::time::timeout(LIMIT, registry.execute(tool, args(arguments)))
                .await
                .expect("the call answered")
        }
    };

    // The Python server keeps a session and answers on SSE streams, behind a bearer token.
    let echoed = call("py_echo", json!({"text": "through the gateway"})).await;
    assert_eq!(echoed, "through the gateway", "{}", gateway.log());
    let failed = call("py_fail", json!({"message": "it broke"})).await;
    assert!(failed.contains("it broke"), "{failed}");
    // The example answers JSON, without a session.
    assert_eq!(call("ex_add", json!({"a": 2, "b": 3})).await, "5");

    // The upstream's progress reaches the gateway's client, in order, before the answer.
    assert_eq!(call("py_progress", json!({"steps": 3})).await, "done");
    let mut seen = Vec::new();
    while let Ok(Ok(report)) = tokio::time::timeout(Duration::from_secs(5), progress.recv()).await {
        seen.push((report.tool, report.progress, report.total, report.message));
        if seen.len() == 3 {
            break;
        }
    }
    let step = |n: u32| {
        (
            "py_progress".to_owned(),
            f64::from(n) / 3.0,
            Some(1.0),
            Some(format!("step {n}")),
        )
    };
    assert_eq!(seen, [step(1), step(2), step(3)], "{}", gateway.log());
    client.close().await;
}

/// An upstream URL the server redirects within its origin (Starlette's `/mcp/` to `/mcp`, as
/// many Python servers answer) serves calls, their errors and their progress, each call after
/// the first as well as the first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_reach_an_http_upstream_that_redirects_within_its_origin() {
    let Some(python) = python() else { return };
    let (_sdk, servers) = python_sdk(python, "/");
    let dir = tempfile::tempdir().unwrap();
    let gateway = Gateway::start_with(&config(dir.path(), "", &servers), &[], &[]);
    let client = alice(&gateway).await;
    let call = |tool: &'static str, arguments: serde_json::Value| {
        let client = &client;
        async move {
            tokio::time::timeout(LIMIT, client.call(tool, args(arguments)))
                .await
                .expect("the call answered")
        }
    };
    for text in ["first", "second"] {
        let echoed = call("py_echo", json!({"text": text})).await;
        assert_eq!(echoed, Ok(text.to_owned()), "{}", gateway.log());
    }
    let failed = call("py_fail", json!({"message": "it broke"}))
        .await
        .unwrap_err();
    assert_eq!(
        failed.to_string(),
        "Error executing py_fail: Error executing tool fail: it broke",
        "{}",
        gateway.log()
    );
    assert_eq!(
        call("py_progress", json!({"steps": 2})).await,
        Ok("done".to_owned())
    );
    client.close().await;
}

/// The gateway (its tools for Alice's client) in front of the misbehaving Python server
/// (`tests/mcp_python/misbehaving_server.py http`: a session, answers as SSE streams) behind a
/// [`Faulty`] proxy, as server `h` with `extra` in its entry.
struct Behind {
    front: Faulty,
    gateway: Gateway,
    client: McpClient,
    _upstream: HttpServer,
    _dir: tempfile::TempDir,
}

impl Behind {
    async fn start(python: &std::path::Path, extra: &str) -> Self {
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("mcp_python/misbehaving_server.py");
        let upstream = start_python_http(python, &script, &["http"]);
        let front = Faulty::start(&upstream.url).await;
        let dir = tempfile::tempdir().unwrap();
        let servers = format!(
            "[[servers]]\nname = \"h\"\nurl = {:?}\n{extra}\n\n",
            front.url
        );
        let gateway = Gateway::start_with(&config(dir.path(), "", &servers), &[], &[]);
        // The client keeps what the gateway sends whole, so the gateway's own cut shows.
        let client = McpClient::connect(
            McpServerConfig::url(gateway.url.clone())
                .header("Authorization", format!("Bearer {ALICE}"))
                .max_result_size(1 << 20),
        )
        .await
        .unwrap();
        Self {
            front,
            gateway,
            client,
            _upstream: upstream,
            _dir: dir,
        }
    }

    /// Alice's call of `tool` through the gateway.
    async fn call(&self, tool: &str, arguments: serde_json::Value) -> Result<String, String> {
        tokio::time::timeout(LIMIT, self.client.call(tool, args(arguments)))
            .await
            .expect("the call answered")
            .map_err(|error| error.to_string())
    }

    /// What the proxy answered since `from` requests: each request's method and status.
    fn seen_since(&self, from: usize) -> Vec<(String, u16)> {
        self.front.seen()[from..]
            .iter()
            .map(|seen| (seen.asked.clone(), seen.status))
            .collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_in_a_session_the_upstream_ended_is_sent_again_in_a_new_one() {
    let Some(python) = python() else { return };
    let behind = Behind::start(python, "").await;
    assert_eq!(
        behind.call("h_echo", json!({"text": "first"})).await,
        Ok("first".to_owned())
    );

    let before = behind.front.seen().len();
    behind.front.end_sessions();
    assert_eq!(
        behind.call("h_echo", json!({"text": "second"})).await,
        Ok("second".to_owned()),
        "{}",
        behind.gateway.log()
    );
    let seen = behind.seen_since(before);
    let call_404 = ("tools/call".to_owned(), 404);
    let call_200 = ("tools/call".to_owned(), 200);
    // The call was refused, not run; a new session was begun and the call sent in it.
    assert_eq!(seen.first(), Some(&call_404), "{seen:?}");
    let begun = seen
        .iter()
        .position(|seen| *seen == ("initialize".to_owned(), 200))
        .unwrap_or_else(|| panic!("no new session: {seen:?}"));
    assert_eq!(seen[begun + 1..].last(), Some(&call_200), "{seen:?}");
    assert_eq!(
        seen.iter().filter(|seen| **seen == call_200).count(),
        1,
        "{seen:?}"
    );

    // The next call goes straight to the new session.
    let before = behind.front.seen().len();
    assert_eq!(
        behind.call("h_echo", json!({"text": "third"})).await,
        Ok("third".to_owned())
    );
    assert_eq!(behind.seen_since(before), [call_200]);
    behind.client.close().await;
}

/// What Alice's client gets when the gateway's call of `h_echo` failed with `error`.
fn echo_failed(error: &str) -> Result<String, String> {
    Err(format!("Error executing h_echo: {error}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_statuses_of_the_upstream_are_errors_for_the_model_and_the_connection_stays() {
    let Some(python) = python() else { return };
    let behind = Behind::start(python, "").await;

    behind
        .front
        .fail_next_call(500, "text/plain", "the upstream broke\n");
    assert_eq!(
        behind.call("h_echo", json!({"text": "a"})).await,
        echo_failed(
            "the answer of the MCP server 'h' was lost: HTTP status 500 Internal Server Error: \
             the upstream broke"
        )
    );
    behind.front.fail_next_call(503, "text/plain", "");
    assert_eq!(
        behind.call("h_echo", json!({"text": "b"})).await,
        echo_failed(
            "the answer of the MCP server 'h' was lost: HTTP status 503 Service Unavailable"
        )
    );
    // A JSON-RPC error in the body is the server's word.
    behind.front.fail_next_call(
        400,
        "application/json",
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Bad Request: not now"}}"#,
    );
    assert_eq!(
        behind.call("h_echo", json!({"text": "c"})).await,
        echo_failed("the MCP server 'h' rejected the call: Bad Request: not now")
    );
    // An answer for no request.
    behind.front.fail_next_call(202, "text/plain", "");
    assert_eq!(
        behind.call("h_echo", json!({"text": "d"})).await,
        echo_failed("the answer of the MCP server 'h' was lost: HTTP status 202 Accepted")
    );

    assert_eq!(
        behind.call("h_echo", json!({"text": "after"})).await,
        Ok("after".to_owned())
    );
    assert!(
        !behind.gateway.log().contains("panicked"),
        "{}",
        behind.gateway.log()
    );
    behind.client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_answer_over_the_limit_is_refused_and_a_long_one_cut() {
    let Some(python) = python() else { return };
    let behind = Behind::start(python, "").await;

    let refused = behind
        .call("h_big", json!({ "size": 20 * 1024 * 1024 }))
        .await
        .unwrap_err();
    assert!(
        refused.starts_with(
            "Error executing h_big: the answer of the MCP server 'h' was over the limit of \
             16777216 bytes"
        ),
        "{refused}"
    );
    let size = McpServerConfig::DEFAULT_MAX_RESULT_SIZE + 1;
    let cut = behind.call("h_big", json!({ "size": size })).await.unwrap();
    let expected = format!(
        "{}\n[truncated: the result is {size} bytes; only the first {} are shown]",
        "x".repeat(McpServerConfig::DEFAULT_MAX_RESULT_SIZE),
        McpServerConfig::DEFAULT_MAX_RESULT_SIZE
    );
    assert!(
        cut == expected,
        "{} bytes, ending {:?}",
        cut.len(),
        &cut[cut.len().saturating_sub(200)..]
    );
    assert_eq!(
        behind.call("h_echo", json!({"text": "after"})).await,
        Ok("after".to_owned())
    );
    behind.client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_the_upstream_never_answers_is_cancelled_and_the_upstream_pinged() {
    let Some(python) = python() else { return };
    let behind = Behind::start(python, "timeout_ms = 1000").await;

    let before = behind.front.seen().len();
    assert_eq!(
        behind.call("h_silent", json!({})).await,
        Err("Error executing h_silent: the MCP server 'h' did not answer within 1s".to_owned())
    );
    // The call is cancelled on the server, by its id, and the server is asked whether it is
    // alive; it answers, so its connection stays.
    let deadline = std::time::Instant::now() + LIMIT;
    let (id, cancelled) = loop {
        let seen = behind.front.seen();
        let call = first_id(&seen[before..], "tools/call");
        let cancelled = first_id(&seen[before..], "notifications/cancelled");
        let pinged = seen[before..]
            .iter()
            .any(|seen| seen.asked == "ping" && seen.status == 200);
        if let (Some(call), Some(cancelled), true) = (&call, &cancelled, pinged) {
            break (call.clone(), cancelled.clone());
        }
        assert!(std::time::Instant::now() < deadline, "{seen:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(id, cancelled);
    assert_eq!(
        behind.call("h_echo", json!({"text": "after"})).await,
        Ok("after".to_owned())
    );
    behind.client.close().await;
}

/// What `meta_upstream.py http` (the official Python SDK's server, showing each call's
/// `_meta`) was sent when the gateway's caller put `meta` on its call, in a self-contained
/// 2026-07-28 request.
fn meta_seen(gateway: &Gateway, meta: serde_json::Value) -> serde_json::Value {
    let mut request: serde_json::Value =
        serde_json::from_str(&call_request("m_meta", json!({}))).unwrap();
    for (key, value) in meta.as_object().unwrap() {
        request["params"]["_meta"][key] = value.clone();
    }
    let (status, body) = post_as(&gateway.url, ALICE, request.to_string());
    assert_eq!(status, 200, "{body}\n{}", gateway.log());
    let answer = jsonrpc_answer(&body).unwrap();
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}\n{}", gateway.log()));
    serde_json::from_str(text).unwrap()
}

/// The gateway asks an HTTP upstream for progress only when its own caller asked for it:
/// without a listener a `progressToken` only makes the upstream set up reports nobody reads.
#[test]
fn an_http_upstream_is_asked_for_progress_only_when_the_caller_asks() {
    let Some(python) = python() else { return };
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp_python/meta_upstream.py");
    let upstream = start_python_http(python, &script, &["http"]);
    let servers = format!(
        "[[servers]]\nname = \"meta\"\nprefix = \"m\"\nurl = {:?}\n\n",
        upstream.url
    );
    let dir = tempfile::tempdir().unwrap();
    let gateway = Gateway::start_with(&config(dir.path(), "", &servers), &[], &[]);

    assert_eq!(meta_seen(&gateway, json!({})), json!({}));
    let asked = meta_seen(&gateway, json!({"progressToken": "p-1"}));
    let token = asked["progress_token"].as_str().unwrap_or_default();
    assert!(token.starts_with("tool-core-"), "{asked}");
    assert_eq!(asked.as_object().unwrap().len(), 1, "{asked}");
}
