//! The MCP client against servers nobody here wrote: a server written with the official MCP
//! Python SDK (`tests/mcp_python/server.py`, run by the SDK's `MCPServer`) and the reference
//! server `@modelcontextprotocol/server-everything` (`mcp_client_everything.rs`).
//!
//! The Python comes from the provisioning of `mcp_python.rs`; it is skipped, with a message
//! saying so, only when there is no `python3` at all.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::Arc,
    time::{Duration, Instant},
};

use futures::StreamExt as _;
use serde_json::{Value, json};
use tool_core::{
    Agent, AgentEvent, AgentOptions, CallContext, JsonObject, ToolRegistry,
    mcp::{McpClient, McpClientError, McpServerConfig, McpStatus, ReconnectPolicy},
    model::{ScriptedModel, ScriptedResponse},
};

use crate::mcp_python::{listening_url, python};

/// How long any wait for an asynchronous change may take before the test fails.
const LIMIT: Duration = Duration::from_secs(30);

pub(crate) fn args(value: Value) -> JsonObject {
    value.as_object().cloned().unwrap_or_default()
}

/// Polls `done` every 20 ms until it holds or [`LIMIT`] passes.
pub(crate) async fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + LIMIT;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    done()
}

fn server_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp_python/server.py")
}

/// The Python test server over stdio, its tools prefixed `py`.
pub(crate) fn python_server(python: &Path, extra: &[&str]) -> McpServerConfig {
    let mut argv = vec![
        server_script().to_string_lossy().into_owned(),
        "stdio".to_owned(),
    ];
    argv.extend(extra.iter().map(|arg| (*arg).to_owned()));
    McpServerConfig::command(python.to_string_lossy(), argv)
        .prefix("py")
        .connect_timeout(LIMIT)
}

