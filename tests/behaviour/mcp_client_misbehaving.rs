//! The MCP client against a server that misbehaves on purpose
//! (`tests/mcp_python/misbehaving_server.py`, written with the official MCP Python SDK): a cursor
//! that never ends, a list naming a tool twice, results too large to read, a tool that never
//! answers, garbage before the handshake. Each is bounded and reported for what it is, and the
//! rest of the client keeps working.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use serde_json::json;
use tool_core::{
    JsonObject, ToolRegistry,
    mcp::{McpClient, McpClientError, McpServerConfig, McpStatus, ReconnectPolicy},
};

use crate::{
    mcp_client::{args, eventually, start_python_http},
    mcp_python::python,
};

/// How long any wait for an asynchronous change may take before the test fails.
const LIMIT: Duration = Duration::from_secs(30);

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp_python/misbehaving_server.py")
}

/// The misbehaving server over stdio, its tools prefixed `h`.
fn stdio_server(python: &Path, extra: &[&str]) -> McpServerConfig {
    let mut argv = vec![script().to_string_lossy().into_owned(), "stdio".to_owned()];
    argv.extend(extra.iter().map(|arg| (*arg).to_owned()));
    McpServerConfig::command(python.to_string_lossy(), argv)
        .prefix("h")
        .connect_timeout(LIMIT)
        .reconnect(ReconnectPolicy::never())
}

/// How many `tools/list` requests the server has answered.
async fn list_requests(client: &McpClient) -> usize {
    client
        .call("h_list_requests", JsonObject::new())
        .await
        .unwrap()
        .parse()
        .unwrap()
}

