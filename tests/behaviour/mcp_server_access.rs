//! Who may talk to the MCP HTTP server: the `Origin` rule (loopback pages by default, absent
//! `Origin` admitted), the authentication hook (a bearer token or a check over the request's
//! headers; 401 with `WWW-Authenticate`), and that a refused request changes nothing. Over real
//! HTTP on loopback, with raw requests and with the official MCP Python SDK.

use std::{
    path::Path,
    process::Command,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use axum::http::HeaderMap;
use serde_json::{Value, json};
use tool_core::{
    ChatTool, ExecutableTool, JsonObject, ToolError, ToolRegistry, async_trait,
    mcp::{McpAuth, McpOptions, McpServer},
};

use crate::mcp_python::{ExampleServer, background_runtime, json_report, python};

/// A tool that counts its runs.
pub(crate) struct Counted {
    pub(crate) name: &'static str,
    pub(crate) runs: Arc<AtomicUsize>,
    pub(crate) metadata: tool_core::ToolMetadata,
}

#[async_trait]
impl ExecutableTool for Counted {
    fn name(&self) -> &str {
        self.name
    }

    fn get_schema(&self) -> ChatTool {
        ChatTool::new(self.name, "Counts its runs.", json!({"type": "object"}))
    }

    async fn execute(&self, _args: JsonObject) -> Result<String, ToolError> {
        let runs = self.runs.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(format!("run {runs}"))
    }

    fn metadata(&self) -> tool_core::ToolMetadata {
        self.metadata.clone()
    }
}

/// A registry with one tool, `count`, and the counter of its runs.
fn counting_registry() -> (Arc<ToolRegistry>, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = ToolRegistry::new();
    registry
        .register(Counted {
            name: "count",
            runs: runs.clone(),
            metadata: tool_core::ToolMetadata::new(),
        })
        .unwrap();
    (Arc::new(registry), runs)
}

/// A raw HTTP answer.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: reqwest::header::HeaderMap,
    pub(crate) body: String,
}

impl Answer {
    /// The JSON-RPC message of the body (plain JSON or the first SSE `data:` line holding
    /// one).
    pub(crate) fn message(&self) -> Value {
        serde_json::from_str(&self.body)
            .ok()
            .or_else(|| {
                self.body
                    .lines()
                    .filter_map(|line| line.strip_prefix("data:"))
                    .find_map(|data| serde_json::from_str(data.trim()).ok())
            })
            .unwrap_or_else(|| panic!("no JSON-RPC message in {}", self.body))
    }
}

/// POSTs `body` to `url` with `headers`.
pub(crate) async fn post(url: &str, headers: &[(&str, &str)], body: Value) -> Answer {
    let mut request = crate::http_client::client()
        .post(url)
        .header("accept", "application/json, text/event-stream");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.json(&body).send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.text().await.unwrap();
    Answer {
        status,
        headers,
        body,
    }
}

pub(crate) fn initialize(id: u64) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}
        }
    })
}

/// A 2026-07-28 self-contained `tools/call` of `name`, and the headers that version needs.
fn call_2026(name: &str) -> (Value, [(&'static str, String); 3]) {
    let body = json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": name, "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}
        }}
    });
    let headers = [
        ("mcp-protocol-version", "2026-07-28".to_owned()),
        ("mcp-method", "tools/call".to_owned()),
        ("mcp-name", name.to_owned()),
    ];
    (body, headers)
}

#[tokio::test]
async fn mcp_http_refuses_foreign_origins_with_403_and_admits_loopback_pages_and_no_origin() {
    let (registry, _) = counting_registry();
    let http = McpServer::new(registry)
        .start_http("127.0.0.1:0")
        .await
        .unwrap();
    let url = http.url();
    for origin in [
        "http://attacker.invalid",
        "https://localhost.attacker.invalid",
        "http://127.0.0.1.attacker.invalid:8080",
        "null",
        "not an origin",
    ] {
        let answer = post(&url, &[("origin", origin)], initialize(1)).await;
        assert_eq!(answer.status, 403, "{origin}: {}", answer.body);
        assert!(
            !answer.headers.contains_key("mcp-session-id"),
            "{origin}: a refused request got a session"
        );
    }
    for origin in [
        "http://localhost:5173",
        "http://127.0.0.1:3000",
        "http://[::1]:8080",
        "https://localhost",
    ] {
        let answer = post(&url, &[("origin", origin)], initialize(1)).await;
        assert_eq!(answer.status, 200, "{origin}: {}", answer.body);
        assert_eq!(answer.message()["result"]["protocolVersion"], "2025-06-18");
    }
    // Non-browser clients send no Origin.
    let answer = post(&url, &[], initialize(1)).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    http.shutdown().await.unwrap();
}