async fn connect_python(python: &Path) -> (McpClient, Arc<ToolRegistry>) {
    let client = McpClient::connect(python_server(python, &[]))
        .await
        .unwrap();
    (client, Arc::new(ToolRegistry::new()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_of_tools_is_registered_with_valid_names() {
    let Some(python) = python() else { return };
    let (client, registry) = connect_python(python).await;
    assert_eq!(
        client.status(),
        McpStatus::Connected {
            protocol_version: "2025-11-25".to_owned()
        }
    );
    let registration = client.register_into(&registry).await.unwrap();

    let infos = client.tools();
    let dotted = infos
        .iter()
        .find(|tool| tool.remote_name == "files.read")
        .unwrap();
    let long = infos
        .iter()
        .find(|tool| tool.remote_name.starts_with("a_very_long"))
        .unwrap();
    assert_eq!(long.remote_name.len(), 70);
    assert!(
        dotted.local_name.starts_with("py_files_read_"),
        "{}",
        dotted.local_name
    );
    assert_eq!(dotted.local_name.len(), "py_files_read_".len() + 8);
    assert_eq!(long.local_name.len(), 64);
    assert!(long.local_name.starts_with("py_a_very_long_tool_name_xxx"));

    // 25 numbered tools come in pages of 10: all of them are there only if the client
    // followed `nextCursor` twice.
    let mut expected: Vec<String> = (0..25).map(|n| format!("py_page_{n:02}")).collect();
    expected.extend(
        [
            "py_echo",
            "py_fail",
            "py_cwd",
            "py_pid",
            "py_env",
            "py_add_tool",
            "py_remove_tool",
        ]
        .map(str::to_owned),
    );
    expected.push(dotted.local_name.clone());
    expected.push(long.local_name.clone());
    expected.extend(["py_progress", "py_exit"].map(str::to_owned));
    assert_eq!(registration.tool_names(), expected);
    assert_eq!(registry.get_tool_names(), expected);

    // Mapped names are mapped back when called.
    assert_eq!(
        registry
            .execute(&dotted.local_name, args(json!({"path": "/a/b"})))
            .await,
        "read /a/b"
    );
    assert_eq!(
        registry.execute(&long.local_name, JsonObject::new()).await,
        "long"
    );
    assert_eq!(
        registry.execute("py_page_24", JsonObject::new()).await,
        "page tool 24"
    );

    // The definition is the server's: description and input schema.
    let echo = registry.get("py_echo").unwrap().get_schema();
    assert_eq!(&*echo.function.description, "Repeat the text.");
    assert_eq!(echo.function.parameters["required"], json!(["text"]));
    assert_eq!(
        registry.metadata("py_echo").unwrap().category.as_deref(),
        Some("py")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_answer_the_exact_text_and_is_error_is_a_tool_error() {
    let Some(python) = python() else { return };
    let (client, registry) = connect_python(python).await;
    let _registration = client.register_into(&registry).await.unwrap();

    assert_eq!(
        registry
            .execute("py_echo", args(json!({"text": "héllo\nworld"})))
            .await,
        "héllo\nworld"
    );
    assert_eq!(
        registry
            .execute("py_fail", args(json!({"message": "the disk is full"})))
            .await,
        // `MCPServer` words its tool errors itself; the client passes them on as they are.
        "Error executing py_fail: Error executing tool fail: the disk is full"
    );
    let failed = registry
        .try_execute("py_fail", args(json!({"message": "boom"})))
        .await
        .unwrap_err();
    assert_eq!(
        failed.to_model_string(),
        "Error executing py_fail: Error executing tool fail: boom"
    );
    // The registry validates arguments against the server's schema before calling.
    assert_eq!(
        registry.execute("py_echo", args(json!({"text": 5}))).await,
        "Error: invalid arguments for py_echo: at /text: expected a string, got 5"
    );
    // Outside a registry, by local name.
    assert_eq!(
        client
            .call("py_echo", args(json!({"text": "direct"})))
            .await,
        Ok("direct".to_owned())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_child_gets_its_environment_and_working_directory() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let config = python_server(python, &[])
        .env("TOOL_CORE_MCP_TEST", "set by the test")
        .cwd(dir.path());
    let client = McpClient::connect(config).await.unwrap();
    assert_eq!(
        client
            .call("py_env", args(json!({"name": "TOOL_CORE_MCP_TEST"})))
            .await,
        Ok("set by the test".to_owned())
    );
    let cwd = client.call("py_cwd", JsonObject::new()).await.unwrap();
    assert_eq!(
        Path::new(&cwd).canonicalize().unwrap(),
        dir.path().canonicalize().unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_adds_and_removes_tools_in_the_registry() {
    let Some(python) = python() else { return };
    let (client, registry) = connect_python(python).await;
    let registration = client.register_into(&registry).await.unwrap();
    assert!(!registry.has_tool("py_late"));

    assert_eq!(
        registry
            .execute("py_add_tool", args(json!({"name": "late"})))
            .await,
        "late added"
    );
    assert!(eventually(|| registry.has_tool("py_late")).await);
    // The next request to a model sends the new list.
    assert!(
        registry
            .get_enabled_schemas()
            .iter()
            .any(|schema| &*schema.function.name == "py_late")
    );
    assert!(registration.tool_names().contains(&"py_late".to_owned()));
    assert_eq!(
        registry.execute("py_late", JsonObject::new()).await,
        "late called"
    );

    assert_eq!(
        registry
            .execute("py_remove_tool", args(json!({"name": "late"})))
            .await,
        "late removed"
    );
    assert!(eventually(|| !registry.has_tool("py_late")).await);
    assert!(registry.has_tool("py_echo"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_notifications_reach_subscribers() {
    let Some(python) = python() else { return };
    let (client, registry) = connect_python(python).await;
    let _registration = client.register_into(&registry).await.unwrap();
    let mut progress = client.subscribe_progress();

    assert_eq!(
        registry
            .execute("py_progress", args(json!({"steps": 3})))
            .await,
        "done"
    );
    // They come in the order the server sent them, and all before the answer.
    let mut seen = Vec::new();
    while let Ok(update) = progress.try_recv() {
        assert_eq!(
            (update.server.as_str(), update.tool.as_str()),
            ("py", "py_progress")
        );
        seen.push((update.progress, update.total, update.message));
    }
    assert_eq!(
        seen,
        [
            (1.0, Some(3.0), Some("step 1".to_owned())),
            (2.0, Some(3.0), Some("step 2".to_owned())),
            (3.0, Some(3.0), Some("step 3".to_owned())),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_reaches_the_call_context_of_the_call() {
    let Some(python) = python() else { return };
    let (client, registry) = connect_python(python).await;
    let _registration = client.register_into(&registry).await.unwrap();

    let reports = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = reports.clone();
    let call = CallContext::new("call-7", "py_progress").with_progress(move |progress| {
        sink.lock().unwrap().push(progress);
    });
    assert_eq!(
        registry
            .execute_with("py_progress", args(json!({"steps": 3})), call)
            .await,
        "done"
    );
    // Every notification the server sent before its answer has reached the context by the
    // time the answer is in, in order.
    let reports = reports.lock().unwrap();
    let seen: Vec<(&str, &str, f64, Option<&str>)> = reports
        .iter()
        .map(|report| {
            (
                report.call_id.as_str(),
                report.tool_name.as_str(),
                report.fraction,
                report.message.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("call-7", "py_progress", 1.0 / 3.0, Some("step 1")),
            ("call-7", "py_progress", 2.0 / 3.0, Some("step 2")),
            ("call-7", "py_progress", 1.0, Some("step 3")),
        ]
    );
}

/// The README's `while let Some(event) = events.next().await` loop ends after a turn that
/// called an MCP tool, as it does with local tools: nothing keeps the turn's event sender once
/// the call is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_stream_that_called_an_mcp_tool_ends_after_done() {
    let Some(python) = python() else { return };
    let (client, registry) = connect_python(python).await;
    let _registration = client.register_into(&registry).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new([
        ScriptedResponse::tool_call("c1", "py_progress", r#"{"steps": 3}"#),
        ScriptedResponse::tool_call("c2", "py_echo", r#"{"text": "from mcp"}"#),
        ScriptedResponse::text("All done."),
    ]);
    let agent = Agent::new(
        model,
        AgentOptions::new()
            .registry(registry.clone())
            .root_dir(dir.path()),
    );
    let mut events = agent.stream_chat("call the tools");
    let mut results = Vec::new();
    loop {
        let event = tokio::time::timeout(LIMIT, events.next())
            .await
            .expect("the turn goes on")
            .expect("the stream ends only after Done")
            .unwrap();
        match event {
            AgentEvent::ToolResult { id, content, .. } => results.push((id, content)),
            AgentEvent::Done(_) => break,
            _ => {}
        }
    }
    assert_eq!(
        results,
        [
            ("c1".to_owned(), "done".to_owned()),
            ("c2".to_owned(), "from mcp".to_owned())
        ]
    );
    let end = tokio::time::timeout(LIMIT, events.next()).await;
    assert!(
        matches!(end, Ok(None)),
        "the stream did not end after Done: {end:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_exits_answers_not_connected_until_it_is_back() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let block = dir.path().join("block");
    let block_arg = block.to_string_lossy().into_owned();
    let config = python_server(python, &["--block", &block_arg]).reconnect(
        ReconnectPolicy::new()
            .initial_delay(Duration::from_millis(50))
            .max_delay(Duration::from_millis(300)),
    );
    let client = McpClient::connect(config).await.unwrap();
    let registry = Arc::new(ToolRegistry::new());
    let _registration = client.register_into(&registry).await.unwrap();
    let first_pid = registry.execute("py_pid", JsonObject::new()).await;

    // From now on a restarted server exits at once, with status 3.
    std::fs::write(&block, "").unwrap();
    assert_eq!(registry.execute("py_exit", JsonObject::new()).await, "bye");
    assert!(
        eventually(|| matches!(
            client.status(),
            McpStatus::Disconnected { reason } if reason.contains("exit status: 3")
        ))
        .await,
        "{:?}",
        client.status()
    );
    let answer = registry
        .execute("py_echo", args(json!({"text": "hi"})))
        .await;
    assert!(
        answer.starts_with("Error executing py_echo: the MCP server 'py' is not connected: "),
        "{answer}"
    );
    assert!(answer.contains("exit status: 3"), "{answer}");
    assert!(answer.contains("blocked by the test"), "{answer}");
    // The tools stay registered meanwhile.
    assert!(registry.has_tool("py_echo"));

    std::fs::remove_file(&block).unwrap();
    assert!(
        eventually(|| matches!(client.status(), McpStatus::Connected { .. })).await,
        "{:?}",
        client.status()
    );
    assert_eq!(
        registry
            .execute("py_echo", args(json!({"text": "back"})))
            .await,
        "back"
    );
    assert_ne!(
        registry.execute("py_pid", JsonObject::new()).await,
        first_pid
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_unregisters_the_tools_and_stops_the_process() {
    let Some(python) = python() else { return };
    let (client, registry) = connect_python(python).await;
    let registration = client.register_into(&registry).await.unwrap();
    let pid = registry.execute("py_pid", JsonObject::new()).await;
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    assert!(proc_dir.exists(), "{pid}");
    let count = registry.len();
    assert!(count > 30, "{count}");

    client.close().await;
    assert_eq!(client.status(), McpStatus::Closed);
    assert!(
        eventually(|| !proc_dir.exists()).await,
        "process {pid} still runs"
    );
    // Registered tools say so until their registration is closed.
    assert_eq!(
        registry
            .execute("py_echo", args(json!({"text": "hi"})))
            .await,
        "Error executing py_echo: the MCP server 'py' is not connected: the client was closed"
    );
    registration.close().await;
    assert!(registry.is_empty(), "{:?}", registry.get_tool_names());
    assert!(matches!(
        client.register_into(&registry).await,
        Err(McpClientError::Closed { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_registration_unregisters_only_its_own_tools() {
    let Some(python) = python() else { return };
    let (client, registry) = connect_python(python).await;
    let registration = client.register_into(&registry).await.unwrap();
    // Someone replaces one of the tools meanwhile: it is theirs now and stays.
    registry.unregister("py_echo");
    registry.register(LocalEcho).unwrap();
    drop(registration);
    assert_eq!(registry.get_tool_names(), ["py_echo"]);
    assert_eq!(
        registry.execute("py_echo", JsonObject::new()).await,
        "local"
    );
}

struct LocalEcho;

#[tool_core::async_trait]
impl tool_core::ExecutableTool for LocalEcho {
    fn name(&self) -> &str {
        "py_echo"
    }

    fn get_schema(&self) -> tool_core::ChatTool {
        tool_core::ChatTool::new("py_echo", "A local tool.", json!({"type": "object"}))
    }

    async fn execute(&self, _args: JsonObject) -> Result<String, tool_core::ToolError> {
        Ok("local".to_owned())
    }
}

/// A Python MCP server over streamable HTTP, killed on drop.
pub(crate) struct HttpServer {
    child: Child,
    /// Its MCP endpoint.
    pub(crate) url: String,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `script` with `args`; it says "listening on URL" on its first stdout line.
pub(crate) fn start_python_http(python: &Path, script: &Path, args: &[&str]) -> HttpServer {
    let mut child = Command::new(python)
        .arg(script)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut server = HttpServer {
        child,
        url: String::new(),
    };
    server.url =
        listening_url(stdout).unwrap_or_else(|line| panic!("unexpected first line: {line:?}"));
    server
}

fn start_http_server(python: &Path, token: &str) -> HttpServer {
    start_python_http(python, &server_script(), &["http", "--token", token])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_sends_the_configured_headers() {
    let Some(python) = python() else { return };
    let server = start_http_server(python, "s3cret");

    let refused = McpClient::connect(
        McpServerConfig::url(&server.url)
            .prefix("web")
            .connect_timeout(LIMIT),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(refused, McpClientError::Handshake { .. }),
        "{refused}"
    );

    let client = McpClient::connect(
        McpServerConfig::url(&server.url)
            .header("authorization", "Bearer s3cret")
            .prefix("web")
            .connect_timeout(LIMIT),
    )
    .await
    .unwrap();
    let registry = Arc::new(ToolRegistry::new());
    let registration = client.register_into(&registry).await.unwrap();
    assert_eq!(registration.tool_names().len(), 36);
    assert_eq!(
        registry
            .execute("web_echo", args(json!({"text": "over http"})))
            .await,
        "over http"
    );
    assert_eq!(
        registry
            .execute("web_add_tool", args(json!({"name": "later"})))
            .await,
        "later added"
    );
    assert!(eventually(|| registry.has_tool("web_later")).await);
}

#[test]
fn invalid_configurations_are_errors() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let error = McpClient::connect(McpServerConfig::command("x", ["y"]).prefix("a.b"))
            .await
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid mcp tool prefix `a.b`: use 1 to 32 ASCII letters, digits, `_` or `-`"
        );
        let error = McpClient::connect(
            McpServerConfig::url("http://127.0.0.1:1/mcp").header("bad header", "x"),
        )
        .await
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid http header `bad header` for the mcp server"
        );
        let error = McpClient::connect(McpServerConfig::command(
            "/nonexistent/tool-core-mcp-server",
            ["--flag"],
        ))
        .await
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "cannot start the mcp server `/nonexistent/tool-core-mcp-server --flag`"
        );
        assert!(matches!(
            McpServerConfig::command_line("npx 'unclosed"),
            Err(McpClientError::CommandLine(_))
        ));
    });
}