/// Asks the server how many `tools/list` requests it has answered until they are at least
/// `count` (or a thousand questions were asked), and returns the last answer.
async fn list_requests_reaching(client: &McpClient, count: usize) -> usize {
    let mut seen = 0;
    for _ in 0..1000 {
        seen = list_requests(client).await;
        if seen >= count {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_cursor_after_list_changed_is_bounded_and_the_old_tools_stay() {
    let Some(python) = python() else { return };
    let client = McpClient::connect(stdio_server(python, &[]).max_tools(20))
        .await
        .unwrap();
    let registry = Arc::new(ToolRegistry::new());
    let _registration = client.register_into(&registry).await.unwrap();
    let before = client.tools();
    assert_eq!(list_requests(&client).await, 1);

    assert_eq!(
        client.call("h_endless", JsonObject::new()).await.unwrap(),
        "endless"
    );
    // The re-list reads at most `max_tools + 1` pages: the first (with every tool), then 20
    // empty ones, then gives up.
    assert_eq!(list_requests_reaching(&client, 22).await, 22);
    // More round trips give a runaway loop every chance to show itself.
    for _ in 0..20 {
        assert_eq!(
            client
                .call("h_echo", args(json!({"text": "still here"})))
                .await,
            Ok("still here".to_owned())
        );
    }
    assert_eq!(list_requests(&client).await, 22);
    // The old list stays, and works.
    assert_eq!(client.tools(), before);
    assert_eq!(
        registry
            .execute("h_echo", args(json!({"text": "old tools"})))
            .await,
        "old tools"
    );
    assert!(matches!(client.status(), McpStatus::Connected { .. }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_stops_a_re_list_in_progress() {
    let Some(python) = python() else { return };
    // Limits far away: only `close` can stop this re-list.
    let client = McpClient::connect(stdio_server(python, &[]).max_tools(1_000_000))
        .await
        .unwrap();
    assert_eq!(
        client.call("h_endless", JsonObject::new()).await.unwrap(),
        "endless"
    );
    let seen = list_requests_reaching(&client, 51).await;
    assert!(seen > 50, "{seen}");
    client.close().await;
    assert_eq!(client.status(), McpStatus::Closed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_the_application_disabled_stays_disabled_when_the_server_redescribes_it() {
    let Some(python) = python() else { return };
    let client = McpClient::connect(stdio_server(python, &[])).await.unwrap();
    let registry = Arc::new(ToolRegistry::new());
    let registration = client.register_into(&registry).await.unwrap();
    assert!(registry.disable("h_echo"));
    assert!(registry.is_tool_enabled("h_big"));

    assert_eq!(
        registry
            .execute("h_describe", args(json!({"text": "Say it again."})))
            .await,
        "described"
    );
    assert!(
        eventually(|| registry.get("h_echo").is_some_and(|tool| &*tool
            .get_schema()
            .function
            .description
            == "Say it again."))
        .await
    );
    assert!(!registry.is_tool_enabled("h_echo"));
    assert!(registry.is_tool_enabled("h_big"));
    assert!(registration.tool_names().contains(&"h_echo".to_owned()));
    // Enabled again by the application, it is the new definition that runs.
    assert!(registry.enable("h_echo"));
    assert_eq!(
        registry
            .execute("h_echo", args(json!({"text": "again"})))
            .await,
        "again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_listed_twice_is_one_tool_with_the_first_definition() {
    let Some(python) = python() else { return };
    let client = McpClient::connect(stdio_server(python, &[])).await.unwrap();
    let registry = Arc::new(ToolRegistry::new());
    let registration = client.register_into(&registry).await.unwrap();

    let dups: Vec<_> = client
        .tools()
        .into_iter()
        .filter(|tool| tool.remote_name == "dup")
        .collect();
    assert_eq!(dups.len(), 1, "{dups:?}");
    assert_eq!(dups[0].local_name, "h_dup");
    assert_eq!(
        dups[0].definition.function.parameters["required"],
        json!(["a"])
    );
    assert!(!registry.has_tool("h_dup_2"));
    assert_eq!(
        registration
            .tool_names()
            .iter()
            .filter(|name| name.starts_with("h_dup"))
            .count(),
        1
    );
    assert_eq!(
        registry.execute("h_dup", args(json!({"a": "x"}))).await,
        "dup a=x"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_too_large_for_stdio_is_an_error_at_once_and_the_connection_stays() {
    let Some(python) = python() else { return };
    let client = McpClient::connect(stdio_server(python, &[])).await.unwrap();
    let size = 20 * 1024 * 1024;
    let answer = tokio::time::timeout(LIMIT, client.call("h_big", args(json!({ "size": size }))))
        .await
        .expect("the call answers");
    let message = answer.unwrap_err().to_string();
    let prefix = "the answer of the MCP server 'h' was ";
    let suffix = " bytes, over the limit of 16777216 bytes";
    assert!(
        message.starts_with(prefix) && message.ends_with(suffix),
        "{message}"
    );
    let bytes: usize = message[prefix.len()..message.len() - suffix.len()]
        .parse()
        .unwrap();
    assert!(bytes > size, "{bytes}");
    // The connection goes on.
    assert_eq!(
        client.call("h_echo", args(json!({"text": "after"}))).await,
        Ok("after".to_owned())
    );
    assert!(matches!(client.status(), McpStatus::Connected { .. }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_too_large_for_http_is_reported_as_too_large() {
    let Some(python) = python() else { return };
    let server = start_python_http(python, &script(), &["http"]);
    let client = McpClient::connect(
        McpServerConfig::url(&server.url)
            .prefix("h")
            .connect_timeout(LIMIT),
    )
    .await
    .unwrap();
    let answer = tokio::time::timeout(
        LIMIT,
        client.call("h_big", args(json!({ "size": 20 * 1024 * 1024 }))),
    )
    .await
    .expect("the call answers");
    let message = answer.unwrap_err().to_string();
    assert!(
        message
            .starts_with("the answer of the MCP server 'h' was over the limit of 16777216 bytes"),
        "{message}"
    );
    assert!(!message.contains("connection was lost"), "{message}");
    assert_eq!(
        client.call("h_echo", args(json!({"text": "after"}))).await,
        Ok("after".to_owned())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_results_are_cut_with_a_note_for_the_model() {
    let Some(python) = python() else { return };
    let client = McpClient::connect(stdio_server(python, &[]).max_result_size(1000))
        .await
        .unwrap();
    let registry = Arc::new(ToolRegistry::new());
    let _registration = client.register_into(&registry).await.unwrap();
    let text = registry.execute("h_big", args(json!({"size": 5000}))).await;
    assert_eq!(
        text,
        format!(
            "{}\n[truncated: the result is 5000 bytes; only the first 1000 are shown]",
            "x".repeat(1000)
        )
    );
    // Short ones pass whole.
    assert_eq!(
        registry.execute("h_big", args(json!({"size": 1000}))).await,
        "x".repeat(1000)
    );

    // The default limit.
    let client = McpClient::connect(stdio_server(python, &[])).await.unwrap();
    let size = McpServerConfig::DEFAULT_MAX_RESULT_SIZE + 1;
    let text = client
        .call("h_big", args(json!({ "size": size })))
        .await
        .unwrap();
    assert!(
        text.ends_with(&format!(
            "x\n[truncated: the result is {size} bytes; only the first {} are shown]",
            McpServerConfig::DEFAULT_MAX_RESULT_SIZE
        )),
        "{}",
        &text[text.len() - 100..]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_longer_than_max_tools_is_cut_to_its_first_tools() {
    let Some(python) = python() else { return };
    let client = McpClient::connect(stdio_server(python, &[]).max_tools(12))
        .await
        .unwrap();
    let registry = Arc::new(ToolRegistry::new());
    let registration = client.register_into(&registry).await.unwrap();
    assert_eq!(
        registry.execute("h_many", args(json!({"count": 30}))).await,
        "30 tools"
    );
    assert!(eventually(|| registry.has_tool("h_t_000")).await);
    // The server's 8 tools, then the first 4 numbered ones.
    assert_eq!(registry.len(), 12, "{:?}", registry.get_tool_names());
    assert_eq!(registration.tool_names().len(), 12);
    assert!(registry.has_tool("h_t_003"));
    assert!(!registry.has_tool("h_t_004"));
    assert_eq!(McpServerConfig::DEFAULT_MAX_TOOLS, 256);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_tool_is_cut_off_by_the_call_timeout() {
    let Some(python) = python() else { return };
    let client =
        McpClient::connect(stdio_server(python, &[]).call_timeout(Duration::from_millis(300)))
            .await
            .unwrap();
    let answer = tokio::time::timeout(LIMIT, client.call("h_silent", JsonObject::new()))
        .await
        .expect("the call answers");
    assert_eq!(
        answer.unwrap_err().to_string(),
        "the MCP server 'h' did not answer within 300ms"
    );
    // The connection goes on.
    assert_eq!(
        client.call("h_echo", args(json!({"text": "next"}))).await,
        Ok("next".to_owned())
    );
}

/// Without a configured timeout a call still ends: the default one, 60 s, counted on a paused
/// clock that jumps ahead while everything waits for the silent server.
#[tokio::test]
async fn the_default_call_timeout_ends_a_silent_call() {
    let Some(python) = python() else { return };
    let client = McpClient::connect(stdio_server(python, &[])).await.unwrap();
    let registry = Arc::new(ToolRegistry::new());
    let _registration = client.register_into(&registry).await.unwrap();
    assert_eq!(
        McpServerConfig::DEFAULT_CALL_TIMEOUT,
        Duration::from_secs(60)
    );
    tokio::time::pause();
    let answer = tokio::time::timeout(
        Duration::from_secs(600),
        registry.execute("h_silent", JsonObject::new()),
    )
    .await
    .expect("the default timeout ends the call");
    assert_eq!(
        answer,
        "Error executing h_silent: the MCP server 'h' did not answer within 60s"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_before_the_handshake_is_reported_as_what_it_is() {
    let Some(python) = python() else { return };
    let error = McpClient::connect(stdio_server(python, &["--garbage"]))
        .await
        .unwrap_err();
    let McpClientError::Handshake { reason, .. } = &error else {
        panic!("{error}")
    };
    // Then the server's exit status and last stderr line, when it exits within a moment.
    assert!(
        reason.starts_with(
            "the server sent something other than the answer to `initialize`: conflict \
             initialized response id: expected 0, got stray"
        ),
        "{reason}"
    );
}