#[tokio::test]
async fn mcp_http_allowed_origins_replace_the_loopback_default() {
    let (registry, _) = counting_registry();
    let options = McpOptions::new().allowed_origins(["https://app.example.com"]);
    let http = McpServer::with_options(registry, options)
        .start_http("127.0.0.1:0")
        .await
        .unwrap();
    let url = http.url();
    let allowed = post(
        &url,
        &[("origin", "https://app.example.com")],
        initialize(1),
    )
    .await;
    assert_eq!(allowed.status, 200, "{}", allowed.body);
    for origin in ["http://localhost:5173", "http://app.example.com"] {
        let refused = post(&url, &[("origin", origin)], initialize(1)).await;
        assert_eq!(refused.status, 403, "{origin}: {}", refused.body);
    }
    http.shutdown().await.unwrap();
}

#[tokio::test]
async fn mcp_http_with_a_bearer_token_answers_401_without_it_on_every_method() {
    let (registry, _) = counting_registry();
    let options = McpOptions::new().bearer_token("s3cret-token");
    let http = McpServer::with_options(registry, options)
        .start_http("127.0.0.1:0")
        .await
        .unwrap();
    let url = http.url();

    let absent = post(&url, &[], initialize(1)).await;
    assert_eq!(absent.status, 401, "{}", absent.body);
    assert_eq!(absent.headers["www-authenticate"], "Bearer realm=\"mcp\"");
    assert!(!absent.headers.contains_key("mcp-session-id"));

    for authorization in [
        "Bearer wrong",
        "Bearer s3cret-tokenX",
        "Bearer s3cret-toke",
        "Basic czNjcmV0LXRva2Vu",
        "s3cret-token",
        "Bearer",
    ] {
        let wrong = post(&url, &[("authorization", authorization)], initialize(1)).await;
        assert_eq!(wrong.status, 401, "{authorization}: {}", wrong.body);
        assert_eq!(
            wrong.headers["www-authenticate"], "Bearer realm=\"mcp\", error=\"invalid_token\"",
            "{authorization}"
        );
        assert!(!wrong.body.contains("s3cret"), "{}", wrong.body);
    }

    let client = crate::http_client::client();
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let response = client
            .request(method.clone(), &url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", "anything")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 401, "{method}");
    }

    for authorization in ["Bearer s3cret-token", "bearer  s3cret-token"] {
        let admitted = post(&url, &[("authorization", authorization)], initialize(1)).await;
        assert_eq!(admitted.status, 200, "{authorization}: {}", admitted.body);
        assert!(admitted.headers.contains_key("mcp-session-id"));
    }
    http.shutdown().await.unwrap();
}

#[tokio::test]
async fn mcp_http_auth_check_sees_the_request_headers() {
    let (registry, _) = counting_registry();
    let auth = McpAuth::check(|headers: &HeaderMap| {
        headers.get("x-api-key").is_some_and(|key| key == "k-1")
    })
    .challenge("ApiKey realm=\"tools\"");
    let http = McpServer::with_options(registry, McpOptions::new().auth(auth))
        .start_http("127.0.0.1:0")
        .await
        .unwrap();
    let url = http.url();
    let refused = post(&url, &[("x-api-key", "k-2")], initialize(1)).await;
    assert_eq!(refused.status, 401);
    assert_eq!(
        refused.headers["www-authenticate"],
        "ApiKey realm=\"tools\""
    );
    let admitted = post(&url, &[("x-api-key", "k-1")], initialize(1)).await;
    assert_eq!(admitted.status, 200, "{}", admitted.body);
    http.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_refused_request_runs_no_tool_and_takes_no_session() {
    let (registry, runs) = counting_registry();
    let options = McpOptions::new().bearer_token("t0ken").max_sessions(1);
    let http = McpServer::with_options(registry, options)
        .start_http("127.0.0.1:0")
        .await
        .unwrap();
    let url = http.url();
    let (call, headers) = call_2026("count");
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut all: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        all.extend_from_slice(extra);
        all
    };

    let no_token = post(&url, &with(&[]), call.clone()).await;
    assert_eq!(no_token.status, 401);
    let foreign = post(
        &url,
        &with(&[
            ("authorization", "Bearer t0ken"),
            ("origin", "http://attacker.invalid"),
        ]),
        call.clone(),
    )
    .await;
    assert_eq!(foreign.status, 403);
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "a refused call ran the tool"
    );

    // Refused initializes do not use up the single session.
    for headers in [
        vec![],
        vec![("authorization", "Bearer nope")],
        vec![
            ("authorization", "Bearer t0ken"),
            ("origin", "http://attacker.invalid"),
        ],
    ] {
        let refused = post(&url, &headers, initialize(1)).await;
        assert!(refused.status == 401 || refused.status == 403);
    }
    let admitted = post(&url, &[("authorization", "Bearer t0ken")], initialize(1)).await;
    assert_eq!(admitted.status, 200, "{}", admitted.body);

    let ran = post(
        &url,
        &with(&[("authorization", "Bearer t0ken")]),
        call.clone(),
    )
    .await;
    assert_eq!(ran.status, 200, "{}", ran.body);
    assert_eq!(ran.message()["result"]["content"][0]["text"], "run 1");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    http.shutdown().await.unwrap();
}

#[test]
fn the_token_never_shows_in_debug_output() {
    let options = McpOptions::new().bearer_token("s3cret-token");
    let (registry, _) = counting_registry();
    let server = McpServer::with_options(registry, options.clone());
    for shown in [
        format!("{options:?}"),
        format!("{options:#?}"),
        format!("{server:?}"),
        format!("{:?}", server.handler()),
        format!("{:?}", McpAuth::bearer("s3cret-token")),
    ] {
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("redacted"), "{shown}");
    }
}

#[test]
fn python_sdk_connects_with_the_bearer_token_and_is_refused_without_it() {
    let Some(python) = python() else { return };
    let runtime = background_runtime();
    let (registry, runs) = counting_registry();
    let http = runtime
        .block_on(
            McpServer::with_options(registry, McpOptions::new().bearer_token("py-t0ken"))
                .start_http("127.0.0.1:0"),
        )
        .unwrap();
    let url = http.url();

    let admitted = run_probe(
        python,
        &["--header", "Authorization: Bearer py-t0ken", &url],
    );
    assert_eq!(
        admitted,
        json!({"tools": ["count"], "call": {"is_error": false, "text": "run 1"}}),
    );
    for args in [
        vec![url.as_str()],
        vec!["--header", "Authorization: Bearer wrong", url.as_str()],
    ] {
        let refused = run_probe(python, &args);
        let error = refused["error"].as_str().unwrap_or_default().to_owned();
        assert!(error.contains("unauthorized"), "{args:?}: {refused}");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    runtime.block_on(http.shutdown()).unwrap();
}

/// Runs `tests/mcp_python/probe.py` with `args` and parses its JSON report.
pub(crate) fn run_probe(python: &Path, args: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp_python/probe.py");
    let mut command = Command::new(python);
    command.arg(&script).args(args);
    json_report(command, Duration::from_secs(120))
}

#[tokio::test]
async fn the_example_takes_its_bearer_token_from_the_environment() {
    let root = tempfile::tempdir().unwrap();
    let server =
        ExampleServer::start_with_env(root.path(), false, &[("MCP_SERVER_TOKEN", "example-t0ken")]);
    let refused = post(&server.url, &[], initialize(1)).await;
    assert_eq!(refused.status, 401);
    let admitted = post(
        &server.url,
        &[("authorization", "Bearer example-t0ken")],
        initialize(1),
    )
    .await;
    assert_eq!(admitted.status, 200, "{}", admitted.body);
    assert_eq!(
        admitted.message()["result"]["serverInfo"]["name"],
        "tool-core-example"
    );
}
